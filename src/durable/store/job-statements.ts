/**
 * Every SQL statement of a lane's jobs, by name, with its parameter legend. `now` is always a
 * parameter; nothing here reads the clock. The query-plan test reads the hot ones (`HOT_STATEMENTS`)
 * and fails on a full table scan.
 */
import { MAX_JOB_ERRORS } from "../../shared/defaults.js";
import { FENCE, fenceClause } from "../attempts/fence.js";
import { JOB_COLUMNS, SUBJECT_COLUMNS } from "./job-row.js";

const INSERT_COLUMNS = `id, kind, payload, queue, priority, run_at, max_attempts, backoff_base_ms, backoff_max_ms,
  timeout_ms, max_recoveries, recovery_window_ms, state, created_at, updated_at`;

/**
 * A queued job `j` may start only if it heads its queue and nothing of its queue runs or completes:
 * a completing job holds its queue until its outcome is delivered, so a queue's outcomes are
 * delivered in order (issue 11).
 */
const IS_QUEUE_HEAD = `(j.queue IS NULL OR (
  NOT EXISTS (SELECT 1 FROM jobs r WHERE r.queue = j.queue AND r.state IN ('running', 'completing'))
  AND NOT EXISTS (SELECT 1 FROM jobs h WHERE h.queue = j.queue AND h.state = 'queued'
    AND (h.priority > j.priority OR (h.priority = j.priority AND h.seq < j.seq)))))`;

/**
 * The assignment that adds the ending attempt to `errors` (its attempt and generation as the row holds
 * them before the update), dropping the oldest past `MAX_JOB_ERRORS`; given the SQL of the message and now.
 */
const APPEND_ERROR = (message: string, now: string) => `errors = json_insert(
    CASE WHEN json_array_length(errors) >= ${MAX_JOB_ERRORS} THEN json_remove(errors, '$[0]') ELSE errors END,
    '$[#]', json_object('attempt', attempts, 'generation', generation, 'message', ${message}, 'at', ${now}))`;

// ---- enqueue ----

/**
 * One new job; ?1…?12 `specValues`, ?13 now. An id that exists fails the statement (the unique
 * constraint rolls back that statement alone, trigger and all): `ON CONFLICT DO NOTHING RETURNING`
 * cost every enqueue a result row to read, where only a repeated id needs to learn anything.
 */
export const INSERT_ONE_SQL = `INSERT INTO jobs (${INSERT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'queued', ?13, ?13)`;

/**
 * One new job started at once by the lane's dispatcher (issue 10): inserted running, its first lease
 * minted, when a slot is free — one statement where a queued insert and a claim take two, and none of
 * the queued-only indexes written. Returns its seq; nothing when the id exists or no slot is free (the
 * caller then enqueues it queued). ?1…?12 `specValues`, ?13 now, ?14 token, ?15 lease until,
 * ?16 slots held besides running rows, ?17 concurrency.
 */
export const INSERT_STARTED_SQL = `INSERT INTO jobs (${INSERT_COLUMNS}, attempts, generation, lease_token, lease_until, lease_holder, claimed_at)
  SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'running', ?13, ?13, 1, 1, ?14, ?15, 'lane', ?13
  WHERE (SELECT running FROM lane_counts WHERE id = 1) + ?16 < ?17
  ON CONFLICT (id) DO NOTHING RETURNING seq`;

/** Many new jobs from one JSON array of `specValues` rows, in order; returns the ids it inserted. ?1 rows, ?2 now. */
export const INSERT_MANY_SQL = `INSERT INTO jobs (${INSERT_COLUMNS})
  SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9,
    value->>10, value->>11, 'queued', ?2, ?2
  FROM json_each(?1) WHERE true ORDER BY key
  ON CONFLICT (id) DO NOTHING RETURNING id`;

// ---- read ----

/** One job by id. ?1 id. */
export const JOB_BY_ID_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?1`;

/** Jobs by id, for the duplicates of a batch. ?1 JSON array of ids. */
export const JOBS_BY_IDS_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id IN (SELECT value FROM json_each(?1))`;

/** A page of jobs in enqueue order. ?1 after seq, ?2 state, ?3 outcome, ?4 kind, ?5 queue (each null: any), ?6 limit. */
export const LIST_SQL = `SELECT ${JOB_COLUMNS} FROM jobs
  WHERE seq > ?1 AND (?2 IS NULL OR state = +?2) AND (?3 IS NULL OR outcome = +?3)
    AND (?4 IS NULL OR kind = +?4) AND (?5 IS NULL OR queue = +?5)
  ORDER BY seq LIMIT +?6`;

