/**
 * The lane's upkeep, kept by the store: the counts (by state, settled ones by outcome, blocked, the
 * lifetime totals), queued and running jobs per kind, queued and active jobs per queue, the
 * histograms of waits and runs, and the per-minute history. Every statement that inserts, deletes or
 * changes the state, outcome, kind, queue or blocked of `jobs` rows hands its changes here (each
 * row's old and new values, which the statement knows from its WHERE or reads: RETURNING, a row read
 * before) and they are written at once, in the statement's own transaction: one write per touched
 * upkeep row (a batch of 1,000 inserts of one kind and queue writes the counts row, one kind row and
 * one queue row once), where per-row triggers wrote each of them once per job. A statement that
 * touched one kind, one queue and one histogram bucket at most (every single job's transition) hands
 * its deltas to SQLite in one call, the sink's trigger writing them (`SINK_SQL`): a JS-to-SQL call
 * costs more than the writes.
 *
 * The arithmetic is the one the triggers of migrations 6 to 16 did row by row (migration 22 dropped
 * them and recounted what rows can tell), so that the counts equal a full count after any sequence.
 *
 * The outbox's two triggers (migration 13) stay: they are the one thing that makes a settled (or
 * deleted unsettled) dependency's notice atomic with the change itself for every statement that
 * settles or deletes a job, present or future, where the upkeep here is exact only for the
 * statements that hand it their changes. A job without dependents pays their WHEN alone: within
 * the bench's noise (countsCost's `outboxTriggersUs`, under 1 µs a job on a drain).
 */
import type { Outcome, RowState } from "../../shared/job.js";
import { MINUTE_MS } from "../../shared/history.js";
import { HISTOGRAM_BOUNDS_MS } from "../metrics/exposition.js";
import type { AttemptEnd, JobSpec } from "./job-row.js";
import { COUNT_COLUMNS, KIND_ADD_SQL, KIND_MOVE_SQL, QUEUE_ADD_SQL, QUEUE_MOVE_SQL, OBSERVE_ONE_SQL, OBSERVE_SQL, SINK_SQL } from "./upkeep-statements.js";

/** What the upkeep reads of a job row: the columns every statement that changes jobs can answer. */
export type Snap = {
  state: RowState;
  outcome: Outcome | null;
  kind: string;
  queue: string | null;
  blocked: number;
  run_at: number;
  updated_at: number;
  claimed_at: number | null;
  created_at: number;
  attempt_end: AttemptEnd | null;
  lease_token: string | null;
};

/** The columns of `Snap`, for a RETURNING or a read before a change whose old row varies. */
export const SNAP_COLUMNS = `state, outcome, kind, queue, blocked, run_at, updated_at, claimed_at, created_at, attempt_end, lease_token`;

/** What a new queued job's row holds, inserted at `now` from `spec` (with `blocked` dependencies not yet settled). */
export function queuedSnap(spec: JobSpec, now: number, blocked = 0): Snap {
  return { state: "queued", outcome: null, kind: spec.kind, queue: spec.queue, blocked, run_at: spec.runAt, updated_at: now, claimed_at: null, created_at: now, attempt_end: null, lease_token: null };
}

/** One row's change: inserted (old null), deleted (new null), or updated. */
export type Change = { old: Snap | null; new: Snap | null };

/** An attempt's end, from its row as the statement answered it: it was running (the fence, or its WHERE), its kind, queue and claim unchanged. */
export function fromRunning(to: Snap): Change {
  return { old: { ...to, state: "running", outcome: null }, new: to };
}

/** What a row answering `SUBJECT_COLUMNS` (job-row.ts) tells the upkeep, written at `now` with an outcome (no longer queued). */
export function subjectSnap(row: { state: string; outcome: Outcome | null; kind: string; queue: string | null; claimed_at: number | null }, now: number): Snap {
  return { state: row.state as RowState, outcome: row.outcome, kind: row.kind, queue: row.queue, blocked: 0, run_at: now, updated_at: now, claimed_at: row.claimed_at, created_at: now, attempt_end: null, lease_token: null };
}

