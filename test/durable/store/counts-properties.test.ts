/**
 * The counts property test: after any random sequence of operations — enqueue, batch,
 * claim, complete, fail, release, cancel, requeue, lease expiry, sweep, purge, fail lane, retention —
 * the kept counts equal a GROUP BY over the rows, every lifetime stat moved by exactly the
 * transitions the rows show (and never down), and the wake, retention term included, is what the rows
 * ask for. Deterministic: a fixed seed; a failure prints it with the shrunk path.
 */
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { JobRow } from "../../../src/durable/store/job-row.js";
import type { Result } from "../../../src/shared/errors.js";
import { OUTCOMES, type Counts, type LaneInfo, type Retention } from "../../../src/shared/job.js";
import { fireAlarm, setup, value, type LaneFixture } from "../../helpers/lane.js";
import { countsOf, expectedWake } from "../../helpers/lane-model.js";

const SEED = 20_261_111;
const NUM_RUNS = 30;
const MAX_STEPS = 40;
const IDS = ["a", "b", "c", "d", "e", "f", "g"];
const QUEUES = ["q1", "q2"];

type Op =
  | { t: "enqueue"; id: number; queue: number | null; delayMs: number; maxAttempts: number; maxRecoveries: number }
  | { t: "batch"; ids: number[]; queue: number | null }
  | { t: "claim"; max: number; leaseMs: number }
  | { t: "complete" | "release"; id: number }
  | { t: "fail"; id: number; retry: boolean }
  | { t: "cancel" | "requeue"; id: number }
  | { t: "tick"; ms: number }
  | { t: "sweep"; ageMs: number }
  | { t: "purge"; queue: number }
  | { t: "failLane" }
  | { t: "retention"; completedMs: number | null | undefined; failedMs: number | null | undefined };

const id = fc.nat(IDS.length - 1);
const queue = fc.option(fc.nat(QUEUES.length - 1));
/** A retention horizon in a PATCH: left out, null (keep), or a few seconds at most, so that jobs expire within a run. */
const horizon = fc.oneof(fc.constant(undefined), fc.constant(null), fc.constant(0), fc.integer({ min: 1, max: 4_000 }));
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant("enqueue" as const), id, queue, delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 })), maxAttempts: fc.integer({ min: 1, max: 3 }), maxRecoveries: fc.nat(2) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("batch" as const), ids: fc.array(id, { minLength: 1, maxLength: 4 }), queue }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant("claim" as const), max: fc.integer({ min: 1, max: 4 }), leaseMs: fc.integer({ min: 100, max: 3_000 }) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constantFrom("complete" as const, "release" as const), id }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("fail" as const), id, retry: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constantFrom("cancel" as const, "requeue" as const), id }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 2_500 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("sweep" as const), ageMs: fc.nat(3_000) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("purge" as const), queue: fc.nat(QUEUES.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("failLane" as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("retention" as const), completedMs: horizon, failedMs: horizon }) },
);

interface Snapshot {
  now: number;
  jobs: JobRow[];
  kept: Counts;
  grouped: Counts;
  alarm: number | null;
  concurrency: number;
  paused: boolean;
}

async function snapshot(fixture: LaneFixture): Promise<Snapshot> {
  return runInDurableObject(fixture.stub, async (_lane, state) => {
    const sql = state.storage.sql;
    const kept = sql.exec<Counts>(`SELECT blocked, queued - blocked AS queued, running, completing, completed, failed, cancelled, interrupted FROM lane_counts`).one();
    const grouped: Counts = { blocked: 0, queued: 0, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 };
    for (const row of sql.exec<{ bucket: keyof Counts; n: number }>(
      `SELECT CASE WHEN state = 'settled' THEN outcome WHEN state = 'queued' AND blocked > 0 THEN 'blocked' ELSE state END AS bucket, COUNT(*) AS n FROM jobs GROUP BY bucket`,
    )) {
      grouped[row.bucket] = row.n;
    }
    const lane = sql.exec<{ concurrency: number; paused: number }>(`SELECT concurrency, paused FROM lane`).one();
    return {
      now: fixture.clock.now(),
      jobs: sql.exec<JobRow>(`SELECT * FROM jobs ORDER BY seq`).toArray(),
      kept: { ...kept },
      grouped,
      alarm: await state.storage.getAlarm(),
      concurrency: lane.concurrency,
      paused: lane.paused === 1,
    };
  });
}

/** How each lifetime stat must have moved between two snapshots, from the rows alone. */
function statDeltas(before: JobRow[], after: JobRow[]): LaneInfo["stats"] {
  const was = new Map(before.map((j) => [j.seq, j]));
  const delta: LaneInfo["stats"] = { enqueued: 0, claimed: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0 };
  for (const job of after) {
    const old = was.get(job.seq);
    if (!old) {
      delta.enqueued++;
      continue;
    }
    delta.claimed += job.generation - old.generation;
    if (old.outcome === null && job.outcome !== null) delta[job.outcome]++;
    if (old.state === "running" && job.state === "queued" && job.attempt_end === "retry") delta.retried++;
    if (old.state === "running" && job.state === "queued" && job.attempt_end === "recovery") delta.recovered++;
  }
  return delta;
}

