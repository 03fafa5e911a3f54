/**
 * The lane's `queueDefaults` (docs/api.md "The lane", "Queues"): the concurrency and rate limit of
 * every queue whose PUTs never named its own. A queue's row holds its effective values, so the claim
 * and the wake read its columns as they always did and pay nothing for the defaults. Keeping those
 * columns true is this file's: a change of the defaults rewrites the rows that follow them (one
 * statement each for all queues, no call per queue), and while the defaults differ from the
 * built-in ones (1, none) a trigger gives a row made by the upkeep the defaults at once. With the
 * built-in defaults that trigger does not exist: the column defaults are the defaults, and a queue's
 * first job costs what it did before. The defaults themselves are kept in memory by the settings
 * (store/settings.ts), read once.
 */
import { DEFAULT_QUEUE_CONCURRENCY } from "../../shared/defaults.js";
import type { QueueDefaults, RateLimit } from "../../shared/job.js";

/** The built-in defaults: a queue is a serial key without a rate limit. */
export const BUILT_IN_QUEUE_DEFAULTS: QueueDefaults = { concurrency: DEFAULT_QUEUE_CONCURRENCY, rateLimit: null };

/** A PATCH's `queueDefaults`: a field left out is kept. */
export type QueueDefaultsPatch = { concurrency?: number | undefined; rateLimit?: RateLimit | null | undefined };

const READ_SQL = `SELECT queue_concurrency, queue_rate_limit, queue_rate_period_ms FROM lane WHERE id = 1`;

/** ?1 concurrency, ?2 limit, ?3 period (both null: none). */
const WRITE_SQL = `UPDATE lane SET queue_concurrency = ?1, queue_rate_limit = ?2, queue_rate_period_ms = ?3 WHERE id = 1`;

/** The queues that follow the default concurrency take the new one. ?1 concurrency. */
const FOLLOW_CONCURRENCY_SQL = `UPDATE queues SET concurrency = ?1 WHERE concurrency_named = 0 AND concurrency <> ?1`;

/** The queues that follow the default rate limit take the new one, each from a full bucket of its own. ?1 limit, ?2 period. */
const FOLLOW_RATE_SQL = `UPDATE queues SET rate_limit = ?1, rate_period_ms = ?2, bucket_units = NULL, bucket_at = NULL
  WHERE rate_named = 0 AND (rate_limit IS NOT ?1 OR rate_period_ms IS NOT ?2)`;

/** A queue's row made by the upkeep (its first job) takes the defaults for what it has not named. */
const FOLLOW_TRIGGER_SQL = `CREATE TRIGGER IF NOT EXISTS queues_follow_defaults AFTER INSERT ON queues BEGIN
  UPDATE queues SET
    concurrency = CASE concurrency_named WHEN 1 THEN concurrency ELSE (SELECT queue_concurrency FROM lane WHERE id = 1) END,
    rate_limit = CASE rate_named WHEN 1 THEN rate_limit ELSE (SELECT queue_rate_limit FROM lane WHERE id = 1) END,
    rate_period_ms = CASE rate_named WHEN 1 THEN rate_period_ms ELSE (SELECT queue_rate_period_ms FROM lane WHERE id = 1) END
  WHERE name = NEW.name;
END`;

const DROP_TRIGGER_SQL = `DROP TRIGGER IF EXISTS queues_follow_defaults`;

type Row = { queue_concurrency: number; queue_rate_limit: number | null; queue_rate_period_ms: number | null };

/** The lane's queue defaults as stored. */
export function readQueueDefaults(sql: SqlStorage): QueueDefaults {
  const row = sql.exec<Row>(READ_SQL).toArray()[0];
  if (!row) return BUILT_IN_QUEUE_DEFAULTS;
  const rateLimit = row.queue_rate_limit === null || row.queue_rate_period_ms === null ? null : { limit: row.queue_rate_limit, periodMs: row.queue_rate_period_ms };
  return { concurrency: row.queue_concurrency, rateLimit };
}

const isBuiltIn = (d: QueueDefaults) => d.concurrency === BUILT_IN_QUEUE_DEFAULTS.concurrency && d.rateLimit === null;

/**
 * Merges `patch` into the defaults `before` and writes them: the lane's columns, every queue that
 * follows them, and the trigger for queues to come (made, or dropped back at the built-in defaults).
 * In one transaction: a queue never holds a value of neither the old defaults nor the new.
 */
export function writeQueueDefaults(storage: DurableObjectStorage, before: QueueDefaults, patch: QueueDefaultsPatch): QueueDefaults {
  const after: QueueDefaults = {
    concurrency: patch.concurrency ?? before.concurrency,
    rateLimit: patch.rateLimit === undefined ? before.rateLimit : patch.rateLimit,
  };
  const sql = storage.sql;
  storage.transactionSync(() => {
    sql.exec(WRITE_SQL, after.concurrency, after.rateLimit?.limit ?? null, after.rateLimit?.periodMs ?? null);
    if (after.concurrency !== before.concurrency) sql.exec(FOLLOW_CONCURRENCY_SQL, after.concurrency);
    // The same limit set again keeps the buckets (no burst granted by a repeated PATCH), as the lane's own does.
    sql.exec(FOLLOW_RATE_SQL, after.rateLimit?.limit ?? null, after.rateLimit?.periodMs ?? null);
    sql.exec(isBuiltIn(after) ? DROP_TRIGGER_SQL : FOLLOW_TRIGGER_SQL);
  });
  return after;
}
