/**
 * Queues as an operator sees them (docs/api.md "Queues"): who holds a queue — a completing job
 * holds it and is reported `running` — what runs next, how many wait, and purging the queued ones.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { PURGE_BATCH } from "../../../src/shared/defaults.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { transitions, waitForTransition } from "../../helpers/executors.js";
import { T0, claimOne, enqueue, inject, refusal, rows, setup, value } from "../../helpers/lane.js";

describe("reading a queue", () => {
  it("is idle with no job", async () => {
    const { stub } = await setup();
    expect(value(await stub.queueInfo("q"))).toEqual({ queue: "q", head: null, queued: 0, running: 0, concurrency: 1, rateLimit: null });
  });

  it("names the queued job that runs next, due or not: highest priority, then enqueue order", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q", delayMs: 10_000 });
    await enqueue(stub, { id: "b", queue: "q", priority: 1, delayMs: 5_000 });
    await enqueue(stub, { id: "c", queue: "q", priority: 1 });
    await enqueue(stub, { id: "other", queue: "o" });
    expect(value(await stub.queueInfo("q"))).toEqual({ queue: "q", head: { id: "b", state: "queued", cancelRequested: false }, queued: 3, running: 0, concurrency: 1, rateLimit: null });
  });

  it("names the running job that holds the queue, and its cancel request", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q" });
    await claimOne(stub);
    expect(value(await stub.queueInfo("q"))).toEqual({ queue: "q", head: { id: "a", state: "running", cancelRequested: false }, queued: 1, running: 1, concurrency: 1, rateLimit: null });
    value(await stub.cancel("a"));
    expect(value(await stub.queueInfo("q")).head).toEqual({ id: "a", state: "running", cancelRequested: true });
  });

  it("refuses a queue name that breaks the pattern", async () => {
    const { stub } = await setup();
    for (const bad of ["", "-x", "a/b", "x".repeat(129), 7, null]) refusal(await stub.queueInfo(bad), "invalid_request");
  });
});

describe("a completing job holds its queue", () => {
  it("is reported running, and the next job of its queue starts only once its outcome is delivered", async () => {
    const name = `hold-${crypto.randomUUID()}`;
    const clock = new ManualClock(T0);
    const stub = env.HOOK_LANE.getByName(name) as DurableObjectStub<Lane>;
    await inject(stub, clock);
    // The hook hangs on its first delivery: "first" stays completing.
    value(await stub.enqueue({ id: "first", kind: "demo.echo", queue: "q", payload: { hook: "hang-once" } }));
    await runInDurableObject(stub, () => waitForTransition("first", (e) => e.lane === name && e.to === "completing"));
    value(await stub.enqueue({ id: "second", kind: "demo.echo", queue: "q", payload: {} }));
    value(await stub.enqueue({ id: "free", kind: "demo.echo", payload: {} }));
    await runInDurableObject(stub, () => waitForTransition("free", (e) => e.lane === name && e.to === "settled"));
    expect(value(await stub.getJob("second")).state).toBe("queued");
    expect(value(await stub.queueInfo("q"))).toEqual({ queue: "q", head: { id: "first", state: "running", cancelRequested: false }, queued: 1, running: 1, concurrency: 1, rateLimit: null });

    // A restart delivers "first" again (the hook returns this time); only then does "second" start.
    await expect(runInDurableObject(stub, (_l, state) => state.abort("restart"))).rejects.toThrow();
    const after = env.HOOK_LANE.getByName(name) as DurableObjectStub<Lane>;
    await inject(after, clock);
    await runDurableObjectAlarm(after);
    await runInDurableObject(after, () => waitForTransition("second", (e) => e.lane === name && e.to === "settled"));
    const order = transitions().filter((e) => e.lane === name && ["first", "second"].includes(e.jobId)).map((e) => `${e.jobId}:${e.to}`);
    expect(order.indexOf("first:settled")).toBeLessThan(order.indexOf("second:running"));
    expect(value(await after.queueInfo("q"))).toEqual({ queue: "q", head: null, queued: 0, running: 0, concurrency: 1, rateLimit: null });
  });
});

describe("purging a queue", () => {
  it("deletes the queue's queued jobs and leaves its running head, other queues and their counts alone", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "head", queue: "q" });
    const held = await claimOne(stub);
    for (const id of ["q1", "q2"]) await enqueue(stub, { id, queue: "q" });
    await enqueue(stub, { id: "o1", queue: "o" });
    await enqueue(stub, { id: "free" });
    expect(value(await stub.purgeQueue("q"))).toEqual({ purged: 2 });
    expect((await rows(stub)).map((r) => r.id)).toEqual(["head", "o1", "free"]);
    expect(value(await stub.info()).counts).toMatchObject({ queued: 2, running: 1 });
    expect(value(await stub.queueInfo("q"))).toEqual({ queue: "q", head: { id: "head", state: "running", cancelRequested: false }, queued: 0, running: 1, concurrency: 1, rateLimit: null });
    value(await stub.complete("head", { token: held.lease.token }));
    expect(value(await stub.purgeQueue("nobody"))).toEqual({ purged: 0 });
  });

  it("purges a queue longer than one batch", async () => {
    const { stub } = await setup();
    const n = 2 * PURGE_BATCH + 7;
    for (let from = 0; from < n; from += 1000) {
      const jobs = Array.from({ length: Math.min(1000, n - from) }, (_, i) => ({ id: `j${from + i}`, kind: "k", queue: "long" }));
      value(await stub.enqueueBatch({ jobs }));
    }
    expect(value(await stub.purgeQueue("long"))).toEqual({ purged: n });
    expect(value(await stub.info()).counts.queued).toBe(0);
  });

  it("refuses a queue name that breaks the pattern, changing nothing", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    for (const bad of ["", "../q", "q q", 1]) refusal(await stub.purgeQueue(bad), "invalid_request");
    expect(await rows(stub)).toHaveLength(1);
  });
});
