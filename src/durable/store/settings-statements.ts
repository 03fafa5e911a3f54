/** The statements of the lane's settings row (settings.ts runs them; this object is the row's only writer). */

/** The whole row, read once per change. */
export const READ_SQL = `SELECT name, concurrency, paused, registered, metrics_reported, retention, rate_limit, rate_period_ms, bucket_units, bucket_at, fairness, dead_letter FROM lane WHERE id = 1`;

/** The object's stored name (null: never stored). */
export const LANE_NAME_SQL = `SELECT name FROM lane WHERE id = 1`;

/** Stores the object's name unless stored already. ?1 name. */
export const STORE_NAME_SQL = `UPDATE lane SET name = ?1 WHERE id = 1 AND name IS NOT ?1`;

/** That the registry knows the lane. */
export const REGISTERED_SQL = `UPDATE lane SET registered = 1 WHERE id = 1`;

/** Whether the registry may hold a metrics report of this lane. ?1 0 or 1. */
export const METRICS_REPORTED_SQL = `UPDATE lane SET metrics_reported = ?1 WHERE id = 1`;

/** The stored retention choice (JSON; null: the defaults). */
export const RETENTION_SQL = `SELECT retention FROM lane WHERE id = 1`;

/** A PATCH's settings, each kept when null. ?1 concurrency, ?2 paused, ?3 retention JSON, ?4 fairness. */
export const CONFIGURE_SQL = `UPDATE lane SET concurrency = COALESCE(?1, concurrency), paused = COALESCE(?2, paused), retention = COALESCE(?3, retention),
  fairness = COALESCE(?4, fairness) WHERE id = 1`;

/** A new rate limit (or none), its bucket full again. ?1 limit, ?2 period. */
export const RATE_LIMIT_SQL = `UPDATE lane SET rate_limit = ?1, rate_period_ms = ?2, bucket_units = NULL, bucket_at = NULL WHERE id = 1`;

/** The lane's bucket after a draw. ?1 units, ?2 at. */
export const DRAW_SQL = `UPDATE lane SET bucket_units = ?1, bucket_at = ?2 WHERE id = 1`;

/** A job outside any queue started (round-robin counts those as one queue). ?1 now. */
export const UNQUEUED_STARTED_SQL = `UPDATE lane SET unqueued_started_at = ?1 WHERE id = 1`;

/** The lane's dead-letter lane (or none). ?1 lane name or null. */
export const DEAD_LETTER_SQL = `UPDATE lane SET dead_letter = ?1 WHERE id = 1`;