async function apply(fixture: LaneFixture, step: Op, before: Snapshot, tokens: Map<string, string>, retention: Retention): Promise<void> {
  const { stub, clock } = fixture;
  const context = JSON.stringify(step);
  const allowed = (result: Result<unknown>, codes: string[]) => {
    if (!result.ok) expect(codes, `${context}: ${result.error.message}`).toContain(result.error.code);
  };
  const fenced = ["job_settled", "job_cancelled", "lease_superseded", "lease_expired", "job_not_found"];
  const token = (i: number) => tokens.get(IDS[i]!) ?? "never-minted";
  switch (step.t) {
    case "enqueue":
      allowed(
        await stub.enqueue({ id: IDS[step.id], kind: "k", queue: step.queue === null ? null : QUEUES[step.queue], delayMs: step.delayMs, maxAttempts: step.maxAttempts, backoff: { baseMs: 100, maxMs: 1_000 }, recovery: { maxRecoveries: step.maxRecoveries, windowMs: 5_000 } }),
        ["job_conflict"],
      );
      break;
    case "batch":
      allowed(await stub.enqueueBatch({ jobs: step.ids.map((i) => ({ id: IDS[i], kind: "k", queue: step.queue === null ? null : QUEUES[step.queue] })) }), ["job_conflict"]);
      break;
    case "claim": {
      const result = await stub.claim({ max: step.max, leaseMs: step.leaseMs });
      if (!result.ok) expect.fail(`${context}: ${result.error.message}`);
      for (const job of result.value.jobs) tokens.set(job.id, job.lease.token);
      break;
    }
    case "complete":
      allowed(await stub.complete(IDS[step.id], { token: token(step.id) }), fenced);
      break;
    case "release":
      allowed(await stub.release(IDS[step.id], { token: token(step.id) }), fenced);
      break;
    case "fail":
      allowed(await stub.fail(IDS[step.id], { token: token(step.id), error: "e", retry: step.retry, retryAfterMs: 0 }), fenced);
      break;
    case "cancel":
      allowed(await stub.cancel(IDS[step.id]), ["job_not_found", "job_settled"]);
      break;
    case "requeue":
      allowed(await stub.requeue(IDS[step.id]), ["job_not_found", "job_settled", "job_not_requeueable"]);
      break;
    case "tick":
      clock.advance(step.ms);
      // Lease expiry and retention happen on the alarm, which the platform fires once due.
      if (before.alarm !== null && before.alarm <= clock.now()) expect(await fireAlarm(stub), context).toBe(true);
      break;
    case "sweep":
      allowed(await stub.sweep({ settledBefore: Math.max(0, clock.now() - step.ageMs + 1) }), []);
      break;
    case "purge":
      allowed(await stub.purgeQueue(QUEUES[step.queue]), []);
      break;
    case "failLane": {
      const result = await stub.failLane({ reason: "gone" });
      if (!result.ok) expect.fail(`${context}: ${result.error.message}`);
      expect(result.value.more, context).toBe(false); // fewer jobs than a call takes
      break;
    }
    case "retention": {
      const result = await stub.configure({ retention: { completedMs: step.completedMs, failedMs: step.failedMs } });
      if (!result.ok) expect.fail(`${context}: ${result.error.message}`);
      if (step.completedMs !== undefined) retention.completedMs = step.completedMs;
      if (step.failedMs !== undefined) retention.failedMs = step.failedMs;
      expect(result.value.retention, context).toEqual(retention);
      break;
    }
  }
}

it(`keeps counts equal to a GROUP BY over the rows and stats true to the transitions (fast-check seed ${SEED})`, async () => {
  console.log(`lane-counts-properties: fast-check seed ${SEED}, ${NUM_RUNS} runs of up to ${MAX_STEPS} steps`);
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: MAX_STEPS, size: "max" }), async (steps) => {
      const fixture = await setup();
      const tokens = new Map<string, string>();
      const initial = value(await fixture.stub.info());
      const retention = { ...initial.retention };
      let stats = initial.stats;
      let before = await snapshot(fixture);
      for (const step of steps) {
        const context = JSON.stringify(step);
        await apply(fixture, step, before, tokens, retention);
        const after = await snapshot(fixture);
        expect(after.kept, `${context}: kept counts vs GROUP BY`).toEqual(after.grouped);
        expect(after.grouped, context).toEqual(countsOf(after.jobs));
        const info = { value: value(await fixture.stub.info()) };
        expect(info.value.counts, context).toEqual(after.kept);
        const delta = statDeltas(before.jobs, after.jobs);
        const moved = Object.fromEntries(Object.entries(info.value.stats).map(([k, v]) => [k, v - stats[k as keyof typeof stats]]));
        expect(moved, `${context}: stats moved by the transitions`).toEqual(delta);
        const wake = expectedWake({ ...after, retention });
        expect(info.value.nextWakeAt, `${context}: the wake`).toBe(wake);
        // The wake's invariant: an alarm stored, no later than the wake (an earlier one is harmless).
        if (wake !== null) expect(after.alarm ?? Infinity, `${context}: the alarm`).toBeLessThanOrEqual(wake);
        for (const outcome of OUTCOMES) expect(info.value.stats[outcome]).toBeGreaterThanOrEqual(stats[outcome]);
        stats = info.value.stats;
        before = after;
      }
    }),
    { seed: SEED, numRuns: NUM_RUNS },
  );
}, 180_000);
