/**
 * A job as its row stores it, and the pure mappers between rows, specs and the API's `Job`. Nothing
 * here runs SQL: the store runs statements, this file says what their rows mean.
 */
import { canonicalJson } from "../../shared/json.js";
import type { AttemptError, ClaimedJob, Job, JobRef, JobState, Json, Lease, LeaseView, Outcome, RowState } from "../../shared/job.js";
import type { JobSpec } from "../../shared/job-spec.js";
import { isHeld, refOf, sameHeldPayload } from "../payloads/held.js";

// A spec is the request's, shared with the callers that read their own enqueue's answer; the store's files name it from here.
export type { JobSpec };

/** How a job's last attempt went back to `queued` (null: it has not, or a claim came since). */
export type AttemptEnd = "retry" | "release" | "recovery";

/** A row of `jobs`, column for column. */
export type JobRow = {
  seq: number;
  id: string;
  kind: string;
  payload: string;
  queue: string | null;
  priority: number;
  run_at: number;
  state: RowState;
  outcome: Outcome | null;
  attempts: number;
  max_attempts: number;
  backoff_base_ms: number;
  backoff_max_ms: number;
  timeout_ms: number;
  result: string | null;
  error: string | null;
  cancel_requested: number;
  generation: number;
  lease_token: string | null;
  lease_until: number | null;
  claimed_at: number | null;
  created_at: number;
  updated_at: number;
  settled_at: number | null;
  max_recoveries: number;
  recovery_window_ms: number;
  recovery_count: number;
  recovery_window_start: number | null;
  cancel_reason: string | null;
  lease_holder: "lane" | "consumer" | null;
  attempt_end: AttemptEnd | null;
  /** JSON array of `AttemptError`, oldest first. */
  errors: string;
  /** JSON text; null: no progress reported. */
  progress: string | null;
  ttl_ms: number | null;
  expires_at: number | null;
  debounce: string | null;
  debounce_key: string | null;
  debounce_deadline: number | null;
  depends_on: string | null;
  dependency_failure: "fail" | "ignore" | null;
  /** Dependencies not yet settled: blocked while above 0 (and queued). */
  blocked: number;
  /** Its runAt while blocked (run_at then holds BLOCKED_RUN_AT). */
  blocked_run_at: number | null;
  has_dependents: number;
  traceparent: string | null;
};

/** Every column of `JobRow`, in order: what a statement that answers whole rows selects or returns. */
export const JOB_COLUMNS = `seq, id, kind, payload, queue, priority, run_at, state, outcome, attempts, max_attempts,
  backoff_base_ms, backoff_max_ms, timeout_ms, result, error, cancel_requested, generation, lease_token,
  lease_until, claimed_at, created_at, updated_at, settled_at, max_recoveries, recovery_window_ms,
  recovery_count, recovery_window_start, cancel_reason, lease_holder, attempt_end, errors, progress,
  ttl_ms, expires_at, debounce, debounce_key, debounce_deadline, depends_on, dependency_failure, blocked, blocked_run_at,
  has_dependents, traceparent`;

type Cursor = SqlStorageCursor<Record<string, SqlStorageValue>>;

/**
 * The rows of a statement that answers `JOB_COLUMNS`, read as arrays of values and named here by
 * position: workerd builds each row object key by key, which for 33 columns cost about three times
 * the values' arrays (16 rows: ~140 against ~50 µs), and a claim reads 16 whole rows at a time.
 */
export function jobRows(cursor: Cursor): JobRow[] {
  const rows: JobRow[] = [];
  for (const values of cursor.raw()) rows.push(namedRow(values));
  return rows;
}

/** The rows of a statement that answers `JOB_COLUMNS` and one column after them, each with that column's value. */
export function jobRowsAnd<T extends SqlStorageValue>(cursor: Cursor): [JobRow, T][] {
  const rows: [JobRow, T][] = [];
  for (const values of cursor.raw()) rows.push([namedRow(values), values[values.length - 1] as T]);
  return rows;
}

/** The first row of such a statement, if any. */
export function firstJobRow(cursor: Cursor): JobRow | undefined {
  return jobRows(cursor)[0];
}

/** The one row of such a statement; like `cursor.one()`, a throw unless there is exactly one. */
export function oneJobRow(cursor: Cursor): JobRow {
  const rows = jobRows(cursor);
  if (rows.length !== 1) throw new Error(`expected one job row, got ${rows.length}`);
  return rows[0]!;
}

