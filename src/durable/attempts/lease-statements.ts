/**
 * The SQL of attempts once they hold a lease: the writes their holder makes through the fence
 * (renew, complete, fail, release), cancellation, the recovery of expired leases, and the second
 * phase of outcomes. Every fenced statement builds its WHERE from `fence.ts`. `now` is always a parameter.
 */
import { MAX_JOB_ERRORS } from "../../shared/defaults.js";
import { JOB_COLUMNS, SUBJECT_COLUMNS } from "../store/job-row.js";
import { FENCE, fenceClause } from "./fence.js";

/**
 * The assignment that adds the ending attempt to `errors` (its attempt and generation as the row holds
 * them before the update), dropping the oldest past `MAX_JOB_ERRORS`; given the SQL of the message and now.
 */
const APPEND_ERROR = (message: string, now: string) => `errors = json_insert(
    CASE WHEN json_array_length(errors) >= ${MAX_JOB_ERRORS} THEN json_remove(errors, '$[0]') ELSE errors END,
    '$[#]', json_object('attempt', attempts, 'generation', generation, 'message', ${message}, 'at', ${now}))`;

// ---- the fence: writes on behalf of an attempt ----

/** A new token and expiry, and progress when given. ?1 id, ?2 token, ?3 now, ?4 new token, ?5 lease until, ?6 progress (JSON; null: unchanged). */
export const RENEW_SQL = `UPDATE jobs SET lease_token = ?4, lease_until = ?5, updated_at = ?3, progress = COALESCE(?6, progress)
  WHERE ${FENCE} RETURNING generation, lease_until`;

/** The attempt's success, answering `returning`. ?1 id, ?2 token, ?3 now, ?4 state (completing or settled), ?5 result, ?6 settled at. */
const completeOne = (returning: string) => `UPDATE jobs SET state = ?4, outcome = 'completed', result = ?5, error = NULL, settled_at = ?6,
    updated_at = ?3
  WHERE ${FENCE} RETURNING ${returning}`;

/** The attempt's success (`completeOne`), answering the whole row. */
export const COMPLETE_SQL = completeOne(JOB_COLUMNS);

/**
 * Completes attempts through the fence, each row by its own token; answers each one's seq too (its
 * checkpoints go in the same transaction). ?1 JSON [[id, token, result], …], ?2 state, ?3 settled at, ?4 now.
 */
export const COMPLETE_MANY_SQL = `UPDATE jobs SET state = ?2, outcome = 'completed', result = c.c_result, error = NULL,
    settled_at = ?3, updated_at = ?4
  FROM (SELECT value->>0 AS c_id, value->>1 AS c_token, value->>2 AS c_result FROM json_each(?1)) AS c
  WHERE ${fenceClause("c.c_id", "c.c_token", "?4")}
  RETURNING seq, ${SUBJECT_COLUMNS}`;

/**
 * One in-process completion through the fence (`completeOne`), answered as `COMPLETE_MANY_SQL` answers
 * each row: a job alone in its turn (a serial lane, a job started in its enqueue's turn) binds its
 * values instead of sending a JSON list to parse and join.
 */
export const COMPLETE_ONE_SQL = completeOne(`seq, ${SUBJECT_COLUMNS}`);

/** What a failing attempt's retry decision reads, through the fence. ?1 id, ?2 token, ?3 now. */
export const HELD_FOR_FAIL_SQL = `SELECT seq, attempts, max_attempts, backoff_base_ms, backoff_max_ms FROM jobs WHERE ${FENCE}`;

/** A failed attempt queued again. ?1 seq, ?2 run at, ?3 error, ?4 now. */
export const RETRY_SQL = `UPDATE jobs SET state = 'queued', run_at = ?2, error = ?3, updated_at = ?4, attempt_end = 'retry',
    ${APPEND_ERROR("?3", "?4")}
  WHERE seq = ?1 RETURNING ${JOB_COLUMNS}`;

/** A failed attempt that ends the job. ?1 seq, ?2 state (completing or settled), ?3 error, ?4 settled at, ?5 now. */
export const FAIL_SQL = `UPDATE jobs SET state = ?2, outcome = 'failed', error = ?3, settled_at = ?4, updated_at = ?5,
    ${APPEND_ERROR("?3", "?5")}
  WHERE seq = ?1 RETURNING ${JOB_COLUMNS}`;

/** The job given back at once, with the attempt it spent. ?1 id, ?2 token, ?3 now. */
export const RELEASE_SQL = `UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_at = ?3, updated_at = ?3, attempt_end = 'release'
  WHERE ${FENCE} RETURNING ${JOB_COLUMNS}`;

/**
 * The attempt snoozes its job: the lease ends (its token cleared, so it answers lease_superseded from
 * now on), the job is queued for ?4 and the attempt given back; checkpoints stay. ?1 id, ?2 token, ?3 now, ?4 run at.
 */
export const SNOOZE_SQL = `UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_at = ?4, updated_at = ?3, attempt_end = 'release',
    lease_token = NULL, lease_until = NULL, lease_holder = NULL
  WHERE ${FENCE} RETURNING ${JOB_COLUMNS}`;

