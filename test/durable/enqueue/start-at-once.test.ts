/**
 * A due job of an in-process kind, outside any queue, enqueued while a slot is free and no
 * due job waits, is inserted running and its executor started in the enqueue's own turn — and never
 * when that would let it pass a job that waits.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { unwrap } from "../../../src/shared/errors.js";
import type { EnqueueAnswer } from "../../../src/shared/answers.js";
import { setup, START } from "../../helpers/dispatch.js";
import { gate, transitions, type Gate } from "../../helpers/executors.js";
import { alarmAt, row, wake } from "../../helpers/lane.js";

/** Enqueues inside the lane and tells whether the executor had started before the enqueue answered. */
async function enqueueWatching(stub: DurableObjectStub<Lane>, g: Gate, request: Record<string, unknown> = {}): Promise<{ answer: EnqueueAnswer; startedInTurn: boolean }> {
  return runInDurableObject(stub, async (lane: Lane) => {
    const before = g.attempts.length;
    const pending = lane.enqueue({ kind: "test.gate", payload: { gate: g.key }, ...request });
    // Nothing has awaited yet: only a start in the enqueue's own synchronous stretch is seen here.
    const startedInTurn = g.attempts.length > before;
    return { answer: unwrap(await pending), startedInTurn };
  });
}

