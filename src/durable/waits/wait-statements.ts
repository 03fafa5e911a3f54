/**
 * The SQL of jobs that wait on waitpoints (docs/api.md "Waitpoints"): what a job knows of each
 * waitpoint it waits on (`job_waits`, migration 25), the waiting jobs a settling waitpoint tells, and
 * the write that ends an attempt in a wait. `now` is always a parameter.
 */
import { JOB_COLUMNS } from "../store/job-row.js";
import { FENCE } from "../attempts/fence.js";

/** The place of an attempt's first wait among a job's waits: past every `dependsOn` item. */
export const FIRST_ATTEMPT_WAIT = 1_000;

/** The waitpoints of this object named by a job's enqueue. ?1 JSON array of ids. */
export const WAITPOINT_STATES_SQL = `SELECT id, state, result FROM waitpoints WHERE id IN (SELECT value FROM json_each(?1))`;

/**
 * What a job knows of its waitpoints when it is written, or when an attempt waits. ?1 job seq, ?2
 * JSON [[position, lane, waitpoint, outcome, result, told at, registration token], …].
 */
export const INSERT_WAITS_SQL = `INSERT INTO job_waits (job_seq, position, lane, waitpoint, outcome, result, told_at, token)
  SELECT ?1, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6 FROM json_each(?2) WHERE true`;

/**
 * The jobs of this object waiting on waitpoint ?2 of lane ?1 that have not heard, told its settlement:
 * ?3 outcome, ?4 result, ?5 now. Answers each job's seq and whether the wait was a `dependsOn` item.
 */
export const TELL_WAITS_SQL = `UPDATE job_waits SET outcome = ?3, result = ?4, told_at = ?5
  WHERE lane = ?1 AND waitpoint = ?2 AND outcome IS NULL RETURNING job_seq, position`;

/** How many jobs of this object wait on waitpoint ?2 of lane ?1 now (blocked, not yet told). */
export const COUNT_WAITING_SQL = `SELECT COUNT(*) AS n FROM job_waits w JOIN jobs j ON j.seq = w.job_seq
  WHERE w.lane = ?1 AND w.waitpoint = ?2 AND w.outcome IS NULL AND j.state = 'queued' AND j.blocked > 0`;

/**
 * A job's earlier attempt wait on waitpoint ?3 of lane ?2, if any, and the same if it has not heard
 * (its job cancelled while it waited, then requeued); and where its next wait goes. ?1 job seq.
 */
export const ATTEMPT_WAITS_SQL = `SELECT MAX(position) AS last, MAX(CASE WHEN lane = ?2 AND waitpoint = ?3 THEN position END) AS earlier,
    MAX(CASE WHEN lane = ?2 AND waitpoint = ?3 AND outcome IS NULL THEN position END) AS unheard
  FROM job_waits WHERE job_seq = ?1 AND position >= ${FIRST_ATTEMPT_WAIT}`;

/** A job's unheard wait (?1 job seq, ?2 its position) hears its settled waitpoint at its next wait: ?3 outcome, ?4 result, ?5 now. */
export const TELL_ATTEMPT_WAIT_SQL = `UPDATE job_waits SET outcome = ?3, result = ?4, told_at = ?5 WHERE job_seq = ?1 AND position = ?2 AND outcome IS NULL`;

/** The seq of the job whose lease token ?2 holds. ?1 id, ?2 token, ?3 now. */
export const HELD_SEQ_SQL = `SELECT seq FROM jobs WHERE ${FENCE}`;

/**
 * The attempt ends in a wait: the lease ends (its token cleared, so it answers lease_superseded from
 * now on), the attempt is given back, and the job is blocked on the waitpoint (?4 1), or queued at
 * once when it has settled (?4 0). ?1 seq, ?2 now, ?3 the blocked run_at, ?4 blocked.
 */
export const WAIT_SQL = `UPDATE jobs SET state = 'queued', attempts = attempts - 1, updated_at = ?2, attempt_end = 'release',
    lease_token = NULL, lease_until = NULL, lease_holder = NULL,
    blocked = ?4, run_at = CASE WHEN ?4 > 0 THEN ?3 ELSE ?2 END, blocked_run_at = CASE WHEN ?4 > 0 THEN ?2 ELSE NULL END
  WHERE seq = ?1 AND state = 'running' RETURNING ${JOB_COLUMNS}`;

/** A job's row by its seq. ?1 seq. */
export const JOB_BY_SEQ_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE seq = ?1`;

/** Whether any job of this object waits on a waitpoint (its deletion then deletes its waits). */
export const ANY_WAITS_SQL = `SELECT 1 FROM job_waits LIMIT 1`;

/** What the jobs know of their waitpoints, deleted with them. ?1 JSON array of job seqs. */
export const DELETE_OWNED_WAITS_SQL = `DELETE FROM job_waits WHERE job_seq IN (SELECT value FROM json_each(?1))`;

// ---- the waitpoint's side: waiters of other objects, and the notices they are owed ----

/** Due notices of settled waitpoints, oldest first, with each waitpoint's result (kept while untold). ?1 now, ?2 limit. */
export const DUE_WAITPOINT_NOTICES_SQL = `SELECT o.seq, o.waitpoint, o.outcome, o.lane, o.id, o.attempts, w.result
  FROM waitpoint_outbox o LEFT JOIN waitpoints w ON w.id = o.waitpoint
  WHERE o.next_at <= ?1 ORDER BY o.next_at, o.seq LIMIT +?2`;

/** The statements of waits on hot paths, with bindings for a plan, for the query-plan test. */
export const WAIT_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["a settling waitpoint's waiting jobs", TELL_WAITS_SQL, (now) => ["l", "w", "completed", null, now]],
  ["a waitpoint's waiters", COUNT_WAITING_SQL, () => ["l", "w"]],
  ["a job's attempt waits", ATTEMPT_WAITS_SQL, () => [1, "l", "w"]],
  ["a deleted job's waits", DELETE_OWNED_WAITS_SQL, () => ["[1,2]"]],
];