const Q = 0, R = 1, C = 2, BLOCKED = 7, ENQ = 8, CLAIMED = 9, RETRIED = 14, RECOVERED = 15, SNOOZED = 16;
const SETTLED_AT: Record<Outcome, number> = { completed: 3, failed: 4, cancelled: 5, interrupted: 6 };
const TOTAL_OF: Record<Outcome, number> = { completed: 10, failed: 11, cancelled: 12, interrupted: 13 };

const NO_COUNTS: readonly null[] = COUNT_COLUMNS.map(() => null);
const NO_ROW = [null, null, null] as const;
const NO_OBSERVATION = [null, null, null, null, null] as const;

/** The one row of `map` that moved, as the sink binds it (key, deltas), or null. */
function moved(map: Map<string, [number, number]>): [string, number, number] | null {
  for (const [key, [a, b]] of map) if (a !== 0 || b !== 0) return [key, a, b];
  return null;
}

/** The kinds of upkeep, each of which the bench can leave out to measure what it costs. */
export const UPKEEP_KINDS = ["counts", "kinds", "queues", "histograms", "history"] as const;
export type UpkeepKind = (typeof UPKEEP_KINDS)[number];

/** Kinds a benchmark's probe left out, by database (never set by a lane: its upkeep is whole). */
const leftOut = new WeakMap<SqlStorage, ReadonlySet<UpkeepKind>>();

/** For the bench's probe only: leaves `kinds` of upkeep out of this database's writes (its counts then go wrong). */
export function leaveOutUpkeep(sql: SqlStorage, kinds: readonly UpkeepKind[]): void {
  leftOut.set(sql, new Set(kinds));
}

/** Whether the lane records histograms, by its database (set at start-up: `recordHistograms`). */
const histogramsOn = new WeakMap<SqlStorage, boolean>();

/** At start-up: whether this database's lane records the histograms of waits and runs. */
export function recordHistograms(sql: SqlStorage, on: boolean): void {
  histogramsOn.set(sql, on);
}

/** Whether waits and runs are observed. */
function observing(sql: SqlStorage): boolean {
  return histogramsOn.get(sql) === true && !leftOut.get(sql)?.has("histograms");
}

/** The bucket of a value in ms: the first bound it is at or under, or past the last bound. */
function bucketOf(ms: number): number {
  for (let i = 0; i < HISTOGRAM_BOUNDS_MS.length; i++) if (ms <= HISTOGRAM_BOUNDS_MS[i]!) return i;
  return HISTOGRAM_BOUNDS_MS.length;
}

/** How an attempt ended, as the run histogram labels it: the outcome, or how the job went back to queued. */
function runLabel(to: Snap): string {
  if (to.state !== "queued") return to.outcome ?? "";
  if (to.attempt_end === "retry") return "retried";
  if (to.attempt_end === "recovery") return "recovered";
  return to.lease_token === null ? "snoozed" : "released";
}

const active = (s: Snap | null) => s !== null && (s.state === "running" || s.state === "completing");
const isBlocked = (s: Snap | null) => s !== null && s.state === "queued" && s.blocked > 0;

/**
 * Writes what `changes` change of the upkeep, in the caller's transaction (a statement's changes,
 * right after it: a read of the counts that follows sees them). `now`: the statement's instant,
 * whose minute the history counts it in (null: a deletion, which counts in the minute being counted).
 */
