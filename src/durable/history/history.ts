/**
 * The lane's per-minute history (docs/operations.md, "History"): 24 hours of buckets in a ring of
 * 1440 rows (slot = minute % 1440, each row carrying its minute; a row of an older minute is reset
 * when its slot is written again), kept by triggers on the jobs table in the very statement that
 * changes a job, so in the same transaction, and never one row per job.
 *
 * The triggers belong to the lane's start-up, not to a migration: with recording on (history/
 * recording.ts) the lane makes sure they exist as defined here, with it off it drops them, so that a
 * lane that records nothing pays nothing per transition (no trigger runs at all). Migration 15 made
 * the tables.
 *
 * What a bucket counts, at the instant of the statement (the row's `updated_at`):
 * - `enqueued`: new rows (a debounced enqueue that replaces its queued job is not a new one);
 * - `started`: a job moved into running (a claim, a start, a row born running), every attempt;
 * - `completed` / `failed`: the outcome recorded, when the row gets it (a `completing` job counts
 *   when it enters completing, as the lane's stats do; its delivery settles it without a count); a
 *   retry is no outcome, so not `failed`;
 * - `depth`: queued jobs that are not blocked, at the end of the minute (`counts.queued`), kept by
 *   the triggers in `history_now` and carried forward over minutes without transitions. A job
 *   deleted while queued (a purge) lowers the depth of the last minute written.
 */
import { HISTORY_MINUTES, MINUTE_MS, type HistoryBucket } from "../../shared/history.js";
import type { Clock } from "../../shared/clock.js";

/** One bucket's upsert: the ring row of minute `m` gains the counts, takes the depth `history_now` holds. */
const bucket = (m: string, enqueued: string, started: string, completed: string, failed: string) =>
  `INSERT INTO history (slot, minute, enqueued, started, completed, failed, depth)
    SELECT (${m}) % ${HISTORY_MINUTES}, ${m}, ${enqueued}, ${started}, ${completed}, ${failed}, depth FROM history_now WHERE id = 1
    ON CONFLICT (slot) DO UPDATE SET
      enqueued = excluded.enqueued + IIF(minute = excluded.minute, enqueued, 0),
      started = excluded.started + IIF(minute = excluded.minute, started, 0),
      completed = excluded.completed + IIF(minute = excluded.minute, completed, 0),
      failed = excluded.failed + IIF(minute = excluded.minute, failed, 0),
      depth = excluded.depth, minute = excluded.minute;`;

/** The depth and last minute written move first (the bucket reads the depth); no write when neither changes. */
const now = (m: string, delta: string) =>
  `UPDATE history_now SET minute = ${m}, depth = depth + (${delta}) WHERE id = 1 AND (minute IS NOT ${m} OR (${delta}) <> 0);`;

const DEPTH_NEW = `(NEW.state = 'queued' AND NEW.blocked = 0)`;
const DEPTH_OLD = `(OLD.state = 'queued' AND OLD.blocked = 0)`;
const MINUTE_NEW = `NEW.updated_at / ${MINUTE_MS}`;

/** The triggers recording keeps, by name; their text is compared with the stored one at start-up. */
export const HISTORY_TRIGGERS: readonly { name: string; sql: string }[] = [
  {
    name: "jobs_history_insert",
    sql: `CREATE TRIGGER jobs_history_insert AFTER INSERT ON jobs BEGIN
      ${now(MINUTE_NEW, DEPTH_NEW)}
      ${bucket(MINUTE_NEW, "1", "NEW.state = 'running'", "NEW.outcome IS 'completed'", "NEW.outcome IS 'failed'")}
    END`,
  },
  {
    name: "jobs_history_update",
    sql: `CREATE TRIGGER jobs_history_update AFTER UPDATE OF state, outcome, blocked ON jobs
    WHEN OLD.state IS NOT NEW.state OR OLD.outcome IS NOT NEW.outcome OR OLD.blocked IS NOT NEW.blocked BEGIN
      ${now(MINUTE_NEW, `${DEPTH_NEW} - ${DEPTH_OLD}`)}
      ${bucket(
        MINUTE_NEW,
        "0",
        "NEW.state = 'running' AND OLD.state <> 'running'",
        "OLD.outcome IS NULL AND NEW.outcome IS 'completed'",
        "OLD.outcome IS NULL AND NEW.outcome IS 'failed'",
      )}
    END`,
  },
  {
    // A delete has no instant of its own: the depth drops in the last minute written.
    name: "jobs_history_delete",
    sql: `CREATE TRIGGER jobs_history_delete AFTER DELETE ON jobs WHEN ${DEPTH_OLD} BEGIN
      UPDATE history_now SET depth = depth - 1 WHERE id = 1;
      UPDATE history SET depth = (SELECT depth FROM history_now WHERE id = 1) WHERE minute = (SELECT minute FROM history_now WHERE id = 1);
    END`,
  },
];

