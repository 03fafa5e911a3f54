import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { batchExecutor } from "../../../src/durable/attempts/batch-executor.js";
import { defineLane, type Lane } from "../../../src/durable/lane.js";
import type { AbortError } from "../../../src/durable/attempts/executors.js";
import { unwrap } from "../../../src/shared/errors.js";
import type { Job } from "../../../src/shared/job.js";
import { BATCH_DUE_SQL } from "../../../src/durable/attempts/batch-statements.js";
import { batchCall, batchCalls, TEST_BATCH } from "../../helpers/batch-executors.js";
import { gate } from "../../helpers/executors.js";
import { setup, START } from "../../helpers/dispatch.js";

/** A lane with `test.batch` (size 3, waitMs 1000), and `n` jobs of it enqueued in one batch. */
async function batchLane(options: { concurrency?: number } = {}) {
  const fixture = await setup(options);
  const tag = crypto.randomUUID();
  const enqueueMany = async (n: number, extra: (i: number) => Record<string, unknown> = () => ({})): Promise<Job[]> => {
    const answer = unwrap(await fixture.lane.enqueueBatch({ jobs: Array.from({ length: n }, (_, i) => ({ kind: "test.batch", payload: { tag, i }, ...extra(i) })) }));
    return Promise.all(answer.results.map((r) => fixture.get(r.id)));
  };
  /** Call `n` of `run`, answered (or thrown) from inside the lane's I/O context, as its own executor would. */
  const call = async (n = 1) => {
    const batch = await fixture.inside(() => batchCall(tag, n));
    return {
      jobs: batch.jobs,
      answer: (answers: unknown) => fixture.inside(() => batch.answer(answers)),
      throw: (error: unknown) => fixture.inside(() => batch.throw(error)),
    };
  };
  const calls = () => batchCalls(tag);
  return { ...fixture, tag, enqueueMany, call, calls };
}