/** A row's values in `JOB_COLUMNS` order, named. */
function namedRow(v: SqlStorageValue[]): JobRow {
  return {
    seq: v[0] as number,
    id: v[1] as string,
    kind: v[2] as string,
    payload: v[3] as string,
    queue: v[4] as string | null,
    priority: v[5] as number,
    run_at: v[6] as number,
    state: v[7] as RowState,
    outcome: v[8] as Outcome | null,
    attempts: v[9] as number,
    max_attempts: v[10] as number,
    backoff_base_ms: v[11] as number,
    backoff_max_ms: v[12] as number,
    timeout_ms: v[13] as number,
    result: v[14] as string | null,
    error: v[15] as string | null,
    cancel_requested: v[16] as number,
    generation: v[17] as number,
    lease_token: v[18] as string | null,
    lease_until: v[19] as number | null,
    claimed_at: v[20] as number | null,
    created_at: v[21] as number,
    updated_at: v[22] as number,
    settled_at: v[23] as number | null,
    max_recoveries: v[24] as number,
    recovery_window_ms: v[25] as number,
    recovery_count: v[26] as number,
    recovery_window_start: v[27] as number | null,
    cancel_reason: v[28] as string | null,
    lease_holder: v[29] as JobRow["lease_holder"],
    attempt_end: v[30] as AttemptEnd | null,
    errors: v[31] as string,
    progress: v[32] as string | null,
    ttl_ms: v[33] as number | null,
    expires_at: v[34] as number | null,
    debounce: v[35] as string | null,
    debounce_key: v[36] as string | null,
    debounce_deadline: v[37] as number | null,
    depends_on: v[38] as string | null,
    dependency_failure: v[39] as JobRow["dependency_failure"],
    blocked: v[40] as number,
    blocked_run_at: v[41] as number | null,
    has_dependents: v[42] as number,
    traceparent: v[43] as string | null,
  };
}

/** The columns a transition needs: enough for a log line, without parsing payload or result. */
export const SUBJECT_COLUMNS = `id, kind, state, outcome, attempts, generation, claimed_at, traceparent, queue`;

/** The rows of a statement that answers `seq, ${SUBJECT_COLUMNS}`, read by position as `jobRows` reads whole rows. */
export function seqSubjectRows(cursor: Cursor): (SubjectRow & { seq: number })[] {
  const rows: (SubjectRow & { seq: number })[] = [];
  for (const v of cursor.raw()) {
    rows.push({
      seq: v[0] as number, id: v[1] as string, kind: v[2] as string, state: v[3] as RowState, outcome: v[4] as Outcome | null,
      attempts: v[5] as number, generation: v[6] as number, claimed_at: v[7] as number | null, traceparent: v[8] as string | null, queue: v[9] as string | null,
    });
  }
  return rows;
}

/** What a transition says of its job (its trace context: the log line carries its trace id). */
export type TransitionSubject = Pick<Job, "id" | "kind" | "outcome" | "attempts" | "generation" | "traceparent"> & { state: JobState };
export type SubjectRow = TransitionSubject & { claimed_at: number | null; queue: string | null };

/** The API's job from its row. Pure: the lane's name is given, not remembered. */
export function toJob(row: JobRow, lane: string): Job {
  return jobOf(row, lane, row.state === "running" && row.lease_until !== null ? { generation: row.generation, expiresAt: row.lease_until } : null);
}

/**
 * What an enqueue of one job did: wrote it at `at` (its job is `enqueuedJob` of shared/job-spec.ts, unless `job` says what
 * became of it: a job with dependencies may be blocked, or failed at once), found its id's job the
 * same, or replaced the queued job of its debounce key.
 */
export type Inserted = { status: "queued"; at: number; job?: Job; cancelling?: string[] } | { status: "duplicate" | "debounced" | "skipped"; job: Job };

/** A claimed row as its claimer sees it, token and all: built at once, not a job copied with a lease spread over it. */
export function toClaimedJob(row: JobRow, lane: string): ClaimedJob {
  return jobOf(row, lane, { token: row.lease_token!, generation: row.generation, expiresAt: row.lease_until! });
}

/** The job a claim hands its executor: the claimed job without the token (one copy: a claim starts every job through it). */
export function withoutToken(job: ClaimedJob): Job {
  return { ...job, lease: { generation: job.lease.generation, expiresAt: job.lease.expiresAt } };
}

function jobOf<L extends LeaseView | Lease | null>(row: JobRow, lane: string, lease: L): Omit<Job, "lease"> & { lease: L } {
  // A value held in R2 is left out here (its reference said instead); answers of one job read it back (payloads/payload-store.ts).
  const payloadHeld = isHeld(row.payload);
  const resultHeld = isHeld(row.result);
  return {
    id: row.id,
    lane,
    kind: row.kind,
    payload: payloadHeld ? null : (JSON.parse(row.payload) as Json),
    payloadRef: payloadHeld ? refOf(row.payload) : null,
    queue: row.queue,
    priority: row.priority,
    runAt: row.blocked_run_at ?? row.run_at,
    state: stateOf(row),
    outcome: row.outcome,
    attempts: row.attempts,
    generation: row.generation,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    result: row.result === null || resultHeld ? null : (JSON.parse(row.result) as Json),
    resultRef: resultHeld ? refOf(row.result!) : null,
    error: row.error,
    errors: JSON.parse(row.errors) as AttemptError[],
    progress: row.progress === null ? null : (JSON.parse(row.progress) as Json),
    cancelRequested: row.cancel_requested === 1,
    lease,
    expiresAt: row.expires_at,
    dependsOn: row.depends_on === null ? [] : (JSON.parse(row.depends_on) as JobRef[]),
    traceparent: row.traceparent,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    settledAt: row.settled_at,
  };
}

