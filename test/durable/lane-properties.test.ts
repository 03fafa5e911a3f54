/**
 * One property test: random sequences of operations, clock steps, alarms (due, late and spurious)
 * and evictions against a pull lane, checked after every step against the lane's invariants,
 * the wake's among them: whenever the lane holds
 * work that is due or will be, an alarm exists and is no later than it.
 * Deterministic: a fixed seed. To explore, change SEED; a failure prints the seed and shrunk path.
 */
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import type { JobRow } from "../../src/durable/store/job-row.js";
import type { Result } from "../../src/shared/errors.js";
import { JOB_STATES, type Counts } from "../../src/shared/job.js";
import { evict, fireAlarm, setup, type LaneFixture } from "../helpers/lane.js";
import { countsOf, expectedWake, isHead } from "../helpers/lane-model.js";

const SEED = 20_260_501;
const NUM_RUNS = 40;
const MAX_STEPS = 40;
const IDS = ["j0", "j1", "j2", "j3", "j4", "j5"];
const QUEUES = ["qa", "qb"];

type Op =
  | { t: "enqueue"; id: number; queue: number | null; priority: number; delayMs: number; maxAttempts: number; payload: number; maxRecoveries: number }
  | { t: "claim"; max: number; leaseMs: number }
  | { t: "renew"; id: number; token: number; leaseMs: number }
  | { t: "complete"; id: number; token: number }
  | { t: "fail"; id: number; token: number; retry: boolean; retryAfterMs: number | null }
  | { t: "release"; id: number; token: number }
  | { t: "cancel"; id: number }
  | { t: "requeue"; id: number }
  | { t: "configure"; paused: boolean | undefined; concurrency: number | undefined }
  | { t: "sweep"; ageMs: number }
  | { t: "tick"; ms: number; late: boolean }
  | { t: "spuriousAlarm" }
  | { t: "evict" };

const id = fc.nat(IDS.length - 1);
/** For a fenced write: which of the jobs that have had a lease (see `Memory.target`). */
const pick = fc.nat(11);
/** Which token to speak with: 0 the newest minted for the job, k the k-th older one. */
const token = fc.oneof(fc.constant(0), fc.nat(3));
const leaseMs = fc.integer({ min: 100, max: 3_000 });

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant("enqueue" as const), id, queue: fc.option(fc.nat(QUEUES.length - 1)), priority: fc.integer({ min: -1, max: 1 }), delayMs: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3_000 }) }), maxAttempts: fc.integer({ min: 1, max: 3 }), payload: fc.nat(1), maxRecoveries: fc.nat(2) }) },
  { weight: 6, arbitrary: fc.record({ t: fc.constant("claim" as const), max: fc.integer({ min: 1, max: 4 }), leaseMs }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("renew" as const), id: pick, token, leaseMs }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("complete" as const), id: pick, token }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("fail" as const), id: pick, token, retry: fc.boolean(), retryAfterMs: fc.option(fc.nat(2_000)) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("release" as const), id: pick, token }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("cancel" as const), id }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("requeue" as const), id }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("configure" as const), paused: fc.option(fc.boolean(), { nil: undefined }), concurrency: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("sweep" as const), ageMs: fc.nat(3_000) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 2_500 }), late: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("spuriousAlarm" as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("evict" as const) }) },
);

interface Snapshot {
  now: number;
  jobs: JobRow[];
  alarm: number | null;
  concurrency: number;
  paused: boolean;
}

async function snapshot(fixture: LaneFixture): Promise<Snapshot> {
  return runInDurableObject(fixture.stub, async (_lane: Lane, state) => {
    const sql = state.storage.sql;
    const lane = sql.exec<{ concurrency: number; paused: number }>(`SELECT concurrency, paused FROM lane`).one();
    return {
      now: fixture.clock.now(),
      jobs: sql.exec<JobRow>(`SELECT * FROM jobs ORDER BY seq`).toArray(),
      alarm: await state.storage.getAlarm(),
      concurrency: lane.concurrency,
      paused: lane.paused === 1,
    };
  });
}