/** Whether the token holds the job's lease now (the fence alone, nothing else checked). ?1 id, ?2 token, ?3 now. */
export const HOLDS_FENCE_SQL = `SELECT 1 FROM jobs WHERE ${FENCE}`;

/** The lease of a running job, for its in-process holder. ?1 id. */
export const LEASE_OF_SQL = `SELECT lease_token, lease_until FROM jobs WHERE id = ?1 AND state = 'running'`;

// ---- cancel, requeue ----

/** A running job's cancellation requested. ?1 seq, ?2 reason, ?3 now. */
export const REQUEST_CANCEL_SQL = `UPDATE jobs SET cancel_requested = 1, cancel_reason = ?2, updated_at = ?3 WHERE seq = ?1 RETURNING ${JOB_COLUMNS}`;

/** A queued or running job settled `cancelled`. ?1 seq, ?2 its state now, ?3 state (completing or settled), ?4 reason, ?5 settled at, ?6 now. */
export const SETTLE_CANCELLED_SQL = `UPDATE jobs SET state = ?3, outcome = 'cancelled', cancel_requested = 1,
    cancel_reason = COALESCE(?4, cancel_reason), settled_at = ?5, updated_at = ?6
  WHERE seq = ?1 AND state = ?2 RETURNING ${JOB_COLUMNS}`;

/** Running jobs of the lane's own dispatcher whose cancellation was requested (the wake and the alarm's wind-up). */
export const LANE_CANCELS_SQL = `SELECT id, lease_token FROM jobs WHERE state = 'running' AND cancel_requested = 1 AND lease_holder = 'lane'`;

// ---- what the alarm does ----

/** Running jobs whose lease ran out, oldest expiry first. ?1 now, ?2 limit. */
export const EXPIRED_LEASES_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE state = 'running' AND lease_until <= ?1
  ORDER BY lease_until LIMIT +?2`;

/** An expired lease's job queued again, its attempt given back. ?1 seq, ?2 now, ?3 recovery count, ?4 window start, ?5 error. */
export const RECOVER_SQL = `UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_at = ?2, recovery_count = ?3,
    recovery_window_start = ?4, error = ?5, updated_at = ?2, attempt_end = 'recovery', ${APPEND_ERROR("?5", "?2")}
  WHERE seq = ?1 AND state = 'running' RETURNING ${JOB_COLUMNS}`;

/** An expired lease's job settled `interrupted`: its recovery budget is spent. ?1 seq, ?2 now, ?3 state, ?4 error, ?5 settled at. */
export const INTERRUPT_SQL = `UPDATE jobs SET state = ?3, outcome = 'interrupted', error = ?4, settled_at = ?5, updated_at = ?2,
    ${APPEND_ERROR("?4", "?2")}
  WHERE seq = ?1 AND state = 'running' RETURNING ${JOB_COLUMNS}`;

/**
 * Leases of the lane's own dispatcher taken by another version of the code (a deploy came since, and
 * their executors died with the old instance): each job queued again as it was, its attempt given
 * back and no recovery spent. A cancel-requested one is left to expire (it settles `cancelled`).
 * ?1 now, ?2 the running version.
 */
export const GIVE_BACK_LANE_LEASES_SQL = `UPDATE jobs SET state = 'queued', attempts = attempts - 1, updated_at = ?1, attempt_end = 'release'
  WHERE state = 'running' AND lease_holder = 'lane' AND lease_version IS NOT ?2 AND cancel_requested = 0
  RETURNING ${SUBJECT_COLUMNS}, blocked, run_at, updated_at, created_at, attempt_end, lease_token`;

/** Ends, as of now, every unexpired lease held by the lane's own dispatcher. ?1 now. */
export const EXPIRE_LANE_LEASES_SQL = `UPDATE jobs SET lease_until = ?1 WHERE state = 'running' AND lease_holder = 'lane' AND lease_until > ?1`;

/** Jobs whose outcome is recorded but not yet delivered, in enqueue order, after a seq. ?1 after seq, ?2 limit. */
export const COMPLETING_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE state = 'completing' AND seq > ?1 ORDER BY seq LIMIT +?2`;

/** Second phase of an outcome: delivered, now settled. ?1 id, ?2 now. */
export const MARK_SETTLED_SQL = `UPDATE jobs SET state = 'settled', settled_at = ?2, updated_at = ?2 WHERE id = ?1 AND state = 'completing'
  RETURNING ${JOB_COLUMNS}`;

/** The statements of leases on hot paths, with bindings for a plan, for the query-plan test. */
export const LEASE_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["a fenced completion", COMPLETE_SQL, (now) => ["a", "t", now, "settled", "1", now]],
  ["in-process completions (many, one statement)", COMPLETE_MANY_SQL, (now) => ['[["a","t","1"]]', "settled", now, now]],
  ["an in-process completion alone in its turn", COMPLETE_ONE_SQL, (now) => ["a", "t", now, "settled", "1", now]],
  ["lease recovery", EXPIRED_LEASES_SQL, (now) => [now, 500]],
];
