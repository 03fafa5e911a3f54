import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { MAX_HELD_READS } from "../../../src/shared/defaults.js";
import type { Result } from "../../../src/shared/errors.js";
import type { Job } from "../../../src/shared/job.js";
import { claimOne, enqueue, inject, refusal, setup, T0, value, type LaneStub } from "../../helpers/lane.js";
import { ManualClock } from "../../../src/shared/clock.js";

type Held = { job: Job; busy: boolean };

/** A held read, and whether it has been answered yet. */
function hold(stub: LaneStub, id: string, waitMs: number) {
  const state = { answered: false };
  const answer: Promise<Result<Held>> = stub.awaitJob(id, waitMs).then((r: Result<Held>) => {
    state.answered = true;
    return r;
  });
  return { answer, state };
}

/** True while the read is still held after two full round trips to the lane. */
async function stillHeld(stub: LaneStub, held: { state: { answered: boolean } }): Promise<boolean> {
  await stub.info();
  await stub.info();
  return !held.state.answered;
}

/** How many listeners the lane's transition log has, and how many reads it holds. */
function listening(stub: LaneStub): Promise<{ listeners: number; held: number }> {
  return runInDurableObject(stub, (lane: Lane) => {
    const inner = lane as unknown as { parts: { transitions: { listeners: Set<unknown> } }; rpc: { jobWaits: { held: { size: number } } } };
    return { listeners: inner.parts.transitions.listeners.size, held: inner.rpc.jobWaits.held.size };
  });
}

/** Completes job `id` through a pull consumer's lease. */
async function complete(stub: LaneStub, id: string, result: unknown = { done: id }): Promise<void> {
  const { lease } = await claimOne(stub);
  value(await stub.complete(id, { token: lease.token, result }));
}

describe("a held read of a job", () => {
  it("is answered the moment its job settles, with the settled job", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const held = hold(stub, "a", 20_000);
    expect(await stillHeld(stub, held)).toBe(true);
    await complete(stub, "a", { n: 1 });
    const answer = value(await held.answer);
    expect(answer.busy).toBe(false);
    expect(answer.job).toMatchObject({ id: "a", state: "settled", outcome: "completed", result: { n: 1 } });
  });

  it("is answered when waitMs passes, with the job as it stands (unsettled is no error)", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await claimOne(stub);
    const started = Date.now();
    const answer = value(await hold(stub, "a", 150).answer);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(answer.job).toMatchObject({ id: "a", state: "running", outcome: null });
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });

  it("is answered at once when the job is already settled, whatever waitMs", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await complete(stub, "a");
    const answer = value(await stub.awaitJob("a", 30_000));
    expect(answer.job).toMatchObject({ state: "settled", outcome: "completed" });
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });

  it("is answered at once with waitMs 0, the job as it is", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    expect(value(await stub.awaitJob("a", 0)).job).toMatchObject({ id: "a", state: "queued" });
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });

  it("of an unknown job is job_not_found at once", async () => {
    const { stub } = await setup();
    refusal(await stub.awaitJob("nope", 30_000), "job_not_found");
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });

  it.each([
    ["waitMs above 30000", "a", 30_001],
    ["a negative waitMs", "a", -1],
    ["a fractional waitMs", "a", 1.5],
    ["waitMs as text", "a", "10"],
    ["no waitMs", "a", undefined],
    ["a bad id", "not an id!", 10],
  ])("refuses %s: invalid_request, nothing held", async (_name, id, waitMs) => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    refusal(await stub.awaitJob(id, waitMs), "invalid_request");
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });

  it("is not answered by another job's settling", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", priority: 5 });
    const held = hold(stub, "a", 20_000);
    await complete(stub, "b");
    expect(await stillHeld(stub, held)).toBe(true);
    await complete(stub, "a");
    expect(value(await held.answer).job).toMatchObject({ id: "a", state: "settled" });
  });

  it("is answered by every way a job settles: a cancel", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const held = hold(stub, "a", 20_000);
    expect(await stillHeld(stub, held)).toBe(true);
    value(await stub.cancel("a"));
    expect(value(await held.answer).job).toMatchObject({ state: "settled", outcome: "cancelled" });
  });

  it("by the last failure of an attempt", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 1 });
    const held = hold(stub, "a", 20_000);
    const { lease } = await claimOne(stub);
    expect(await stillHeld(stub, held)).toBe(true);
    value(await stub.fail("a", { token: lease.token, error: "boom" }));
    expect(value(await held.answer).job).toMatchObject({ state: "settled", outcome: "failed", error: "boom" });
  });

  it("by an in-process executor's completion", async () => {
    const stub = env.LANE.getByName(crypto.randomUUID());
    await inject(stub, new ManualClock(T0));
    value(await stub.enqueue({ id: "a", kind: "demo.sleep", payload: { ms: 200 } }));
    const held = hold(stub, "a", 20_000);
    expect(await stillHeld(stub, held)).toBe(true);
    expect(value(await held.answer).job).toMatchObject({ state: "settled", outcome: "completed", result: { slept: 200 } });
  });

  it("of a job deleted while held is job_not_found at its deadline", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    const held = hold(stub, "a", 150);
    expect(await stillHeld(stub, held)).toBe(true);
    value(await stub.purgeQueue("q"));
    refusal(await held.answer, "job_not_found");
  });
});