describe("a job started in its enqueue's turn", () => {
  it("is inserted running with its first lease, counted claimed, seen queued then running, and completes", async () => {
    const { lane, settled, inside } = await setup();
    const g = gate();
    const { answer, startedInTurn } = await enqueueWatching(lane, g);
    expect(startedInTurn).toBe(true);
    expect(answer.status).toBe("queued");
    // Answered as the request made it (README): what was enqueued, before its attempt.
    expect(answer.job).toMatchObject({ state: "queued", attempts: 0, generation: 0, lease: null });
    const stored = (await row(lane, answer.job.id))!;
    expect(stored).toMatchObject({ state: "running", attempts: 1, generation: 1, lease_holder: "lane", claimed_at: START });
    expect(stored.lease_until).toBeGreaterThan(START);
    const info = unwrap(await lane.info());
    expect(info.counts.running).toBe(1);
    expect(info.stats).toMatchObject({ enqueued: 1, claimed: 1 });
    expect(transitions(answer.job.id).map((t) => [t.from, t.to])).toEqual([[null, "queued"], ["queued", "running"]]);
    await wake(lane); // the stored alarm is no later than the computed wake (the lease's expiry)
    await inside(async () => (await g.started()).open({ done: true }));
    expect((await settled(answer.job.id)).result).toEqual({ done: true });
    // Its completion left nothing waiting: the next one starts at once as well.
    const next = gate();
    expect((await enqueueWatching(lane, next)).startedInTurn).toBe(true);
    await inside(async () => (await next.started()).open());
  });

  it("never lets a job pass one that waits: at concurrency 1, jobs start in enqueue order", async () => {
    const { lane, settled, inside } = await setup({ concurrency: 1 });
    const gates = [gate(), gate(), gate(), gate()];
    const answers: { answer: EnqueueAnswer; startedInTurn: boolean }[] = [];
    for (const g of gates) answers.push(await enqueueWatching(lane, g));
    expect(answers.map((a) => a.startedInTurn)).toEqual([true, false, false, false]);
    for (let i = 0; i < gates.length; i++) {
      await inside(async () => (await gates[i]!.started()).open());
      await settled(answers[i]!.answer.job.id);
      if (i === 1) {
        // enqueued while two wait: it waits behind them, though the completion just freed a slot
        const late = gate();
        const enqueued = await enqueueWatching(lane, late);
        expect(enqueued.startedInTurn).toBe(false);
        gates.push(late);
        answers.push(enqueued);
      }
    }
    const ids = new Set(answers.map((a) => a.answer.job.id));
    const order = transitions().filter((t) => t.to === "running" && ids.has(t.jobId)).map((t) => t.jobId);
    expect(order).toEqual(answers.map((a) => a.answer.job.id));
  });

  it("lets a queued job that fell due since the dispatcher last looked go first", async () => {
    const { lane, clock, get, inside } = await setup({ concurrency: 1 });
    const early = gate();
    const delayed = await enqueueWatching(lane, early, { delayMs: 1000 });
    expect(delayed.startedInTurn).toBe(false);
    clock.set(START + 1000); // due now; its alarm has not run
    const later = gate();
    const { answer, startedInTurn } = await enqueueWatching(lane, later);
    expect(startedInTurn).toBe(false);
    await inside(() => early.started()); // the flush after the enqueue claimed the one due first
    expect((await get(delayed.answer.job.id)).state).toBe("running");
    expect((await get(answer.job.id)).state).toBe("queued");
    await inside(async () => (await early.started()).open());
    await inside(async () => (await later.started()).open());
  });

  it("is not for a job in a queue, a delayed job, or a paused lane: those are enqueued queued", async () => {
    const { lane, get, inside } = await setup();
    const inQueue = gate();
    const queued = await enqueueWatching(lane, inQueue, { queue: "q" });
    expect(queued.startedInTurn).toBe(false);
    await inside(async () => (await inQueue.started()).open()); // started by the flush right after, as before
    const delayed = await enqueueWatching(lane, gate(), { delayMs: 5000 });
    expect(delayed.startedInTurn).toBe(false);
    expect((await get(delayed.answer.job.id)).state).toBe("queued");
    unwrap(await lane.configure({ paused: true }));
    const paused = await enqueueWatching(lane, gate());
    expect(paused.startedInTurn).toBe(false);
    expect((await get(paused.answer.job.id)).state).toBe("queued");
  });

  it("answers the same id and spec again as a duplicate, and a different spec as a conflict", async () => {
    const { lane, inside } = await setup();
    const g = gate();
    const first = await enqueueWatching(lane, g, { id: "once" });
    expect(first.startedInTurn).toBe(true);
    const again = unwrap(await lane.enqueue({ id: "once", kind: "test.gate", payload: { gate: g.key } }));
    expect(again.status).toBe("duplicate");
    expect(again.job.state).toBe("running");
    const other = await lane.enqueue({ id: "once", kind: "test.gate", payload: { gate: "another" } });
    expect(other.ok ? null : other.error.code).toBe("job_conflict");
    expect(unwrap(await lane.info()).stats).toMatchObject({ enqueued: 1, claimed: 1 });
    await inside(async () => (await g.started()).open());
  });

  it("re-arms after a completion that frees the slot of a full lane: a delayed job's runAt becomes the wake", async () => {
    const { lane, enqueue, settled, inside } = await setup({ concurrency: 1 });
    await settled((await enqueue({ kind: "demo.echo", payload: {} })).id); // a settled job: the retention term is there
    const running = gate();
    const first = await enqueueWatching(lane, running);
    expect(first.startedInTurn).toBe(true);
    const delayed = await enqueue({ kind: "demo.echo", payload: {}, delayMs: 5000 });
    // Full: the delayed head is no term of the wake; the alarm is the running lease's expiry.
    expect(await alarmAt(lane)).toBe((await row(lane, first.answer.job.id))!.lease_until);
    await inside(async () => (await running.started()).open());
    await settled(first.answer.job.id);
    expect(await wake(lane)).toBe(delayed.runAt);
    expect(await alarmAt(lane)).toBe(delayed.runAt);
  });

  it("re-arms for a batch whose due job completes before the batch's own re-arm: its delayed job's runAt becomes the wake", async () => {
    const { lane, enqueue, settled } = await setup();
    await settled((await enqueue({ kind: "demo.echo", payload: {} })).id); // a settled job: the retention term is there
    // The due job starts in the batch's flush and completes at once: its flush, freeing a slot, comes
    // before the batch's re-arm, which must not be lost to it.
    const { results } = unwrap(await lane.enqueueBatch({ jobs: [{ kind: "demo.echo", payload: {} }, { kind: "test.gate", payload: { gate: gate().key }, delayMs: 100 }] }));
    await settled(results[0]!.id);
    expect(await wake(lane)).toBe(START + 100);
    expect(await alarmAt(lane)).toBe(START + 100);
  });
});
