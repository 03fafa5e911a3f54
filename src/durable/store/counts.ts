/**
 * The lane's counts and lifetime stats: one row of `lane_counts`, kept by the store's upkeep
 * (upkeep.ts) in the same statement as every change to job rows it follows (insert, change of
 * state or outcome, delete), so reading them costs one row at any number of jobs. The one stat no
 * row can tell, an in-process attempt that lost its lease, is counted here by the lane.
 */
import type { Counts, KindCounts, LaneStats } from "../../shared/job.js";
import { COUNTS_SQL, STATS_SQL, RUNNING_SQL, KINDS_SQL, PRUNE_KINDS_SQL, COUNT_LOST_SQL, EARLIEST_QUEUED_RUN_AT_SQL } from "./counts-statements.js";

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

  /** Queued and running jobs per kind, kept by the store's upkeep (never counted). */
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
