/**
 * `singleton` on enqueue (docs/api.md "Singleton"): `skip` enqueues nothing while the queue holds a
 * job and names that job; `cancel-running` asks the queue's running jobs to cancel, as the cancel
 * route does, and queues the new job behind them. Neither is part of the spec.
 */
import { describe, expect, it } from "vitest";
import type { AbortError } from "../../../src/durable/attempts/executors.js";
import { setup as dispatchSetup } from "../../helpers/dispatch.js";
import { gate } from "../../helpers/executors.js";
import { claimOne, enqueue, refusal, rows, setup, value } from "../../helpers/lane.js";

describe("singleton skip", () => {
  it("enqueues nothing while the queue holds a queued job, and names it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    const answer = value(await stub.enqueue({ id: "b", kind: "k", queue: "q", singleton: "skip" }));
    expect(answer.status).toBe("skipped");
    expect(answer.job).toMatchObject({ id: "a", state: "queued", queue: "q" });
    expect((await rows(stub)).map((r) => r.id)).toEqual(["a"]);
    expect(value(await stub.info()).stats.enqueued).toBe(1);
  });

  it("names the job that started first among the running, before any queued one", async () => {
    const { stub, clock } = await setup();
    value(await stub.putQueue("q", { concurrency: 2 }));
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q", priority: 5 });
    await enqueue(stub, { id: "c", queue: "q" });
    expect((await claimOne(stub)).id).toBe("b");
    clock.advance(10);
    expect((await claimOne(stub)).id).toBe("a");
    const answer = value(await stub.enqueue({ kind: "k", queue: "q", singleton: "skip" }));
    expect(answer).toMatchObject({ status: "skipped", job: { id: "b", state: "running" } });
  });

  it("names the next job the queue would start when none runs: priority, then enqueue order", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q", delayMs: 5_000 });
    await enqueue(stub, { id: "b", queue: "q", priority: 2, delayMs: 9_000 });
    const answer = value(await stub.enqueue({ kind: "k", queue: "q", singleton: "skip" }));
    expect(answer).toMatchObject({ status: "skipped", job: { id: "b" } });
  });

  it("names the oldest blocked job when the queue holds only blocked jobs", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "dep", delayMs: 60_000 });
    await enqueue(stub, { id: "x", queue: "q", dependsOn: [{ id: "dep" }] });
    await enqueue(stub, { id: "y", queue: "q", dependsOn: [{ id: "dep" }], priority: 9 });
    const answer = value(await stub.enqueue({ kind: "k", queue: "q", singleton: "skip" }));
    expect(answer).toMatchObject({ status: "skipped", job: { id: "x", state: "blocked" } });
  });

  it("takes the job when every job of the queue has settled, or the queue has none", async () => {
    const { stub } = await setup();
    const first = value(await stub.enqueue({ id: "a", kind: "k", queue: "q", singleton: "skip" }));
    expect(first.status).toBe("queued");
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token }));
    const again = value(await stub.enqueue({ id: "b", kind: "k", queue: "q", singleton: "skip" }));
    expect(again).toMatchObject({ status: "queued", job: { id: "b", state: "queued" } });
    expect(value(await stub.info()).stats.enqueued).toBe(2);
  });

  it("answers an id that exists as without singleton: duplicate, or a conflict", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    const again = value(await stub.enqueue({ id: "a", kind: "k", queue: "q", singleton: "skip" }));
    expect(again).toMatchObject({ status: "duplicate", job: { id: "a" } });
    refusal(await stub.enqueue({ id: "a", kind: "other", queue: "q", singleton: "skip" }), "job_conflict");
  });

  it("skips other queues' jobs not", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "other" });
    await enqueue(stub, { id: "b" });
    expect(value(await stub.enqueue({ id: "c", kind: "k", queue: "q", singleton: "skip" })).status).toBe("queued");
  });
});

describe("singleton cancel-running", () => {
  it("asks the running job to cancel, as the cancel route does, and queues the new job behind it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q" });
    const { lease } = await claimOne(stub);
    const answer = value(await stub.enqueue({ id: "c", kind: "k", queue: "q", singleton: "cancel-running" }));
    expect(answer.status).toBe("queued");
    expect(answer.job).toMatchObject({ id: "c", state: "queued" });
    expect((answer as { cancelling?: string[] }).cancelling).toEqual(["a"]);
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "running", cancelRequested: true });
    expect(value(await stub.getJob("b")).state).toBe("queued");
    // The lease holder hears of it when it next speaks; the queue then goes on in its order.
    refusal(await stub.complete("a", { token: lease.token }), "job_cancelled");
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "cancelled" });
    expect((await claimOne(stub)).id).toBe("b");
  });

  it("answers cancelling [] when nothing of the queue runs", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    const answer = value(await stub.enqueue({ id: "b", kind: "k", queue: "q", singleton: "cancel-running" }));
    expect(answer).toMatchObject({ status: "queued", cancelling: [] });
    expect(value(await stub.getJob("a")).cancelRequested).toBe(false);
  });

  it("cancels nothing for an id that exists: a duplicate", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await claimOne(stub);
    const answer = value(await stub.enqueue({ id: "a", kind: "k", queue: "q", singleton: "cancel-running" }));
    expect(answer.status).toBe("duplicate");
    expect(value(await stub.getJob("a")).cancelRequested).toBe(false);
  });
});

