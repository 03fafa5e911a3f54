/**
 * The counts property test: after any random sequence of operations — enqueue (with a TTL, a
 * debounce key, dependencies), batch, group, claim, complete, fail, release, snooze, cancel,
 * requeue, lease expiry, expiry, dependencies told, sweep, purge, fail lane, retention, restarts —
 * the kept counts equal a GROUP BY over the rows (by state, kind and queue), every lifetime stat moved
 * by exactly the transitions the rows show (and never down), the histograms and the minute history
 * add up to the stats, and the wake, retention term included, is what the rows ask for.
 * Deterministic: fixed seeds; a failure prints its seed with the shrunk path.
 */
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { JobRow } from "../../../src/durable/store/job-row.js";
import type { Result } from "../../../src/shared/errors.js";
import { OUTCOMES, type Counts, type LaneInfo, type Retention } from "../../../src/shared/job.js";
import { evict, fireAlarm, setup, value, type LaneFixture } from "../../helpers/lane.js";
import { countsOf, expectedWake } from "../../helpers/lane-model.js";

const SEEDS = [20_261_111, 20_261_207, 1, 4_242, 31_337];
const NUM_RUNS = 15;
const MAX_STEPS = 40;
const IDS = ["a", "b", "c", "d", "e", "f", "g"];
const QUEUES = ["q1", "q2"];
const KINDS = ["k", "k2"];

type Op =
  | { t: "enqueue"; id: number; queue: number | null; delayMs: number; maxAttempts: number; maxRecoveries: number; kind: number; ttl: boolean; debounce: boolean; dependsOn: number | null }
  | { t: "batch" | "group"; ids: number[]; queue: number | null }
  | { t: "snooze"; id: number; delayMs: number }
  | { t: "restart" }
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
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant("enqueue" as const), id, queue, delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 })), maxAttempts: fc.integer({ min: 1, max: 3 }), maxRecoveries: fc.nat(2),
      kind: fc.nat(KINDS.length - 1), ttl: fc.boolean(), debounce: fc.boolean(), dependsOn: fc.option(id, { freq: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constantFrom("batch" as const, "group" as const), ids: fc.array(id, { minLength: 1, maxLength: 4 }), queue }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("snooze" as const), id, delayMs: fc.nat(2_000) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("restart" as const) }) },
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

/** The kept counts per kind and per queue, and the same counted from the rows. */
const KEPT_KINDS = `SELECT kind, queued, running FROM kind_counts WHERE queued <> 0 OR running <> 0 ORDER BY kind`;
const FULL_KINDS = `SELECT kind, COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state = 'running') AS running
  FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind ORDER BY kind`;
const KEPT_QUEUES = `SELECT name, queued, active FROM queues WHERE queued <> 0 OR active <> 0 ORDER BY name`;
const FULL_QUEUES = `SELECT queue AS name, COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state IN ('running', 'completing')) AS active
  FROM jobs WHERE queue IS NOT NULL AND state <> 'settled' GROUP BY queue ORDER BY queue`;
/** Observations per histogram and label. */
const OBSERVED = `SELECT name || ':' || outcome AS series, SUM(count) AS n FROM job_histograms GROUP BY name, outcome`;

interface Snapshot {
  now: number;
  jobs: JobRow[];
  kept: Counts;
  grouped: Counts;
  kinds: { kept: unknown[]; full: unknown[] };
  queues: { kept: unknown[]; full: unknown[] };
  observed: Record<string, number>;
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
      kinds: { kept: sql.exec(KEPT_KINDS).toArray(), full: sql.exec(FULL_KINDS).toArray() },
      queues: { kept: sql.exec(KEPT_QUEUES).toArray(), full: sql.exec(FULL_QUEUES).toArray() },
      observed: Object.fromEntries(sql.exec<{ series: string; n: number }>(OBSERVED).toArray().map((r) => [r.series, r.n])),
      alarm: await state.storage.getAlarm(),
      concurrency: lane.concurrency,
      paused: lane.paused === 1,
    };
  });
}

/** How each lifetime stat must have moved between two snapshots, from the rows alone. */
function statDeltas(before: JobRow[], after: JobRow[]): LaneInfo["stats"] {
  const was = new Map(before.map((j) => [j.seq, j]));
  const delta: LaneInfo["stats"] = { enqueued: 0, claimed: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0, deadLettered: 0, waitpointsCompleted: 0, waitpointsTimedOut: 0 };
  for (const job of after) {
    const old = was.get(job.seq);
    if (!old) {
      // A new row may have settled in its own enqueue (a dependency already failed or cancelled).
      delta.enqueued++;
      delta.claimed += job.generation;
      if (job.outcome !== null) delta[job.outcome]++;
      continue;
    }
    delta.claimed += job.generation - old.generation;
    if (old.outcome === null && job.outcome !== null) delta[job.outcome]++;
    if (old.state === "running" && job.state === "queued" && job.attempt_end === "retry") delta.retried++;
    if (old.state === "running" && job.state === "queued" && job.attempt_end === "recovery") delta.recovered++;
    if (old.state === "running" && job.state === "queued" && job.lease_token === null) delta.snoozed++;
    // Only an expiry settles cancelled with no cancellation asked, "expired".
    if (old.outcome === null && job.outcome === "cancelled" && job.cancel_requested === 0 && job.error === "expired") delta.expired++;
  }
  return delta;
}