/** Which jobs a claim of `max` must take, in order: due heads by priority then enqueue order, within the free slots. */
function expectedClaim(before: Snapshot, max: number): string[] {
  if (before.paused) return [];
  const free = before.concurrency - before.jobs.filter((j) => j.state === "running").length;
  return before.jobs
    .filter((j) => j.state === "queued" && j.run_at <= before.now && isHead(j, before.jobs))
    .sort((a, b) => b.priority - a.priority || a.seq - b.seq)
    .slice(0, Math.max(0, Math.min(max, free)))
    .map((j) => j.id);
}

/** What the test remembers across steps, keyed by seq (never reused, unlike an id after a sweep). */
class Memory {
  tokens = new Map<number, string[]>();
  generations = new Map<number, number>();
  settled = new Map<number, JobRow>();
  /** A clock step passed the alarm without firing it (the platform is late); the next firing ends it. */
  alarmLate = false;

  /** The job a fenced write speaks for: mostly a running one, else one that had a lease, so that writes often land. */
  target(s: Snapshot, pick: number): string {
    const leased = s.jobs.filter((j) => this.tokens.has(j.seq));
    const running = leased.filter((j) => j.state === "running");
    if (running.length > 0 && pick % 4 !== 3) return running[pick % running.length]!.id;
    return leased.length > 0 ? leased[pick % leased.length]!.id : IDS[pick % IDS.length]!;
  }

  tokenOf(s: Snapshot, id: string, back: number): string {
    const job = s.jobs.find((j) => j.id === id);
    const minted = job ? (this.tokens.get(job.seq) ?? []) : [];
    return minted.length === 0 ? "never-minted" : minted[Math.max(0, minted.length - 1 - back)]!;
  }

  mint(s: Snapshot, id: string, token: string): void {
    const seq = s.jobs.find((j) => j.id === id)!.seq;
    this.tokens.set(seq, [...(this.tokens.get(seq) ?? []), token]);
  }

  newest(s: Snapshot, id: string): string | undefined {
    const job = s.jobs.find((j) => j.id === id);
    return job ? this.tokens.get(job.seq)?.at(-1) : undefined;
  }
}