// ---- claim ----

/**
 * A bound on what a queued job `j` adds to a claim's answer beyond `JOB_JSON_OVERHEAD` (page.ts): its
 * payload, error (escaped, at most 6×), errors and progress as stored. A pull claim adds its
 * checkpoints' bytes apart (checkpoint-statements.ts), so that an in-process claim never asks.
 */
const CANDIDATE_BYTES = `octet_length(j.payload) + 6 * COALESCE(length(j.error), 0) + octet_length(j.errors)
    + COALESCE(octet_length(j.progress), 0)`;

/**
 * Due queued jobs a claimer may take, best first, with the bytes each adds to a page. ?1 now,
 * ?2 kinds excluded (JSON array), ?3 job ids excluded (JSON array), ?4 limit.
 */
export const CLAIM_CANDIDATES_SQL = `SELECT j.seq, j.priority, ${CANDIDATE_BYTES} AS bytes FROM jobs j
  WHERE j.state = 'queued' AND j.run_at <= ?1
    AND j.kind NOT IN (SELECT value FROM json_each(?2))
    AND j.id NOT IN (SELECT value FROM json_each(?3))
    AND ${IS_QUEUE_HEAD}
  ORDER BY j.priority DESC, j.seq LIMIT +?4`;

/**
 * Due queued jobs of one kind a claimer may take, best first: asked once per kind on `jobs_kind`, so
 * that a backlog of other kinds is never walked. ?1 now, ?2 kind, ?3 job ids excluded (JSON array), ?4 limit.
 */
export const CLAIM_KIND_CANDIDATES_SQL = `SELECT j.seq, j.priority, ${CANDIDATE_BYTES} AS bytes FROM jobs j
  WHERE j.state = 'queued' AND j.kind = +?2 AND j.run_at <= ?1
    AND j.id NOT IN (SELECT value FROM json_each(?3))
    AND ${IS_QUEUE_HEAD}
  ORDER BY j.priority DESC, j.seq LIMIT +?4`;

/** Claims the given queued jobs, each with its own token. ?1 JSON [[seq, token], …], ?2 lease until, ?3 holder, ?4 now. */
export const CLAIM_SQL = `UPDATE jobs SET state = 'running', attempts = attempts + 1, generation = generation + 1,
    lease_token = c.c_token, lease_until = ?2, lease_holder = ?3, claimed_at = ?4, updated_at = ?4, attempt_end = NULL
  FROM (SELECT value->>0 AS c_seq, value->>1 AS c_token FROM json_each(?1)) AS c
  WHERE jobs.seq = c.c_seq AND jobs.state = 'queued'
  RETURNING ${JOB_COLUMNS}`;

/** How many jobs run: the kept count (counts.ts), not a count of rows. */
export const RUNNING_COUNT_SQL = `SELECT running AS n FROM lane_counts WHERE id = 1`;

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

/** The lease of a running job, for its in-process holder. ?1 id. */
export const LEASE_OF_SQL = `SELECT lease_token, lease_until FROM jobs WHERE id = ?1 AND state = 'running'`;

// ---- cancel, requeue ----

/** A running job's cancellation requested. ?1 seq, ?2 reason, ?3 now. */
export const REQUEST_CANCEL_SQL = `UPDATE jobs SET cancel_requested = 1, cancel_reason = ?2, updated_at = ?3 WHERE seq = ?1 RETURNING ${JOB_COLUMNS}`;

/** A queued or running job settled `cancelled`. ?1 seq, ?2 its state now, ?3 state (completing or settled), ?4 reason, ?5 settled at, ?6 now. */
export const SETTLE_CANCELLED_SQL = `UPDATE jobs SET state = ?3, outcome = 'cancelled', cancel_requested = 1,
    cancel_reason = COALESCE(?4, cancel_reason), settled_at = ?5, updated_at = ?6
  WHERE seq = ?1 AND state = ?2 RETURNING ${JOB_COLUMNS}`;

