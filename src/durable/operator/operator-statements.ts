/**
 * The statements of an operator's queues (queues.ts: a queue's holder, head, settings, purge) and
 * of retention (retention.ts: the settled jobs past their horizon).
 */
import type { Outcome } from "../../shared/job.js";
import { SUBJECT_COLUMNS } from "../store/job-row.js";

// ---- queues ----

/** The job that holds a queue: running, or completing (its outcome is delivered before the next starts). ?1 queue. */
export const QUEUE_HOLDER_SQL = `SELECT id, cancel_requested FROM jobs WHERE queue = +?1 AND state IN ('running', 'completing') ORDER BY seq LIMIT 1`;

/** The queued job of a queue that runs next, due or not: the queue's head. ?1 queue. */
export const QUEUE_NEXT_SQL = `SELECT id, cancel_requested FROM jobs WHERE queue = +?1 AND state = 'queued' ORDER BY priority DESC, seq LIMIT 1`;

/** A queue's settings and kept counts. ?1 queue. */
export const QUEUE_ROW_SQL = `SELECT concurrency, rate_limit, rate_period_ms, queued, active FROM queues WHERE name = ?1`;

/** Queued jobs of a queue enqueued up to a seq, to purge. ?1 queue, ?2 last seq, ?3 limit. */
export const QUEUE_PURGE_SQL = `SELECT seq, id FROM jobs WHERE queue = ?1 AND state = 'queued' AND seq <= ?2 LIMIT +?3`;

/**
 * A queue's settings, set by an operator (the row made if the queue has none yet, what it does not
 * name from the lane's queue defaults); what it names is kept as named from then on; a rate limit
 * that changes starts from a full bucket. ?1 queue, ?2 concurrency (null: unchanged), ?3 whether the
 * rate limit is given, ?4 limit, ?5 period (both null: removed), ?6 the default concurrency, ?7 and
 * ?8 the default rate limit and period.
 */
export const CONFIGURE_SQL = `INSERT INTO queues (name, concurrency, rate_limit, rate_period_ms, configured, concurrency_named, rate_named)
  VALUES (?1, COALESCE(?2, ?6), CASE WHEN ?3 THEN ?4 ELSE ?7 END, CASE WHEN ?3 THEN ?5 ELSE ?8 END, 1, ?2 IS NOT NULL, ?3)
  ON CONFLICT (name) DO UPDATE SET concurrency = COALESCE(?2, concurrency), configured = 1,
    concurrency_named = MAX(concurrency_named, ?2 IS NOT NULL), rate_named = MAX(rate_named, ?3),
    bucket_units = CASE WHEN ?3 AND (rate_limit IS NOT ?4 OR rate_period_ms IS NOT ?5) THEN NULL ELSE bucket_units END,
    bucket_at = CASE WHEN ?3 AND (rate_limit IS NOT ?4 OR rate_period_ms IS NOT ?5) THEN NULL ELSE bucket_at END,
    rate_limit = CASE WHEN ?3 THEN ?4 ELSE rate_limit END,
    rate_period_ms = CASE WHEN ?3 THEN ?5 ELSE rate_period_ms END`;

/** Whether any queue has a rate limit. */
export const ANY_RATE_LIMITED_SQL = `SELECT EXISTS (SELECT 1 FROM queues INDEXED BY queues_rate_limited WHERE rate_limit IS NOT NULL) AS any`;

/** Queue rows with neither jobs nor settings of an operator's: nothing to keep. */
export const PRUNE_SQL = `DELETE FROM queues WHERE queued = 0 AND active = 0 AND configured = 0`;

/** The newest job's seq (0: none yet). */
export const LAST_SEQ_SQL = `SELECT COALESCE(MAX(seq), 0) AS seq FROM jobs`;

// ---- retention ----

/**
 * A settled job is kept while its dependents have not all been told (its outbox rows, which read its
 * result, are not all acknowledged): one probe of `outbox_by_dependency`, an empty range for almost all.
 */
export const UNTOLD = `EXISTS (SELECT 1 FROM outbox o WHERE o.dep_seq = jobs.seq)`;

/** The settled jobs of one outcome settled before a cutoff, oldest first, on `jobs_settled_by_outcome`. */
const settledBefore = (outcome: Outcome, cutoff: string) => `SELECT * FROM (SELECT seq, id, settled_at FROM jobs
  WHERE state = 'settled' AND outcome = '${outcome}' AND settled_at < ${cutoff} AND NOT ${UNTOLD} ORDER BY settled_at, seq LIMIT +?5)`;

/**
 * Settled jobs settled before their outcome's cutoff, oldest first (then in enqueue order): ?1 completed, ?2 failed,
 * ?3 cancelled, ?4 interrupted (null: none of that outcome), ?5 limit. One range per outcome, merged.
 */
export const EXPIRED_SQL = `SELECT seq, id FROM (
  ${settledBefore("completed", "?1")} UNION ALL ${settledBefore("failed", "?2")}
  UNION ALL ${settledBefore("cancelled", "?3")} UNION ALL ${settledBefore("interrupted", "?4")}
) ORDER BY settled_at, seq LIMIT +?5`;

const oldest = (outcome: Outcome) =>
  `(SELECT settled_at FROM jobs WHERE state = 'settled' AND outcome = '${outcome}' AND NOT ${UNTOLD} ORDER BY settled_at LIMIT 1) AS ${outcome}`;

/** When the oldest settled job of each outcome settled (null: none), in one statement. */
export const OLDEST_SETTLED_SQL = `SELECT ${oldest("completed")}, ${oldest("failed")}, ${oldest("cancelled")}, ${oldest("interrupted")}`;

/**
 * Running jobs, in enqueue order: the few of them, from `jobs_lease`, sorted. Named, since the
 * planner would otherwise walk every job in seq order to find them. ?1 limit.
 */
export const RUNNING_TO_FAIL_SQL = `SELECT seq, id, cancel_requested FROM jobs INDEXED BY jobs_lease WHERE state = 'running' ORDER BY seq LIMIT +?1`;

/** Queued jobs in enqueue order, on `jobs_queued`. ?1 limit. */
export const QUEUED_TO_FAIL_SQL = `SELECT seq, id, cancel_requested FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT +?1`;

/** Settles the given queued or running jobs `failed`. ?1 JSON array of seqs, ?2 state (completing or settled), ?3 error, ?4 settled at, ?5 now. */
export const FAIL_JOBS_SQL = `UPDATE jobs SET state = ?2, outcome = 'failed', error = ?3, lease_token = NULL, settled_at = ?4, updated_at = ?5
  WHERE seq IN (SELECT value FROM json_each(?1)) AND state IN ('queued', 'running')
  RETURNING ${SUBJECT_COLUMNS}, blocked`;

/** Settles the given cancel-requested running jobs `cancelled`. ?1 JSON array of seqs, ?2 state, ?3 settled at, ?4 now. */
export const CANCEL_JOBS_SQL = `UPDATE jobs SET state = ?2, outcome = 'cancelled', settled_at = ?3, updated_at = ?4
  WHERE seq IN (SELECT value FROM json_each(?1)) AND state = 'running' AND cancel_requested = 1
  RETURNING ${SUBJECT_COLUMNS}, blocked`;