describe("batch executors in process", () => {
  it("starts size due jobs together at once, in start order, each with its own attempt", async () => {
    const { enqueueMany, call, settled } = await batchLane();
    const jobs = await enqueueMany(3, (i) => ({ priority: i === 2 ? 5 : 0 }));
    const batch = await call();
    expect(batch.jobs.map((j) => j.id)).toEqual([jobs[2]!.id, jobs[0]!.id, jobs[1]!.id]);
    expect(batch.jobs.map((j) => j.attempt)).toEqual([1, 1, 1]);
    expect(new Set(batch.jobs.map((j) => j.signal)).size).toBe(3);
    await batch.answer([{ ok: true, result: "a" }, { ok: true, result: "b" }, { ok: true }]);
    const done = await Promise.all(jobs.map((j) => settled(j.id)));
    expect(done.map((j) => [j.outcome, j.result, j.generation])).toEqual([["completed", "b", 1], ["completed", null, 1], ["completed", "a", 1]]);
  });

  it("never starts a lone due job at once: it waits waitMs for company, then the wake starts it", async () => {
    const { lane, enqueue, clock, calls, call, tag, get, settled } = await batchLane();
    const one = await enqueue({ kind: "test.batch", payload: { tag } });
    const two = await enqueue({ kind: "test.batch", payload: { tag } });
    expect((await get(one.id)).state).toBe("queued");
    expect(calls()).toHaveLength(0);
    expect(await lane.storedAlarm()).toBe(START + TEST_BATCH.waitMs);
    clock.set(START + TEST_BATCH.waitMs - 1);
    await runDurableObjectAlarm(lane);
    expect(calls()).toHaveLength(0);
    clock.set(START + TEST_BATCH.waitMs);
    await runDurableObjectAlarm(lane);
    const batch = await call();
    expect(batch.jobs.map((j) => j.id)).toEqual([one.id, two.id]);
    await batch.answer([{ ok: true }, { ok: true }]);
    expect((await settled(two.id)).outcome).toBe("completed");
  });

  it("starts a batch as soon as the size-th job is enqueued, before waitMs", async () => {
    const { enqueue, call, tag, clock } = await batchLane();
    for (let i = 0; i < 3; i++) {
      clock.advance(10);
      await enqueue({ kind: "test.batch", payload: { tag } });
    }
    expect((await call()).jobs).toHaveLength(3);
  });

  it("settles each job on its own: a failed one is retried (backoff, retryAfterMs, retry false), the others done", async () => {
    const { enqueueMany, call, settled, get, waitFor, clock } = await batchLane();
    const jobs = await enqueueMany(3, () => ({ maxAttempts: 3, backoff: { baseMs: 1000, maxMs: 1000 } }));
    const batch = await call();
    await batch.answer([{ ok: true, result: 1 }, { ok: false, error: "try later", retryAfterMs: 5000 }, { ok: false, error: "never", retry: false }]);
    expect((await settled(jobs[0]!.id)).result).toBe(1);
    const failed = await settled(jobs[2]!.id);
    expect([failed.outcome, failed.error, failed.attempts]).toEqual(["failed", "never", 1]);
    await waitFor(jobs[1]!.id, (e) => e.from === "running" && e.to === "queued");
    const retried = await get(jobs[1]!.id);
    expect([retried.state, retried.error, retried.attempts, retried.runAt]).toEqual(["queued", "try later", 1, clock.now() + 5000]);
  });

  it("fails every job of the batch with a throw's error", async () => {
    const { enqueueMany, call, get, waitFor } = await batchLane();
    const jobs = await enqueueMany(3, () => ({ maxAttempts: 2 }));
    await (await call()).throw(new Error("provider down"));
    for (const job of jobs) {
      await waitFor(job.id, (e) => e.from === "running" && e.to === "queued");
      expect(await get(job.id)).toMatchObject({ state: "queued", error: "provider down", attempts: 1 });
    }
  });

  it("fails every job when the answer is not an array of the batch's length", async () => {
    const { enqueueMany, call, settled } = await batchLane();
    const jobs = await enqueueMany(3, () => ({ maxAttempts: 1 }));
    await (await call()).answer([{ ok: true }, { ok: true }]);
    for (const job of jobs) {
      const done = await settled(job.id);
      expect(done.outcome).toBe("failed");
      expect(done.error).toBe("batch executor answered an array of 2, not an array of 3 answers");
    }
  });

  it("a cancel of one job aborts its signal alone; the others complete from the answer", async () => {
    const { lane, enqueueMany, call, settled } = await batchLane();
    const jobs = await enqueueMany(3);
    const batch = await call();
    unwrap(await lane.cancel(jobs[1]!.id));
    const cancelled = await settled(jobs[1]!.id);
    expect(cancelled.outcome).toBe("cancelled");
    expect(batch.jobs.map((j) => j.signal.aborted)).toEqual([false, true, false]);
    expect((batch.jobs[1]!.signal.reason as AbortError).abortCause).toBe("cancelled");
    await batch.answer([{ ok: true }, { ok: true }, { ok: true }]);
    expect((await settled(jobs[0]!.id)).outcome).toBe("completed");
    expect((await settled(jobs[2]!.id)).outcome).toBe("completed");
    expect((await settled(jobs[1]!.id)).outcome).toBe("cancelled");
  });

  it("times out one job on its own timeoutMs; the others run on", async () => {
    const { enqueueMany, call, settled, get } = await batchLane();
    const jobs = await enqueueMany(3, (i) => ({ maxAttempts: 1, ...(i === 0 ? { timeoutMs: 20 } : {}) }));
    const batch = await call();
    const timedOut = await settled(jobs[0]!.id);
    expect([timedOut.outcome, timedOut.error]).toEqual(["failed", "timed out after 20 ms"]);
    expect(batch.jobs.map((j) => j.signal.aborted)).toEqual([true, false, false]);
    expect((await get(jobs[1]!.id)).state).toBe("running");
    await batch.answer([{ ok: true }, { ok: true }, { ok: true }]);
    expect((await settled(jobs[2]!.id)).outcome).toBe("completed");
  });

  it("takes no more jobs than the lane's free slots", async () => {
    const { enqueueMany, call, calls, settled } = await batchLane({ concurrency: 2 });
    const jobs = await enqueueMany(3);
    const first = await call();
    expect(first.jobs.map((j) => j.id)).toEqual([jobs[0]!.id, jobs[1]!.id]);
    await first.answer([{ ok: true }, { ok: true }]);
    await settled(jobs[1]!.id);
    // One due job left, not yet waited waitMs: it waits for company (or its wake).
    expect(calls()).toHaveLength(1);
  });

  it("starts a ready batch that waited for room when a single job's slot frees", async () => {
    const { enqueue, enqueueMany, call, calls, inside, settled } = await batchLane({ concurrency: 1 });
    const g = gate();
    const single = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const jobs = await enqueueMany(3);
    // Ready (size due), but the one slot is the single job's.
    expect(calls()).toHaveLength(0);
    await inside(() => attempt.open());
    await settled(single.id);
    expect((await call()).jobs.map((j) => j.id)).toEqual([jobs[0]!.id]);
  });

  it("counts no batch kind again at each single job's completion when no batch waits for room", async () => {
    const { lane, settled, inside } = await batchLane({ concurrency: 1 });
    let counted = 0;
    const restore = await runInDurableObject(lane, (_lane, state) => {
      const sql = state.storage.sql;
      const exec = sql.exec;
      sql.exec = ((query: string, ...bindings: unknown[]) => (query === BATCH_DUE_SQL && counted++, exec.call(sql, query, ...bindings))) as typeof sql.exec;
      return () => void (sql.exec = exec);
    });
    try {
      const jobs = unwrap(await lane.enqueueBatch({ jobs: Array.from({ length: 20 }, (_, i) => ({ kind: "demo.echo", payload: { i } })) })).results;
      await settled(jobs[19]!.id);
    } finally {
      await inside(() => restore());
    }
    // The enqueue's pump and the wake it computes count each batch kind once; the 20 completions' pumps (a slot freed) count none.
    const batchKinds = await runInDurableObject(lane, (l: Lane) => l.dispatcher.kinds.length - l.dispatcher.singleKinds.length);
    expect(batchKinds).toBeGreaterThan(0);
    expect(counted).toBeGreaterThan(0);
    expect(counted).toBeLessThanOrEqual(2 * batchKinds);
  });

  it("takes no more jobs than the lane's rate-limit tokens, and the rest at the next token", async () => {
    const { lane, enqueueMany, call, clock } = await batchLane();
    // Two tokens per 3 s: after the first two starts, the next token comes at 1.5 s.
    unwrap(await lane.configure({ rateLimit: { limit: 2, periodMs: 3000 } }));
    const jobs = await enqueueMany(3);
    const first = await call();
    expect(first.jobs).toHaveLength(2);
    // The third job alone has waited its waitMs (1 s) before the next token comes (1.5 s): the wake
    // is the token's, which a term blind to the lane's bucket would miss (it would wake at 1 s and
    // find nothing it may start).
    expect(TEST_BATCH.waitMs).toBeLessThan(1500);
    expect(await lane.storedAlarm()).toBe(START + 1500);
    clock.set(START + 1500);
    await runDurableObjectAlarm(lane);
    expect((await call(2)).jobs.map((j) => j.id)).toEqual([jobs[2]!.id]);
  });

  it("refuses sizes and windows out of range at definition", () => {
    const run = () => [];
    expect(() => batchExecutor({ size: 0, waitMs: 0, run })).toThrow(/size must be an integer 1\.\.100/);
    expect(() => batchExecutor({ size: 101, waitMs: 0, run })).toThrow(/size/);
    expect(() => batchExecutor({ size: 1.5, waitMs: 0, run })).toThrow(/size/);
    expect(() => batchExecutor({ size: 10, waitMs: -1, run })).toThrow(/waitMs must be an integer 0\.\.60000/);
    expect(() => batchExecutor({ size: 10, waitMs: 60_001, run })).toThrow(/waitMs/);
    expect(() => defineLane({ executors: { a: batchExecutor({ size: 100, waitMs: 60_000, run }) } })).not.toThrow();
  });
});