/** A settled job queued again with a fresh attempt budget. ?1 seq, ?2 now. */
export const REQUEUE_SQL = `UPDATE jobs SET state = 'queued', outcome = NULL, attempts = 0, run_at = ?2, result = NULL,
    cancel_requested = 0, cancel_reason = NULL, recovery_count = 0, recovery_window_start = NULL,
    settled_at = NULL, updated_at = ?2, attempt_end = NULL
  WHERE seq = ?1 AND state = 'settled' RETURNING ${JOB_COLUMNS}`;

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

/** Ends, as of now, every unexpired lease held by the lane's own dispatcher. ?1 now. */
export const EXPIRE_LANE_LEASES_SQL = `UPDATE jobs SET lease_until = ?1 WHERE state = 'running' AND lease_holder = 'lane' AND lease_until > ?1`;

/** Jobs whose outcome is recorded but not yet delivered, oldest first. ?1 limit. */
export const COMPLETING_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE state = 'completing' ORDER BY seq LIMIT +?1`;

/** Second phase of an outcome: delivered, now settled. ?1 id, ?2 now. */
export const MARK_SETTLED_SQL = `UPDATE jobs SET state = 'settled', settled_at = ?2, updated_at = ?2 WHERE id = ?1 AND state = 'completing'
  RETURNING ${JOB_COLUMNS}`;

/** Running jobs of the lane's own dispatcher whose cancellation was requested (the wake and the alarm's wind-up). */
export const LANE_CANCELS_SQL = `SELECT id, lease_token FROM jobs WHERE state = 'running' AND cancel_requested = 1 AND lease_holder = 'lane'`;

// ---- the wake's terms (src/durable/wake.ts) ----

/** How many outcomes wait for delivery and how many jobs run (both kept counts), the earliest lease
 *  expiry and how many in-process cancellations wait, in one statement. */
export const WAKE_STATE_SQL = `SELECT
  (SELECT completing FROM lane_counts WHERE id = 1) AS completing,
  (SELECT MIN(lease_until) FROM jobs WHERE state = 'running') AS lease,
  (${RUNNING_COUNT_SQL}) AS running,
  (SELECT COUNT(*) FROM jobs WHERE state = 'running' AND cancel_requested = 1 AND lease_holder = 'lane') AS cancels`;

/** Is a queue head of one in-process kind due now (asked once per kind, on `jobs_kind`). ?1 now, ?2 kind, ?3 job ids excluded (JSON array). */
export const DUE_EXECUTOR_HEAD_SQL = `SELECT 1 FROM jobs j WHERE j.state = 'queued' AND j.kind = ?2 AND j.run_at <= ?1
  AND j.id NOT IN (SELECT value FROM json_each(?3)) AND ${IS_QUEUE_HEAD} LIMIT 1`;

/** The earliest future runAt of a queue head. ?1 now. */
export const EARLIEST_FUTURE_HEAD_SQL = `SELECT j.run_at FROM jobs j WHERE j.state = 'queued' AND j.run_at > ?1 AND ${IS_QUEUE_HEAD}
  ORDER BY j.run_at LIMIT 1`;

/** The statements on the hot paths, with bindings for a plan, for the query-plan test. */
export const HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the claim (any kind)", CLAIM_CANDIDATES_SQL, (now) => [now, '["c"]', "[]", 10]],
  ["the claim (one kind, as the dispatcher asks)", CLAIM_KIND_CANDIDATES_SQL, (now) => [now, "a", '["x"]', 10]],
  ["the claim itself (many jobs, one statement)", CLAIM_SQL, (now) => ['[[1,"t"],[2,"u"]]', now + 1, "lane", now]],
  ["a fenced completion", COMPLETE_SQL, (now) => ["a", "t", now, "settled", "1", now]],
  ["in-process completions (many, one statement)", COMPLETE_MANY_SQL, (now) => ['[["a","t","1"]]', "settled", now, now]],
  ["an in-process completion alone in its turn", COMPLETE_ONE_SQL, (now) => ["a", "t", now, "settled", "1", now]],
  ["the wake: outcomes, earliest lease, running count, cancellations at once", WAKE_STATE_SQL, () => []],
  ["the wake: a due in-process head", DUE_EXECUTOR_HEAD_SQL, (now) => [now, "a", "[]"]],
  ["the wake: earliest future head", EARLIEST_FUTURE_HEAD_SQL, (now) => [now]],
  ["lease recovery", EXPIRED_LEASES_SQL, (now) => [now, 500]],
];