/** A row's state as the API shows it: a queued row with dependencies not yet settled is `blocked`. */
export function stateOf(row: { state: RowState; blocked: number }): JobState {
  return row.state === "queued" && row.blocked > 0 ? "blocked" : row.state;
}

/** The subject of a new job's first transition (none → `queued`): what a transition reads of `newRow`, without the row. */
export function newSubject(spec: JobSpec): TransitionSubject {
  return { id: spec.id, kind: spec.kind, state: "queued", outcome: null, attempts: 0, generation: 0, traceparent: spec.traceparent };
}

/**
 * The row a spec becomes when it is inserted at `now`, as the insert statement writes it. Its job,
 * `toJob(newRow(spec, now), lane)`, is `enqueuedJob(spec, now, lane)` (shared/job-spec.ts), which
 * enqueue answers with instead of reading the row back (a test holds the two equal).
 */
export function newRow(spec: JobSpec, now: number): JobRow {
  return {
    seq: 0,
    id: spec.id,
    kind: spec.kind,
    payload: spec.payload,
    queue: spec.queue,
    priority: spec.priority,
    run_at: spec.runAt,
    state: "queued",
    outcome: null,
    attempts: 0,
    max_attempts: spec.maxAttempts,
    backoff_base_ms: spec.backoffBaseMs,
    backoff_max_ms: spec.backoffMaxMs,
    timeout_ms: spec.timeoutMs,
    result: null,
    error: null,
    cancel_requested: 0,
    generation: 0,
    lease_token: null,
    lease_until: null,
    claimed_at: null,
    created_at: now,
    updated_at: now,
    settled_at: null,
    max_recoveries: spec.maxRecoveries,
    recovery_window_ms: spec.recoveryWindowMs,
    recovery_count: 0,
    recovery_window_start: null,
    cancel_reason: null,
    lease_holder: null,
    attempt_end: null,
    errors: "[]",
    progress: null,
    ttl_ms: spec.ttlMs,
    expires_at: spec.expiresAt,
    debounce: spec.debounce,
    debounce_key: spec.debounceKey,
    debounce_deadline: spec.debounceDeadline,
    depends_on: spec.dependsOn,
    dependency_failure: spec.dependencyFailure,
    blocked: 0,
    blocked_run_at: null,
    has_dependents: 0,
    traceparent: spec.traceparent,
  };
}

/** The values of one new job for the insert statements, in `INSERT_COLUMNS` order. */
export function specValues(spec: JobSpec): (string | number | null)[] {
  return [
    spec.id,
    spec.kind,
    spec.payload,
    spec.queue,
    spec.priority,
    spec.runAt,
    spec.maxAttempts,
    spec.backoffBaseMs,
    spec.backoffMaxMs,
    spec.timeoutMs,
    spec.maxRecoveries,
    spec.recoveryWindowMs,
    spec.ttlMs,
    spec.expiresAt,
    spec.debounce,
    spec.debounceKey,
    spec.debounceDeadline,
    spec.dependsOn,
    spec.dependencyFailure,
    spec.traceparent,
  ];
}

/**
 * What makes two enqueues with one id the same job (docs/api.md, enqueue): the whole spec after
 * defaults, but `runAt` and what follows from the clock (the expiry, the debounce deadline), and the
 * trace context (a retry of the same enqueue from another trace is still the same job).
 */
export type Identity = Omit<JobSpec, "id" | "runAt" | "expiresAt" | "debounceKey" | "debounceDeadline" | "traceparent">;

export function identityOfRow(row: JobRow): Identity {
  return {
    kind: row.kind,
    payload: row.payload,
    queue: row.queue,
    priority: row.priority,
    maxAttempts: row.max_attempts,
    backoffBaseMs: row.backoff_base_ms,
    backoffMaxMs: row.backoff_max_ms,
    timeoutMs: row.timeout_ms,
    maxRecoveries: row.max_recoveries,
    recoveryWindowMs: row.recovery_window_ms,
    ttlMs: row.ttl_ms,
    debounce: row.debounce,
    dependsOn: row.depends_on,
    dependencyFailure: row.dependency_failure,
  };
}

/** Same spec: every field of the identity equal, the payload as JSON whatever its key order. */
export function sameIdentity(a: Identity, b: Identity): boolean {
  return (
    a.kind === b.kind &&
    a.queue === b.queue &&
    a.priority === b.priority &&
    a.maxAttempts === b.maxAttempts &&
    a.backoffBaseMs === b.backoffBaseMs &&
    a.backoffMaxMs === b.backoffMaxMs &&
    a.timeoutMs === b.timeoutMs &&
    a.maxRecoveries === b.maxRecoveries &&
    a.recoveryWindowMs === b.recoveryWindowMs &&
    a.ttlMs === b.ttlMs &&
    a.debounce === b.debounce &&
    a.dependsOn === b.dependsOn &&
    a.dependencyFailure === b.dependencyFailure &&
    (a.payload === b.payload || (sameHeldPayload(a.payload, b.payload) ?? canonicalJson(JSON.parse(a.payload) as Json) === canonicalJson(JSON.parse(b.payload) as Json)))
  );
}