describe("many held reads", () => {
  it("1,000 on one job are all answered when it settles", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const held = Array.from({ length: 1000 }, () => hold(stub, "a", 30_000));
    expect(await stillHeld(stub, held.at(-1)!)).toBe(true);
    expect(await listening(stub)).toEqual({ listeners: 1, held: 1000 });
    await complete(stub, "a");
    const answers = await Promise.all(held.map((h) => h.answer));
    expect(answers.every((a) => a.ok && a.value.job.state === "settled" && a.value.job.outcome === "completed")).toBe(true);
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });

  it("one on each of 1,000 jobs are each answered by their own job", async () => {
    const { stub } = await setup();
    value(await stub.enqueueBatch({ jobs: Array.from({ length: 1000 }, (_, i) => ({ id: `j-${i}`, kind: "k" })) }));
    const held = Array.from({ length: 1000 }, (_, i) => hold(stub, `j-${i}`, 30_000));
    expect(await stillHeld(stub, held.at(-1)!)).toBe(true);
    value(await stub.failLane({ reason: "half" }));
    const first = await Promise.all(held.slice(0, 500).map((h) => h.answer));
    expect(first.map((a) => (a.ok ? [a.value.job.id, a.value.job.outcome] : a.error.code))).toEqual(Array.from({ length: 500 }, (_, i) => [`j-${i}`, "failed"]));
    expect(await stillHeld(stub, held.at(-1)!)).toBe(true);
    expect(await listening(stub)).toEqual({ listeners: 1, held: 500 });
    value(await stub.failLane({ reason: "the rest" }));
    const rest = await Promise.all(held.slice(500).map((h) => h.answer));
    expect(rest.every((a, i) => a.ok && a.value.job.id === `j-${500 + i}` && a.value.job.error === "the rest")).toBe(true);
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });

  it(`beyond ${MAX_HELD_READS} held reads the lane answers at once, busy, with the job as it is`, async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    // Filled from inside the object: the cap is what is tested, not thousands of RPC calls.
    const filled = runInDurableObject(stub, (lane: Lane) => {
      const inner = lane as unknown as { rpc: { jobWaits: { awaitJob(id: unknown, waitMs: unknown): Promise<Result<Held>> | Result<Held> } } };
      return Promise.all(Array.from({ length: MAX_HELD_READS }, () => inner.rpc.jobWaits.awaitJob("a", 30_000)));
    });
    await stub.info();
    expect((await listening(stub)).held).toBe(MAX_HELD_READS);
    const beyond = value(await stub.awaitJob("b", 30_000));
    expect(beyond).toMatchObject({ busy: true, job: { id: "b", state: "queued" } });
    await complete(stub, "a");
    const answers = await filled;
    expect(answers.every((a) => a.ok && a.value.job.state === "settled")).toBe(true);
  });
});

describe("a lane without held reads", () => {
  it("does not listen to its transitions, and stops once its held reads are answered", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
    const a = hold(stub, "a", 20_000);
    const b = hold(stub, "b", 100);
    expect(await stillHeld(stub, a)).toBe(true);
    expect(await listening(stub)).toEqual({ listeners: 1, held: 2 });
    expect(value(await b.answer).job).toMatchObject({ id: "b", state: "queued" });
    expect(await listening(stub)).toEqual({ listeners: 1, held: 1 });
    value(await stub.cancel("b"));
    expect(await stillHeld(stub, a)).toBe(true);
    await complete(stub, "a");
    await a.answer;
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
    // A plain enqueue, claim and complete afterwards: still nobody listening.
    await enqueue(stub, { id: "c" });
    await complete(stub, "c");
    expect(await listening(stub)).toEqual({ listeners: 0, held: 0 });
  });
});
