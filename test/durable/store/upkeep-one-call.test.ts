/**
 * A statement's upkeep in one call: when it touched one kind, one queue and one histogram bucket at
 * most (every single job's transition), the store hands its deltas to SQLite in one insert into the
 * sink, whose trigger writes them; a statement that touched more writes them one by one. Both leave
 * the same tables: the counts, kinds, queues, histograms and the history's ring and minute. A claim
 * answers its jobs' waits itself: observing them costs it no read.
 */
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { MINUTE_MS } from "../../../src/shared/history.js";
import { SET_WATCHED_SQL } from "../../../src/durable/wake/wake-statements.js";
import { keepUpkeep, queuedSnap, recordHistograms, type Change, type Snap } from "../../../src/durable/store/upkeep.js";
import type { JobSpec } from "../../../src/durable/store/job-row.js";
import { T0, claimOne, enqueue, setup, type LaneStub } from "../../helpers/lane.js";

const spec = (kind: string, queue: string | null): JobSpec => ({
  id: "x", kind, payload: "{}", queue, priority: 0, runAt: T0, maxAttempts: 3, backoffBaseMs: 1000, backoffMaxMs: 300_000, timeoutMs: 60_000,
  maxRecoveries: 3, recoveryWindowMs: 3_600_000, ttlMs: null, expiresAt: null, debounce: null, debounceKey: null, debounceDeadline: null,
  dependsOn: null, dependencyFailure: null, traceparent: null,
});

const queued = (kind: string, queue: string | null, at: number, blocked = 0): Snap => queuedSnap({ ...spec(kind, queue), runAt: at }, at, blocked);
const running = (from: Snap, at: number): Snap => ({ ...from, state: "running", claimed_at: at, updated_at: at, lease_token: "t" });
const settled = (from: Snap, outcome: "completed" | "failed", at: number): Snap => ({ ...from, state: "settled", outcome, updated_at: at, lease_token: null });
const requeued = (from: Snap, at: number, end: "retry" | "recovery"): Snap => ({ ...from, state: "queued", run_at: at, updated_at: at, attempt_end: end, lease_token: "t" });

/**
 * One job's life and a neighbour's, each step one statement's changes with its instant (null: a
 * deletion), across minutes (each first statement of a minute rolls the history) and both ways of a
 * kind's and a queue's counts: enqueues, a blocked one, claims (waits), a retry, a recovery, outcomes
 * (runs), a deletion.
 */
function steps(): [Change[], number | null][] {
  const a0 = queued("k", "q", T0);
  const b0 = queued("k", null, T0 + 5, 2);
  const a1 = running(a0, T0 + 70_000);
  const a2 = requeued(a1, T0 + 75_000, "retry");
  const a3 = running(a2, T0 + 130_000);
  const a4 = requeued(a3, T0 + 131_000, "recovery");
  const a5 = running(a4, T0 + 190_000);
  const a6 = settled(a5, "completed", T0 + 190_250);
  const b1 = { ...b0, blocked: 0 };
  const b2 = running(b1, T0 + 250_000);
  const b3 = settled(b2, "failed", T0 + 251_000);
  return [
    [[{ old: null, new: a0 }], T0],
    [[{ old: null, new: b0 }], T0 + 5],
    [[{ old: a0, new: a1 }], T0 + 70_000],
    [[{ old: a1, new: a2 }], T0 + 75_000],
    [[{ old: a2, new: a3 }], T0 + 130_000],
    [[{ old: a3, new: a4 }], T0 + 131_000],
    [[{ old: a4, new: a5 }], T0 + 190_000],
    [[{ old: a5, new: a6 }], T0 + 190_250],
    [[{ old: b0, new: b1 }], T0 + 200_000],
    [[{ old: b1, new: b2 }], T0 + 250_000],
    [[{ old: b2, new: b3 }], T0 + 251_000],
    [[{ old: a6, new: null }], null],
    [[{ old: null, new: queued("k", "q", T0 + 400_000) }], T0 + 400_000],
  ];
}

/** A row of another kind and queue that stays as it is: it changes no count, but makes its statement touch two kinds and two queues. */
const BYSTANDER = queued("other", "elsewhere", T0);