function checkInvariants(before: Snapshot, after: Snapshot, memory: Memory, step: Op, info: Result<{ counts: Counts; nextWakeAt: number | null; concurrency: number; paused: boolean }>): void {
  const context = JSON.stringify(step);
  const bySeq = new Map(after.jobs.map((j) => [j.seq, j]));
  for (const job of after.jobs) {
    // exactly one legal state
    expect(JOB_STATES, context).toContain(job.state);
    expect(job.state, context).not.toBe("completing"); // a lane without onOutcome settles at once
    expect(job.outcome === null, context).toBe(job.state === "queued" || job.state === "running");
    expect(job.settled_at !== null, context).toBe(job.state === "settled");
    if (job.state === "running") {
      expect(job.lease_token, context).not.toBeNull();
      expect(job.lease_until, context).not.toBeNull();
      expect(job.attempts, context).toBeGreaterThanOrEqual(1);
    }
    if (job.cancel_requested === 1) expect(job.state === "running" || job.outcome === "cancelled", context).toBe(true);
    expect(job.attempts, context).toBeLessThanOrEqual(job.max_attempts);
    expect(job.generation, context).toBeGreaterThanOrEqual(job.attempts);
    // generations only grow
    expect(job.generation, context).toBeGreaterThanOrEqual(memory.generations.get(job.seq) ?? 0);
    memory.generations.set(job.seq, job.generation);
  }
  // a settled job never changes, until requeued or swept
  for (const [seq, settled] of memory.settled) {
    const now = bySeq.get(seq);
    const requeued = step.t === "requeue" && IDS[step.id] === settled.id && now?.state === "queued";
    if (now === undefined) expect(step.t, `${context}: a settled job vanished`).toBe("sweep");
    else if (requeued) expect(now).toMatchObject({ outcome: null, attempts: 0, generation: settled.generation });
    else expect(now, context).toEqual(settled);
    if (now === undefined || requeued) memory.settled.delete(seq);
  }
  for (const job of after.jobs) if (job.state === "settled" && !memory.settled.has(job.seq)) memory.settled.set(job.seq, job);
  for (const seq of memory.generations.keys()) if (!bySeq.has(seq)) memory.generations.delete(seq);

  // concurrency: nothing starts beyond it; one running job per queue at most
  const running = after.jobs.filter((j) => j.state === "running");
  const runningBefore = before.jobs.filter((j) => j.state === "running").length;
  if (running.length > runningBefore) expect(running.length, context).toBeLessThanOrEqual(after.concurrency);
  for (const queue of QUEUES) expect(running.filter((j) => j.queue === queue).length, context).toBeLessThanOrEqual(1);

  // what the lane says equals the rows
  if (!info.ok) expect.fail(`info refused: ${info.error.message}`);
  expect(info.value.counts, context).toEqual(countsOf(after.jobs));
  expect({ concurrency: info.value.concurrency, paused: info.value.paused }, context).toEqual({ concurrency: after.concurrency, paused: after.paused });

  // the computed wake is the earliest work ahead (the model of lane-model.ts)
  const wake = expectedWake(after);
  expect(info.value.nextWakeAt, `${context}: computed wake`).toBe(wake);
  if (memory.alarmLate && after.alarm !== null && after.alarm <= after.now) return; // due, and waiting for the platform
  // The wake's invariant: work ahead means an alarm stored, and no later than the wake.
  if (wake !== null) {
    expect(after.alarm, `${context}: no alarm stored for a wake at ${wake}`).not.toBeNull();
    expect(after.alarm!, `${context}: the alarm`).toBeLessThanOrEqual(wake);
  }
}