export function keepUpkeep(sql: SqlStorage, changes: Iterable<Change>, now: number | null): void {
  const d: number[] = new Array<number>(COUNT_COLUMNS.length).fill(0);
  const kinds = new Map<string, [number, number]>();
  const queues = new Map<string, [number, number]>();
  const out = leftOut.get(sql);
  const observe = observing(sql);
  const observations = new Map<string, [string, string, number, number, number]>();
  const add = (map: Map<string, [number, number]>, key: string, q: number, r: number) => {
    const at = map.get(key);
    if (at) (at[0] += q), (at[1] += r);
    else map.set(key, [q, r]);
  };
  const observation = (name: string, outcome: string, ms: number) => {
    const v = Math.max(0, ms);
    const bucket = bucketOf(v);
    const key = `${name}\u0000${outcome}\u0000${bucket}`;
    const at = observations.get(key);
    if (at) (at[3] += 1), (at[4] += v);
    else observations.set(key, [name, outcome, bucket, 1, v]);
  };
  let touched = false;
  for (const { old, new: to } of changes) {
    touched = true;
    // The state counts, settled ones by outcome.
    for (const [s, sign] of [[old, -1], [to, 1]] as const) {
      if (s === null) continue;
      if (s.state === "queued") d[Q]! += sign;
      else if (s.state === "running") d[R]! += sign;
      else if (s.state === "completing") d[C]! += sign;
      else if (s.outcome !== null) d[SETTLED_AT[s.outcome]]! += sign;
      if (s.state === "queued" || s.state === "running") add(kinds, s.kind, sign * +(s.state === "queued"), sign * +(s.state === "running"));
      if (s.queue !== null && s.state !== "settled") add(queues, s.queue, sign * +(s.state === "queued"), sign * +active(s));
    }
    d[BLOCKED]! += +isBlocked(to) - +isBlocked(old);
    // The lifetime totals: what moved, never lowered.
    if (to === null) continue;
    if (old === null) {
      d[ENQ]! += 1;
      if (to.state === "running") d[CLAIMED]! += 1;
      if (observe && to.state === "running" && to.claimed_at !== null) observation("wait", "", to.claimed_at - Math.max(to.run_at, to.created_at));
      continue;
    }
    if (old.state === "queued" && to.state === "running") {
      d[CLAIMED]! += 1;
      if (observe && to.claimed_at !== null) observation("wait", "", to.claimed_at - Math.max(old.run_at, old.updated_at));
    }
    if (old.outcome === null && to.outcome !== null) d[TOTAL_OF[to.outcome]]! += 1;
    if (old.state === "running" && to.state === "queued") {
      if (to.attempt_end === "retry") d[RETRIED]! += 1;
      else if (to.attempt_end === "recovery") d[RECOVERED]! += 1;
      if (to.lease_token === null) d[SNOOZED]! += 1;
    }
    if (observe && old.state === "running" && to.state !== "running" && old.claimed_at !== null) observation("run", runLabel(to), to.updated_at - old.claimed_at);
  }
  if (!touched) return;
  const counted = d.some((x) => x !== 0);
  if ((out === undefined || out.size === 0) && kinds.size <= 1 && queues.size <= 1 && observations.size <= 1) {
    const minute = counted && now !== null ? Math.floor(now / MINUTE_MS) : null;
    const kind = moved(kinds), queue = moved(queues);
    const [observed] = observations.values();
    if (counted || kind || queue || observed) {
      sql.exec(SINK_SQL, ...(counted ? d : NO_COUNTS), minute, ...(kind ?? NO_ROW), ...(queue ?? NO_ROW), ...(observed ?? NO_OBSERVATION));
    }
    return;
  }
  // The counts and the history's roll through the sink, as above; the kinds, queues and buckets one by one.
  if (counted && !out?.has("counts")) sql.exec(SINK_SQL, ...d, now === null || out?.has("history") ? null : Math.floor(now / MINUTE_MS), ...NO_ROW, ...NO_ROW, ...NO_OBSERVATION);
  if (!out?.has("kinds")) for (const [kind, [q, r]] of kinds) if (q !== 0 || r !== 0) sql.exec(q >= 0 && r >= 0 ? KIND_ADD_SQL : KIND_MOVE_SQL, kind, q, r);
  if (!out?.has("queues")) for (const [name, [q, a]] of queues) if (q !== 0 || a !== 0) sql.exec(q >= 0 && a >= 0 ? QUEUE_ADD_SQL : QUEUE_MOVE_SQL, name, q, a);
  if (observations.size === 1) sql.exec(OBSERVE_ONE_SQL, ...observations.values().next().value!);
  else if (observations.size > 1) sql.exec(OBSERVE_SQL, JSON.stringify([...observations.values()]));
}
