/** The kept counts' statements (counts.ts reads and writes them). */

/** The counts of jobs now: by state (a blocked job's row is queued: the kept `queued` counts it too), settled jobs by outcome. */
export const COUNTS_SQL = `SELECT blocked, queued - blocked AS queued, running, completing, completed, failed, cancelled, interrupted FROM lane_counts WHERE id = 1`;

/** The lifetime stats. */
export const STATS_SQL = `SELECT total_enqueued AS enqueued, total_claimed AS claimed, total_completed AS completed, total_failed AS failed,
  total_cancelled AS cancelled, total_interrupted AS interrupted, total_retried AS retried, total_recovered AS recovered, total_lost AS lost,
  total_expired AS expired, total_snoozed AS snoozed, total_debounced AS debounced, total_dead_lettered AS deadLettered
  FROM lane_counts WHERE id = 1`;

/** How many jobs run: the kept count, not a count of rows. */
export const RUNNING_SQL = `SELECT running AS n FROM lane_counts WHERE id = 1`;

/** Queued and running jobs per kind, kinds with any. */
export const KINDS_SQL = `SELECT kind, queued, running FROM kind_counts WHERE queued > 0 OR running > 0 ORDER BY kind`;

/** Kinds with no queued or running job left: their rows go (the upkeep makes them again as needed). */
export const PRUNE_KINDS_SQL = `DELETE FROM kind_counts WHERE queued = 0 AND running = 0`;

/** One in-process attempt lost its lease. */
export const COUNT_LOST_SQL = `UPDATE lane_counts SET total_lost = total_lost + 1 WHERE id = 1`;

/** The earliest runAt of a queued job, on `jobs_run_at` (the lane compares it with now). */
export const EARLIEST_QUEUED_RUN_AT_SQL = `SELECT run_at FROM jobs WHERE state = 'queued' ORDER BY run_at LIMIT 1`;
