/**
 * The lane's per-minute history (docs/operations.md, "History"): 24 hours of buckets in a ring of
 * 1440 rows (slot = minute % 1440, each row carrying its minute; a row of an older minute is reset
 * when its slot is written again), kept by triggers on the jobs table in the very statement that
 * changes a job, so in the same transaction, one upsert of one row per transition that counts, and
 * never a row per job.
 *
 * The triggers belong to the lane's start-up, not to a migration: with recording on (history/
 * recording.ts) the lane makes sure they exist as defined here, with it off it drops them, so that a
 * lane that records nothing pays nothing per transition (no trigger runs at all: cheaper than any
 * flag a trigger would have to read). Migration 15 made the table.
 *
 * What a bucket counts, at the instant of the statement (the row's `updated_at`):
 * - `enqueued`: new rows (a debounced enqueue that replaces its queued job is not a new one);
 * - `started`: a job moved into running (a claim, a start, a row born running), every attempt;
 * - `completed` / `failed`: the outcome recorded, when the row gets it (a `completing` job counts
 *   when it enters completing, as the lane's stats do; its delivery settles it without a count); a
 *   retry is no outcome, so not `failed`;
 * - `queued_change`: queued jobs (not blocked: `counts.queued`) gained less those gone. The depth at
 *   a minute's end is read backwards from the lane's kept count now: now less the changes of the
 *   minutes after it. So the depth of this minute is always `counts.queued`, never drifts, and
 *   nothing but the ring is written. A job deleted while queued (a purge) has no instant of its own:
 *   its change lands in the latest minute written.
 */
import { HISTORY_MINUTES, MINUTE_MS, type HistoryBucket } from "../../shared/history.js";
import type { Clock } from "../../shared/clock.js";

/** One bucket's upsert: the ring row of minute `m` gains the counts (from zero, if it held another minute). */
const bucket = (m: string, enqueued: string, started: string, completed: string, failed: string, queued: string) =>
  `INSERT INTO history (slot, minute, enqueued, started, completed, failed, queued_change)
    VALUES ((${m}) % ${HISTORY_MINUTES}, ${m}, ${enqueued}, ${started}, ${completed}, ${failed}, ${queued})
    ON CONFLICT (slot) DO UPDATE SET
      enqueued = excluded.enqueued + IIF(minute = excluded.minute, enqueued, 0),
      started = excluded.started + IIF(minute = excluded.minute, started, 0),
      completed = excluded.completed + IIF(minute = excluded.minute, completed, 0),
      failed = excluded.failed + IIF(minute = excluded.minute, failed, 0),
      queued_change = excluded.queued_change + IIF(minute = excluded.minute, queued_change, 0),
      minute = excluded.minute;`;

const QUEUED_NEW = `(NEW.state = 'queued' AND NEW.blocked = 0)`;
const QUEUED_OLD = `(OLD.state = 'queued' AND OLD.blocked = 0)`;
const STARTED = `(NEW.state = 'running' AND OLD.state <> 'running')`;
const MINUTE_NEW = `NEW.updated_at / ${MINUTE_MS}`;

/** The triggers recording keeps, by name; their text is compared with the stored one at start-up. */
export const HISTORY_TRIGGERS: readonly { name: string; sql: string }[] = [
  {
    name: "jobs_history_insert",
    sql: `CREATE TRIGGER jobs_history_insert AFTER INSERT ON jobs BEGIN
      ${bucket(MINUTE_NEW, "1", "NEW.state = 'running'", "NEW.outcome IS 'completed'", "NEW.outcome IS 'failed'", QUEUED_NEW)}
    END`,
  },
  {
    // Only the updates that count: a delivery's settlement, a renewal or a cancel request write nothing.
    name: "jobs_history_update",
    sql: `CREATE TRIGGER jobs_history_update AFTER UPDATE OF state, outcome, blocked ON jobs
    WHEN ${STARTED} OR (OLD.outcome IS NULL AND NEW.outcome IN ('completed', 'failed')) OR ${QUEUED_NEW} <> ${QUEUED_OLD} BEGIN
      ${bucket(
        MINUTE_NEW,
        "0",
        STARTED,
        "OLD.outcome IS NULL AND NEW.outcome IS 'completed'",
        "OLD.outcome IS NULL AND NEW.outcome IS 'failed'",
        `${QUEUED_NEW} - ${QUEUED_OLD}`,
      )}
    END`,
  },
  {
    name: "jobs_history_delete",
    sql: `CREATE TRIGGER jobs_history_delete AFTER DELETE ON jobs WHEN ${QUEUED_OLD} BEGIN
      UPDATE history SET queued_change = queued_change - 1 WHERE minute = (SELECT MAX(minute) FROM history);
    END`,
  },
];

const STORED_TRIGGERS_SQL = `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'jobs_history_%'`;
const CLEAR_SQL = `DELETE FROM history`;
const QUEUED_NOW_SQL = `SELECT queued - blocked AS queued FROM lane_counts WHERE id = 1`;
/** The window's rows and any later (a clock that went back): every change after a minute counts for its depth. */
const ROWS_SQL = `SELECT minute, enqueued, started, completed, failed, queued_change FROM history WHERE minute >= ?1 ORDER BY minute DESC`;

interface BucketRow extends Record<string, SqlStorageValue> {
  minute: number;
  enqueued: number;
  started: number;
  completed: number;
  failed: number;
  queued_change: number;
}

export class History {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
  ) {
    this.sql = storage.sql;
  }

  /**
   * At start-up: with recording on, the triggers as defined here; with it off, none. When that changes
   * anything, the ring starts afresh: changes missed while recording was off would make every earlier
   * depth wrong. Writes nothing when all is already so.
   */
  start(on: boolean): void {
    const stored = this.sql.exec<{ name: string; sql: string }>(STORED_TRIGGERS_SQL).toArray();
    const wanted = on ? HISTORY_TRIGGERS : [];
    if (stored.length === wanted.length && wanted.every((t) => stored.some((s) => s.name === t.name && s.sql === t.sql))) return;
    this.storage.transactionSync(() => {
      for (const { name } of stored) this.sql.exec(`DROP TRIGGER "${name}"`);
      for (const { sql } of wanted) this.sql.exec(sql);
      this.sql.exec(CLEAR_SQL);
    });
  }

  /**
   * Every minute of the last `windowMs` (the minutes that end inside it, this one last), oldest
   * first: a minute with no transitions counts zeros, and its depth is the one of the minute before.
   */
  read(windowMs: number): HistoryBucket[] {
    const current = Math.floor(this.clock.now() / MINUTE_MS);
    const first = current - Math.min(Math.ceil(windowMs / MINUTE_MS), HISTORY_MINUTES) + 1;
    const rows = this.sql.exec<BucketRow>(ROWS_SQL, first).toArray();
    // Newest first: the depth at the end of a minute is the one after it less that later minute's change.
    let depth = this.sql.exec<{ queued: number }>(QUEUED_NOW_SQL).one().queued;
    let next = 0;
    for (; next < rows.length && rows[next]!.minute > current; next++) depth -= rows[next]!.queued_change;
    const buckets: HistoryBucket[] = [];
    for (let minute = current; minute >= first; minute--) {
      const row = rows[next]?.minute === minute ? rows[next++]! : undefined;
      buckets.push({
        at: minute * MINUTE_MS,
        enqueued: row?.enqueued ?? 0,
        started: row?.started ?? 0,
        completed: row?.completed ?? 0,
        failed: row?.failed ?? 0,
        depth,
      });
      depth -= row?.queued_change ?? 0;
    }
    return buckets.reverse();
  }
}