async function apply(fixture: LaneFixture, step: Op, before: Snapshot, memory: Memory): Promise<void> {
  const { stub, clock } = fixture;
  const context = JSON.stringify(step);
  /**
   * A fenced write succeeds only with the newest token minted for the job, on a running job whose lease
   * has not run out and whose cancellation nobody asked for, or as the idempotent repeat of a settlement.
   */
  const fenced = (id: string, used: string, result: Result<unknown>) => {
    if (!result.ok) {
      expect(["job_settled", "job_cancelled", "lease_superseded", "lease_expired", "job_not_found"], context).toContain(result.error.code);
      return;
    }
    expect(used, `${context}: a stale token succeeded`).toBe(memory.newest(before, id));
    const held = before.jobs.find((j) => j.id === id)!;
    const live = held.state === "running" && held.lease_until! > before.now && held.cancel_requested === 0;
    const repeat =
      (held.state === "settled" && ((step.t === "complete" && held.outcome === "completed") || (step.t === "fail" && held.outcome === "failed"))) ||
      (held.state === "queued" && step.t === "fail" && held.attempt_end === "retry");
    expect(live || repeat, `${context}: a write through the fence of ${JSON.stringify(held)}`).toBe(true);
  };
  switch (step.t) {
    case "enqueue": {
      const result = await stub.enqueue({
        id: IDS[step.id],
        kind: "k",
        payload: step.payload,
        queue: step.queue === null ? null : QUEUES[step.queue],
        priority: step.priority,
        delayMs: step.delayMs,
        maxAttempts: step.maxAttempts,
        backoff: { baseMs: 100, maxMs: 1_000 },
        recovery: { maxRecoveries: step.maxRecoveries, windowMs: 5_000 },
      });
      if (!result.ok) expect(result.error.code, context).toBe("job_conflict");
      break;
    }
    case "claim": {
      const result = await stub.claim({ max: step.max, leaseMs: step.leaseMs });
      if (!result.ok) expect.fail(`${context}: ${result.error.message}`);
      expect(result.value.jobs.map((j) => j.id), `${context}: which jobs a claim takes`).toEqual(expectedClaim(before, step.max));
      for (const job of result.value.jobs) memory.mint(before, job.id, job.lease.token);
      break;
    }
    case "renew": {
      const id = memory.target(before, step.id);
      const used = memory.tokenOf(before, id, step.token);
      const result = await stub.renew(id, { token: used, leaseMs: step.leaseMs });
      fenced(id, used, result);
      if (result.ok) memory.mint(before, id, result.value.lease.token);
      break;
    }
    case "complete": {
      const id = memory.target(before, step.id);
      const used = memory.tokenOf(before, id, step.token);
      fenced(id, used, await stub.complete(id, { token: used, result: step.id }));
      break;
    }
    case "fail": {
      const id = memory.target(before, step.id);
      const used = memory.tokenOf(before, id, step.token);
      const body = { token: used, error: "e", retry: step.retry, ...(step.retryAfterMs === null ? {} : { retryAfterMs: step.retryAfterMs }) };
      fenced(id, used, await stub.fail(id, body));
      break;
    }
    case "release": {
      const id = memory.target(before, step.id);
      const used = memory.tokenOf(before, id, step.token);
      fenced(id, used, await stub.release(id, { token: used }));
      break;
    }
    case "cancel": {
      const result = await stub.cancel(IDS[step.id]);
      if (!result.ok) expect(["job_not_found", "job_settled"], context).toContain(result.error.code);
      break;
    }
    case "requeue": {
      const result = await stub.requeue(IDS[step.id]);
      if (!result.ok) expect(["job_not_found", "job_settled", "job_not_requeueable"], context).toContain(result.error.code);
      break;
    }
    case "configure": {
      const result = await stub.configure({ paused: step.paused, concurrency: step.concurrency });
      if (!result.ok) expect.fail(`${context}: ${result.error.message}`);
      break;
    }
    case "sweep": {
      const result = await stub.sweep({ settledBefore: Math.max(0, clock.now() - step.ageMs + 1) });
      if (!result.ok) expect.fail(`${context}: ${result.error.message}`);
      break;
    }
    case "tick": {
      clock.advance(step.ms);
      // The platform fires a due alarm; the manual clock stands in for its time. A late alarm has
      // not fired yet: expired leases and due jobs meet the lane's operations first.
      if (step.late) memory.alarmLate = true;
      else if (before.alarm !== null && before.alarm <= clock.now()) {
        expect(await fireAlarm(stub), context).toBe(true);
        memory.alarmLate = false;
      }
      break;
    }
    case "spuriousAlarm":
      // alarms are at-least-once and may come early: running one changes nothing that is not due
      await fireAlarm(stub);
      memory.alarmLate = false;
      break;
    case "evict":
      // the object goes away (its memory, its idea of the stored alarm) and starts again over its rows
      await evict(fixture);
      break;
  }
}

it(`keeps its invariants through random operations and clock steps (fast-check seed ${SEED})`, async () => {
  console.log(`lane-properties: fast-check seed ${SEED}, ${NUM_RUNS} runs of up to ${MAX_STEPS} steps`);
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: MAX_STEPS, size: "max" }), fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { maxLength: 20 }), async (steps, randoms) => {
      const fixture = await setup({ randoms });
      const memory = new Memory();
      let before = await snapshot(fixture);
      for (const step of steps) {
        await apply(fixture, step, before, memory);
        const after = await snapshot(fixture);
        checkInvariants(before, after, memory, step, await fixture.stub.info());
        before = after;
      }
    }),
    { seed: SEED, numRuns: NUM_RUNS },
  );
}, 120_000);
