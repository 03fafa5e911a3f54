/**
 * Flow control's own statements on the queues' rows: a queue's bucket drawn by the jobs a claim
 * started (and its last start, for round-robin), and the instant the next token comes, for the
 * wake. Both refill by bucket.ts's formula. `now` is always ?1.
 */
import { QUEUE_BUCKET, bucketDrawAtSql, bucketDrawUnitsSql, bucketNextTokenSql, bucketUnitsSql } from "./bucket.js";

/**
 * The queues of just-claimed jobs: each bucket drawn by the jobs it started (refilled to now first),
 * and its last start set (round-robin). ?1 now, ?2 JSON [[queue, jobs started], …].
 */
export const QUEUES_STARTED_SQL = `UPDATE queues SET
    bucket_units = CASE WHEN rate_limit IS NULL THEN NULL ELSE ${bucketDrawUnitsSql(QUEUE_BUCKET(), "s.s_jobs")} END,
    bucket_at = CASE WHEN rate_limit IS NULL THEN NULL ELSE ${bucketDrawAtSql(QUEUE_BUCKET())} END,
    last_started_at = ?1
  FROM (SELECT value->>0 AS s_queue, value->>1 AS s_jobs FROM json_each(?2)) AS s
  WHERE queues.name = s.s_queue`;

/** The bucket of the rows `QUEUE_NEXT_TOKEN_SQL` reads from its subquery: its units already refilled to now. */
const REFILLED = { ...QUEUE_BUCKET(), units: "units" };

/**
 * The earliest instant at which a rate-limited queue with queued jobs and an empty bucket gains a
 * token (the wake's term). ?1 now.
 */
export const QUEUE_NEXT_TOKEN_SQL = `SELECT MIN(${bucketNextTokenSql(REFILLED, "units")}) AS at FROM (
  SELECT rate_limit, rate_period_ms, ${bucketUnitsSql(QUEUE_BUCKET())} AS units
    FROM queues INDEXED BY queues_rate_limited WHERE rate_limit IS NOT NULL AND queued > 0)
  WHERE units < rate_period_ms`;
