/**
 * The lane's counts and lifetime stats: one row of `lane_counts`, kept by the triggers of migration 6
 * in the same statement as every job row they follow (insert, change of state or outcome, delete),
 * so reading them costs one row at any number of jobs. The one stat no row can tell, an in-process
 * attempt that lost its lease, is counted here by the lane.
 */
import type { Counts, KindCounts, LaneStats } from "../../shared/job.js";

/** The counts of jobs now: by state (a blocked job's row is queued: the kept `queued` counts it too), settled jobs by outcome. */
const COUNTS_SQL = `SELECT blocked, queued - blocked AS queued, running, completing, completed, failed, cancelled, interrupted FROM lane_counts WHERE id = 1`;

/** The lifetime stats. */
const STATS_SQL = `SELECT total_enqueued AS enqueued, total_claimed AS claimed, total_completed AS completed, total_failed AS failed,
  total_cancelled AS cancelled, total_interrupted AS interrupted, total_retried AS retried, total_recovered AS recovered, total_lost AS lost,
  total_expired AS expired, total_snoozed AS snoozed, total_debounced AS debounced
  FROM lane_counts WHERE id = 1`;

/** How many jobs run: the kept count, not a count of rows. */
const RUNNING_SQL = `SELECT running AS n FROM lane_counts WHERE id = 1`;

/** Queued and running jobs per kind, kinds with any. */
const KINDS_SQL = `SELECT kind, queued, running FROM kind_counts WHERE queued > 0 OR running > 0 ORDER BY kind`;

/** Kinds with no queued or running job left: their rows go (the triggers make them again as needed). */
const PRUNE_KINDS_SQL = `DELETE FROM kind_counts WHERE queued = 0 AND running = 0`;

/** One in-process attempt lost its lease. */
const COUNT_LOST_SQL = `UPDATE lane_counts SET total_lost = total_lost + 1 WHERE id = 1`;

/** The earliest runAt of a queued job, on `jobs_run_at` (the lane compares it with now). */
export const EARLIEST_QUEUED_RUN_AT_SQL = `SELECT run_at FROM jobs WHERE state = 'queued' ORDER BY run_at LIMIT 1`;

export class LaneCounts {
  private readonly sql: SqlStorage;

  constructor(storage: DurableObjectStorage) {
    this.sql = storage.sql;
  }

  counts(): Counts {
    return { ...this.sql.exec<Counts>(COUNTS_SQL).one() };
  }

  stats(): LaneStats {
    return { ...this.sql.exec<LaneStats>(STATS_SQL).one() };
  }

  /** How many jobs run, one row read. */
  running(): number {
    return this.sql.exec<{ n: number }>(RUNNING_SQL).one().n;
  }

  /** Queued and running jobs per kind, kept by the triggers of migration 11 (never counted). */
  kinds(): Record<string, KindCounts> {
    const kinds: Record<string, KindCounts> = {};
    for (const { kind, queued, running } of this.sql.exec<{ kind: string; queued: number; running: number }>(KINDS_SQL)) kinds[kind] = { queued, running };
    return kinds;
  }

  /** Drops the rows of kinds with nothing queued or running (the alarm's housekeeping). */
  pruneKinds(): void {
    this.sql.exec(PRUNE_KINDS_SQL);
  }

  countLost(): void {
    this.sql.exec(COUNT_LOST_SQL);
  }

  /**
   * The runAt of the longest-waiting queued job that is due at `now` (null: none is due): how far
   * behind the lane is. Any queued job counts, a paused lane's and one behind its queue's head too:
   * each is a job that could have run by now and has not.
   */
  oldestDueAt(now: number): number | null {
    const at = this.sql.exec<{ run_at: number }>(EARLIEST_QUEUED_RUN_AT_SQL).toArray()[0]?.run_at;
    return at !== undefined && at <= now ? at : null;
  }
}