describe("singleton refused", () => {
  it("needs a queue: 400 naming singleton, nothing enqueued", async () => {
    const { stub } = await setup();
    const refused = refusal(await stub.enqueue({ kind: "k", singleton: "skip" }), "invalid_request");
    expect(JSON.stringify(refused.details)).toContain("singleton");
    refusal(await stub.enqueue({ kind: "k", queue: null, singleton: "cancel-running" }), "invalid_request");
    expect(await rows(stub)).toEqual([]);
  });

  it("refuses debounce beside it, and an unknown mode", async () => {
    const { stub } = await setup();
    const refused = refusal(await stub.enqueue({ kind: "k", queue: "q", singleton: "skip", debounce: { key: "d", delayMs: 10 } }), "invalid_request");
    expect(JSON.stringify(refused.details)).toContain("singleton");
    refusal(await stub.enqueue({ kind: "k", queue: "q", singleton: "replace" }), "invalid_request");
    expect(await rows(stub)).toEqual([]);
  });
});

describe("singleton in a batch", () => {
  it("applies items in order, one enqueue after another: a skipped item names the existing job", async () => {
    const { stub } = await setup();
    const answer = value(await stub.enqueueBatch({
      jobs: [
        { id: "a", kind: "k", queue: "q", singleton: "skip" },
        { id: "b", kind: "k", queue: "q", singleton: "skip" },
        { id: "c", kind: "k", queue: "r" },
        { id: "d", kind: "k", queue: "r", singleton: "skip" },
      ],
    }));
    expect(answer.results).toEqual([
      { id: "a", status: "queued" },
      { id: "a", status: "skipped" },
      { id: "c", status: "queued" },
      { id: "c", status: "skipped" },
    ]);
    expect((await rows(stub)).map((r) => r.id)).toEqual(["a", "c"]);
    expect(value(await stub.info()).stats.enqueued).toBe(2);
  });

  it("cancels the running job of a queue for a cancel-running item", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await claimOne(stub);
    const answer = value(await stub.enqueueBatch({ jobs: [{ id: "b", kind: "k", queue: "q", singleton: "cancel-running" }] }));
    expect(answer.results).toEqual([{ id: "b", status: "queued" }]);
    expect(value(await stub.getJob("a")).cancelRequested).toBe(true);
  });
});

describe("singleton cancel-running in process", () => {
  it("fires the running attempt's AbortSignal, and the new job starts once the cancelled one has settled", async () => {
    const { enqueue: add, settled, inside, waitFor } = await dispatchSetup();
    const g = gate();
    const first = await add({ id: "a", kind: "test.gate", queue: "q", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const next = await add({ id: "b", kind: "test.gate", queue: "q", payload: { gate: g.key }, singleton: "cancel-running" });
    expect(next.state).toBe("queued");
    expect(attempt.signal.aborted).toBe(true);
    expect((attempt.signal.reason as AbortError).abortCause).toBe("cancelled");
    expect((await settled(first.id)).outcome).toBe("cancelled");
    await waitFor("b", (e) => e.to === "running");
    expect((await inside(() => g.started(2))).attempt).toBe(1);
  });
});

describe("singleton in a group commit", () => {
  it("answers each caller as its own enqueue would: the later one skipped", async () => {
    const { stub } = await setup();
    const texts = ["a", "b"].map((id) => JSON.stringify({ id, kind: "k", queue: "q", singleton: "skip" }));
    const answers = value(await stub.enqueueGroup(texts)).map((text) => JSON.parse(text) as { ok: boolean; value: { status: string; job?: { id: string } } });
    expect(answers.map((a) => a.value.status)).toEqual(["queued", "skipped"]);
    expect(answers[1]!.value.job!.id).toBe("a");
    expect((await rows(stub)).map((r) => r.id)).toEqual(["a"]);
  });
});

describe("singleton with dependencies", () => {
  it("skips before registering anything, and cancel-running writes the blocked job with the cancels", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "dep", delayMs: 60_000 });
    await enqueue(stub, { id: "a", queue: "q" });
    const skipped = value(await stub.enqueue({ id: "b", kind: "k", queue: "q", dependsOn: [{ id: "dep" }], singleton: "skip" }));
    expect(skipped).toMatchObject({ status: "skipped", job: { id: "a" } });
    await claimOne(stub);
    const queued = value(await stub.enqueue({ id: "c", kind: "k", queue: "q", dependsOn: [{ id: "dep" }], singleton: "cancel-running" }));
    expect(queued).toMatchObject({ status: "queued", job: { id: "c", state: "blocked" }, cancelling: ["a"] });
    expect(value(await stub.getJob("a")).cancelRequested).toBe(true);
    refusal(await stub.enqueue({ id: "d", kind: "k", queue: "q", dependsOn: [{ id: "missing" }], singleton: "cancel-running" }), "dependency_not_found");
    expect((await rows(stub)).map((r) => r.id)).toEqual(["dep", "a", "c"]);
  });
});