const STORED_TRIGGERS_SQL = `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'jobs_history_%'`;
const QUEUED_NOW_SQL = `SELECT queued - blocked AS depth FROM lane_counts WHERE id = 1`;
const RESYNC_SQL = `UPDATE history_now SET depth = ?1, minute = ?2 WHERE id = 1 AND depth IS NOT ?1`;
const TOUCH_SQL = bucket("?1", "0", "0", "0", "0");
const BUCKETS_SQL = `SELECT minute, enqueued, started, completed, failed, depth FROM history WHERE minute BETWEEN ?1 AND ?2 ORDER BY minute`;
const CARRY_SQL = `SELECT depth FROM history WHERE minute < ?1 ORDER BY minute DESC LIMIT 1`;

interface BucketRow extends Record<string, SqlStorageValue> {
  minute: number;
  enqueued: number;
  started: number;
  completed: number;
  failed: number;
  depth: number;
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
   * At start-up: with recording on, the triggers as defined here (made or remade when the stored ones
   * differ) and the depth they keep set to the lane's queued jobs (it drifts while recording is off);
   * with it off, no trigger. Writes nothing when all is already so.
   */
  start(on: boolean): void {
    const stored = this.sql.exec<{ name: string; sql: string }>(STORED_TRIGGERS_SQL).toArray();
    const wanted = on ? HISTORY_TRIGGERS : [];
    const same = stored.length === wanted.length && wanted.every((t) => stored.some((s) => s.name === t.name && s.sql === t.sql));
    this.storage.transactionSync(() => {
      if (!same) {
        for (const { name } of stored) this.sql.exec(`DROP TRIGGER "${name}"`);
        for (const { sql } of wanted) this.sql.exec(sql);
      }
      if (!on) return;
      const depth = this.sql.exec<{ depth: number }>(QUEUED_NOW_SQL).one().depth;
      const minute = Math.floor(this.clock.now() / MINUTE_MS);
      // The depth was not what the lane holds (a lane that recorded nothing for a while): from this minute on, it is.
      if (this.sql.exec(RESYNC_SQL, depth, minute).rowsWritten > 0) this.sql.exec(TOUCH_SQL, minute);
    });
  }

  /**
   * Every minute of the last `windowMs` (the minutes that end inside it, this one last), oldest
   * first: a minute with no transitions counts zeros and carries the depth of the minute before.
   */
  read(windowMs: number): HistoryBucket[] {
    const current = Math.floor(this.clock.now() / MINUTE_MS);
    const first = current - Math.min(Math.ceil(windowMs / MINUTE_MS), HISTORY_MINUTES) + 1;
    const rows = this.sql.exec<BucketRow>(BUCKETS_SQL, first, current).toArray();
    let depth = this.sql.exec<{ depth: number }>(CARRY_SQL, first).toArray()[0]?.depth ?? 0;
    const buckets: HistoryBucket[] = [];
    let next = 0;
    for (let minute = first; minute <= current; minute++) {
      const row = rows[next]?.minute === minute ? rows[next++]! : undefined;
      if (row) depth = row.depth;
      buckets.push({
        at: minute * MINUTE_MS,
        enqueued: row?.enqueued ?? 0,
        started: row?.started ?? 0,
        completed: row?.completed ?? 0,
        failed: row?.failed ?? 0,
        depth,
      });
    }
    return buckets;
  }
}