const TABLES = [
  `SELECT * FROM lane_counts`,
  `SELECT kind, queued, running FROM kind_counts ORDER BY kind`,
  `SELECT name, queued, active FROM queues ORDER BY name`,
  `SELECT * FROM job_histograms ORDER BY name, outcome, bucket`,
  `SELECT * FROM history ORDER BY slot`,
];

/** Runs every step on a fresh lane, recording (history and histograms), each step alone or with the bystander; answers the tables and the calls each step made. */
async function run(withBystander: boolean): Promise<{ tables: unknown[][]; calls: number[] }> {
  const { stub } = await setup();
  return runInDurableObject(stub, (_lane, state) => {
    const sql = state.storage.sql;
    recordHistograms(sql, true);
    sql.exec(`UPDATE lane_counts SET history_minute = ?1, history_base_enqueued = total_enqueued, history_base_started = total_claimed,
      history_base_completed = total_completed, history_base_failed = total_failed WHERE id = 1`, Math.floor(T0 / MINUTE_MS));
    const exec = sql.exec;
    let n = 0;
    sql.exec = ((query: string, ...bindings: unknown[]) => (n++, exec.call(sql, query, ...bindings))) as typeof sql.exec;
    const calls: number[] = [];
    try {
      for (const [changes, now] of steps()) {
        n = 0;
        state.storage.transactionSync(() => keepUpkeep(sql, withBystander ? [...changes, { old: BYSTANDER, new: BYSTANDER }] : changes, now));
        calls.push(n);
      }
    } finally {
      sql.exec = exec;
    }
    // The sink stores nothing: its trigger wrote the deltas and dropped the row.
    expect(sql.exec(`SELECT COUNT(*) AS n FROM upkeep_deltas`).one().n).toBe(0);
    return { tables: TABLES.map((q) => sql.exec(q).toArray()), calls };
  });
}

it("writes a single job's transition's whole upkeep in one call, a roll of the history's minute included", async () => {
  const { calls, tables } = await run(false);
  expect(calls).toEqual(steps().map(() => 1));
  // It wrote: the rolled minutes are in the ring, the buckets observed.
  expect((tables[4] as unknown[]).length).toBeGreaterThanOrEqual(4);
  expect((tables[3] as unknown[]).length).toBeGreaterThanOrEqual(4);
});

it("leaves the same counts, kinds, queues, histograms and history as the upkeep written one statement at a time", async () => {
  const one = await run(false);
  const apart = await run(true);
  expect(apart.calls.some((n) => n > 1)).toBe(true);
  expect(one.tables).toEqual(apart.tables);
});

/** The statements of one claim, with the histograms observed or not, up to the claim's write of its jobs (the wake's reads follow in their own time). */
async function claimStatements(stub: LaneStub, observed: boolean): Promise<string[]> {
  const seen: string[] = [];
  let restore = () => {};
  await runInDurableObject(stub, (_lane, state) => {
    const sql = state.storage.sql;
    recordHistograms(sql, observed);
    const exec = sql.exec;
    // The registry's answer to the lane's first wake lands in its own time (wake/alarm-watch.ts): not the claim's.
    const record = (query: string) => void (query === SET_WATCHED_SQL || seen.push(query));
    sql.exec = ((query: string, ...bindings: unknown[]) => (record(query), exec.call(sql, query, ...bindings))) as typeof sql.exec;
    restore = () => void (sql.exec = exec);
  });
  try {
    await claimOne(stub);
  } finally {
    restore();
  }
  const claim = seen.findIndex((q) => q.startsWith("UPDATE jobs SET state = 'running'"));
  expect(claim).toBeGreaterThan(0);
  return seen.slice(0, claim + 1);
}

it("claims with no read of its jobs before it writes them when it observes their waits", async () => {
  const { stub } = await setup();
  for (const id of ["a", "b", "c"]) await enqueue(stub, { id });
  // The lane's first claim reads what later ones remember: compared after it.
  await claimOne(stub);
  const unobserved = await claimStatements(stub, false);
  expect(await claimStatements(stub, true)).toEqual(unobserved);
});