/** Applies `step`; answers how many enqueues replaced a debounced job (what no row tells). */
async function apply(fixture: LaneFixture, step: Op, before: Snapshot, tokens: Map<string, string>, retention: Retention): Promise<number> {
  const { stub, clock } = fixture;
  const context = JSON.stringify(step);
  const allowed = (result: Result<unknown>, codes: string[]) => {
    if (!result.ok) expect(codes, `${context}: ${result.error.message}`).toContain(result.error.code);
  };
  const fenced = ["job_settled", "job_cancelled", "lease_superseded", "lease_expired", "job_not_found"];
  const token = (i: number) => tokens.get(IDS[i]!) ?? "never-minted";
  switch (step.t) {
    case "enqueue": {
      // A debounced job has an id of the lane's making (a request names one or the other); one with
      // dependencies waits for another id of this lane (not itself, not a debounced one).
      const dependsOn = step.dependsOn !== null && step.dependsOn !== step.id && !step.debounce ? [{ id: IDS[step.dependsOn] }] : undefined;
      const answer = await stub.enqueue({
          ...(step.debounce ? { debounce: { key: IDS[step.id], delayMs: 500 } } : { id: IDS[step.id] }),
          kind: KINDS[step.kind], queue: step.queue === null ? null : QUEUES[step.queue], delayMs: step.delayMs, maxAttempts: step.maxAttempts,
          backoff: { baseMs: 100, maxMs: 1_000 }, recovery: { maxRecoveries: step.maxRecoveries, windowMs: 5_000 },
          ...(step.ttl ? { ttlMs: 1_500 } : {}), ...(dependsOn ? { dependsOn } : {}),
        });
      allowed(answer, ["job_conflict", "dependency_not_found"]);
      return answer.ok && answer.value.status === "debounced" ? 1 : 0;
    }
    case "batch":
      allowed(await stub.enqueueBatch({ jobs: step.ids.map((i) => ({ id: IDS[i], kind: "k", queue: step.queue === null ? null : QUEUES[step.queue] })) }), ["job_conflict"]);
      break;
    case "group": {
      const answered = value(await stub.enqueueGroup(step.ids.map((i) => JSON.stringify({ id: IDS[i], kind: "k2", queue: step.queue === null ? null : QUEUES[step.queue] }))));
      for (const text of answered) allowed(JSON.parse(text) as Result<unknown>, ["job_conflict"]);
      break;
    }
    case "snooze":
      allowed(await stub.snooze(IDS[step.id], { token: token(step.id), delayMs: step.delayMs }), fenced);
      break;
    case "restart":
      await evict(fixture);
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
  return 0;
}

it.each(SEEDS)(`keeps counts equal to a GROUP BY over the rows and stats true to the transitions (fast-check seed %i)`, async (SEED) => {
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
        const debounced = await apply(fixture, step, before, tokens, retention);
        const after = await snapshot(fixture);
        expect(after.kept, `${context}: kept counts vs GROUP BY`).toEqual(after.grouped);
        expect(after.kinds.kept, `${context}: kept kinds vs GROUP BY`).toEqual(after.kinds.full);
        expect(after.queues.kept, `${context}: kept queues vs GROUP BY`).toEqual(after.queues.full);
        // The model knows neither TTLs nor dependencies (their wake terms, blocked jobs): checked without them.
        const modelled = after.jobs.every((j) => j.expires_at === null && j.depends_on === null);
        if (modelled) expect(after.grouped, context).toEqual(countsOf(after.jobs));
        const info = { value: value(await fixture.stub.info()) };
        expect(info.value.counts, context).toEqual(after.kept);
        const delta = { ...statDeltas(before.jobs, after.jobs), debounced };
        const moved = Object.fromEntries(Object.entries(info.value.stats).map(([k, v]) => [k, v - stats[k as keyof typeof stats]]));
        expect(moved, `${context}: stats moved by the transitions`).toEqual(delta);
        const wake = expectedWake({ ...after, retention });
        if (modelled) expect(info.value.nextWakeAt, `${context}: the wake`).toBe(wake);
        // The wake's invariant: an alarm stored, no later than the wake (an earlier one is harmless).
        if (modelled && wake !== null) expect(after.alarm ?? Infinity, `${context}: the alarm`).toBeLessThanOrEqual(wake);
        for (const outcome of OUTCOMES) expect(info.value.stats[outcome]).toBeGreaterThanOrEqual(stats[outcome]);
        stats = info.value.stats;
        // Every start observed a wait; every attempt ended so observed its run, labelled as it ended.
        const seen = (series: string) => after.observed[series] ?? 0;
        expect(seen("wait:"), `${context}: waits observed`).toBe(stats.claimed);
        for (const [series, n] of [["run:completed", stats.completed], ["run:retried", stats.retried], ["run:recovered", stats.recovered], ["run:snoozed", stats.snoozed]] as const) {
          expect(seen(series), `${context}: ${series}`).toBe(n);
        }
        // The minute history adds up to the lane's totals (recorded from its start), its last depth the lane's.
        const minutes = value(await fixture.stub.history({ windowMs: 24 * 3_600_000 })).buckets;
        const sum = (key: "enqueued" | "started" | "completed" | "failed") => minutes.reduce((n, m) => n + m[key], 0);
        expect({ enqueued: sum("enqueued"), started: sum("started"), completed: sum("completed"), failed: sum("failed") }, `${context}: history`).toEqual({
          enqueued: stats.enqueued, started: stats.claimed, completed: stats.completed, failed: stats.failed,
        });
        expect(minutes.at(-1)!.depth, `${context}: history depth`).toBe(after.kept.queued);
        before = after;
      }
    }),
    { seed: SEED, numRuns: NUM_RUNS },
  );
}, 300_000);
