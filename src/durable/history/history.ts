/**
 * The lane's per-minute history (docs/operations.md, "History"): 24 hours of buckets in a ring of
 * 1440 rows (slot = minute % 1440, each row carrying its minute; a row of an older minute is reset
 * when its slot is written again), written in the same transaction as the transitions it counts,
 * never a row per job.
 *
 * What a minute counts is what the lane's lifetime totals (`lane_counts`, kept by the store with
 * every statement that changes jobs: store/upkeep.ts) grew by over it, so counting costs a transition
 * no write of its own: the lane's counts row remembers the minute being counted and the totals when
 * it began (`history_minute`, `history_base_*`), and the first statement of a later minute moves
 * that minute to the ring as it stood before that statement (the counts' write answers what it
 * needs). So a minute's counts are:
 * - `enqueued`: new rows (`stats.enqueued`; a debounced enqueue that replaces its queued job is not
 *   a new one, nor is a requeue);
 * - `started`: a job moved into running (`stats.claimed`: claims and starts, every attempt);
 * - `completed` / `failed`: outcomes recorded (`stats.completed`, `stats.failed`: a `completing` job
 *   counts when it enters completing; a retry is no outcome, so not `failed`);
 * - `depth`: queued jobs that are not blocked (`counts.queued`) when the minute ended, or now for the
 *   minute being counted. A job deleted while queued (a purge) has no instant of its own: it lowers
 *   the minute being counted.
 *
 * Recording (history/recording.ts) is the lane's start-up's: on, a minute is counted (`history_minute`
 * is set); off, none is, and a transition pays nothing for it. Either change starts the history afresh.
 */
import { HISTORY_MINUTES, MINUTE_MS, type HistoryBucket } from "../../shared/history.js";
import type { Clock } from "../../shared/clock.js";
import { ON_SQL, COUNTING_MINUTE_SQL, CLEAR_SQL, OFF_SQL, COUNTING_SQL, ROWS_SQL, BEFORE_SQL } from "./history-statements.js";


type Counted = { enqueued: number; started: number; completed: number; failed: number; depth: number };
type Minute = Counted & { minute: number };

export class History {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
  ) {
    this.sql = storage.sql;
  }

  /**
   * At start-up: with recording on, a minute counted; with it off, none. When that changes anything,
   * the history starts afresh (what happened while nothing counted is unknown). Writes nothing when
   * all is already so.
   */
  start(on: boolean): void {
    const counting = this.sql.exec<{ minute: number | null }>(COUNTING_MINUTE_SQL).one().minute !== null;
    if (counting === on) return;
    this.storage.transactionSync(() => {
      this.sql.exec(CLEAR_SQL);
      if (!on) return void this.sql.exec(OFF_SQL);
      const minute = Math.floor(this.clock.now() / MINUTE_MS);
      for (const statement of ON_SQL) this.sql.exec(statement, minute);
    });
  }

  /**
   * Every minute of the last `windowMs` (the minutes that end inside it, this one last), oldest
   * first: a minute with no transitions counts zeros, and its depth is the one of the minute before.
   */
  read(windowMs: number): HistoryBucket[] {
    const current = Math.floor(this.clock.now() / MINUTE_MS);
    const first = current - Math.min(Math.ceil(windowMs / MINUTE_MS), HISTORY_MINUTES) + 1;
    const counting = this.sql.exec<Counted & { minute: number | null }>(COUNTING_SQL).one();
    const byMinute = new Map<number, Minute>();
    for (const row of this.sql.exec<Minute>(ROWS_SQL, first, current)) byMinute.set(row.minute, row);
    // The minute being counted is the latest: its depth is the lane's now. (The same minute in the
    // ring too only after a clock went back: its counts add up.)
    // Recording off (no minute counted): no counts, the lane's depth now.
    let depth: number;
    if (counting.minute === null || counting.minute < first) depth = counting.depth;
    else {
      depth = this.sql.exec<{ depth: number }>(BEFORE_SQL, first).toArray()[0]?.depth ?? 0;
      if (counting.minute <= current) {
        const seen = byMinute.get(counting.minute);
        byMinute.set(counting.minute, seen ? { ...add(seen, counting), minute: counting.minute } : { ...counting, minute: counting.minute });
      }
    }
    const buckets: HistoryBucket[] = [];
    for (let minute = first; minute <= current; minute++) {
      const row = byMinute.get(minute);
      if (row) depth = row.depth;
      // After the minute being counted, nothing changed but deletions: the lane's depth now.
      else if (counting.minute !== null && minute > counting.minute) depth = counting.depth;
      buckets.push({ at: minute * MINUTE_MS, enqueued: row?.enqueued ?? 0, started: row?.started ?? 0, completed: row?.completed ?? 0, failed: row?.failed ?? 0, depth });
    }
    return buckets;
  }
}

/** A minute's counts from the ring and the same minute counted again after a clock went back; the later depth. */
function add(ring: Minute, later: Counted): Counted {
  return {
    enqueued: ring.enqueued + later.enqueued,
    started: ring.started + later.started,
    completed: ring.completed + later.completed,
    failed: ring.failed + later.failed,
    depth: later.depth,
  };
}
