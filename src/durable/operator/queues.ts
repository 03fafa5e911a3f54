/**
 * Queues as an operator sees and sets them (docs/api.md "Queues"): who holds a queue, what runs
 * next, how many wait and run, its settings (concurrency, a token bucket), and purging its queued
 * jobs. A queue's row (`queues`) holds its settings and its kept counts; its jobs are read on
 * `jobs_queue` (queue, state, priority, seq).
 */
import type { QueueInfo } from "../../shared/answers.js";
import { DEFAULT_QUEUE_CONCURRENCY, PURGE_BATCH } from "../../shared/defaults.js";
import type { RateLimit } from "../../shared/job.js";
import { deleteJobs, type DeletedJob } from "../store/deletion.js";

/** The job that holds a queue: running, or completing (its outcome is delivered before the next starts). ?1 queue. */
export const QUEUE_HOLDER_SQL = `SELECT id, cancel_requested FROM jobs WHERE queue = +?1 AND state IN ('running', 'completing') ORDER BY seq LIMIT 1`;

/** The queued job of a queue that runs next, due or not: the queue's head. ?1 queue. */
export const QUEUE_NEXT_SQL = `SELECT id, cancel_requested FROM jobs WHERE queue = +?1 AND state = 'queued' ORDER BY priority DESC, seq LIMIT 1`;

/** A queue's settings and kept counts. ?1 queue. */
export const QUEUE_ROW_SQL = `SELECT concurrency, rate_limit, rate_period_ms, queued, active FROM queues WHERE name = ?1`;

/** Queued jobs of a queue enqueued up to a seq, to purge. ?1 queue, ?2 last seq, ?3 limit. */
export const QUEUE_PURGE_SQL = `SELECT seq, id FROM jobs WHERE queue = ?1 AND state = 'queued' AND seq <= ?2 LIMIT +?3`;

/**
 * A queue's settings, set by an operator (the row made if the queue has none yet); a rate limit that
 * changes starts from a full bucket. ?1 queue, ?2 concurrency (null: unchanged), ?3 whether the rate
 * limit is given, ?4 limit, ?5 period (both null: removed).
 */
const CONFIGURE_SQL = `INSERT INTO queues (name, concurrency, rate_limit, rate_period_ms, configured)
  VALUES (?1, COALESCE(?2, ${DEFAULT_QUEUE_CONCURRENCY}), CASE WHEN ?3 THEN ?4 END, CASE WHEN ?3 THEN ?5 END, 1)
  ON CONFLICT (name) DO UPDATE SET concurrency = COALESCE(?2, concurrency), configured = 1,
    bucket_units = CASE WHEN ?3 AND (rate_limit IS NOT ?4 OR rate_period_ms IS NOT ?5) THEN NULL ELSE bucket_units END,
    bucket_at = CASE WHEN ?3 AND (rate_limit IS NOT ?4 OR rate_period_ms IS NOT ?5) THEN NULL ELSE bucket_at END,
    rate_limit = CASE WHEN ?3 THEN ?4 ELSE rate_limit END,
    rate_period_ms = CASE WHEN ?3 THEN ?5 ELSE rate_period_ms END`;

/** Whether any queue has a rate limit. */
const ANY_RATE_LIMITED_SQL = `SELECT EXISTS (SELECT 1 FROM queues INDEXED BY queues_rate_limited WHERE rate_limit IS NOT NULL) AS any`;

/** Queue rows with neither jobs nor settings of an operator's: nothing to keep. */
const PRUNE_SQL = `DELETE FROM queues WHERE queued = 0 AND active = 0 AND configured = 0`;

/** The newest job's seq (0: none yet). */
const LAST_SEQ_SQL = `SELECT COALESCE(MAX(seq), 0) AS seq FROM jobs`;

type QueueRow = { concurrency: number; rate_limit: number | null; rate_period_ms: number | null; queued: number; active: number };

export class QueueStore {
  private readonly sql: SqlStorage;
  /** Whether any queue is rate limited, as last read (this store writes every setting). */
  private limited: boolean | undefined = undefined;

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
  }

  /** Who holds the queue (a completing job is reported `running`), else its head; how many are queued and run; its settings. */
  info(queue: string): QueueInfo {
    type HeadRow = { id: string; cancel_requested: number };
    const holder = this.sql.exec<HeadRow>(QUEUE_HOLDER_SQL, queue).toArray()[0];
    const next = holder ? undefined : this.sql.exec<HeadRow>(QUEUE_NEXT_SQL, queue).toArray()[0];
    const head = holder ?? next;
    const row = this.sql.exec<QueueRow>(QUEUE_ROW_SQL, queue).toArray()[0];
    return {
      queue,
      head: head ? { id: head.id, state: holder ? "running" : "queued", cancelRequested: head.cancel_requested === 1 } : null,
      queued: row?.queued ?? 0,
      running: row?.active ?? 0,
      concurrency: row?.concurrency ?? DEFAULT_QUEUE_CONCURRENCY,
      rateLimit: row?.rate_limit != null && row.rate_period_ms != null ? { limit: row.rate_limit, periodMs: row.rate_period_ms } : null,
    };
  }

  /** Sets a queue's concurrency and rate limit (`undefined`: unchanged; a null rate limit: removed). */
  configure(queue: string, settings: { concurrency?: number | undefined; rateLimit?: RateLimit | null | undefined }): void {
    const rate = settings.rateLimit;
    this.sql.exec(CONFIGURE_SQL, queue, settings.concurrency ?? null, rate === undefined ? 0 : 1, rate?.limit ?? null, rate?.periodMs ?? null);
    this.limited = undefined;
  }

  /** Whether any queue of the lane is rate limited (a claim of its jobs then draws its bucket). */
  anyRateLimited(): boolean {
    this.limited ??= this.sql.exec<{ any: number }>(ANY_RATE_LIMITED_SQL).one().any === 1;
    return this.limited;
  }

  /** Drops the rows of queues with no job and no setting (the triggers make them again as needed). */
  prune(): void {
    this.sql.exec(PRUNE_SQL);
  }

  /**
   * Deletes the queue's queued jobs enqueued before the call (up to the newest seq now), `batch` per
   * transaction, yielding between transactions so that the lane serves other calls meanwhile.
   */
  async purge(queue: string, batch = PURGE_BATCH): Promise<number> {
    const lastSeq = this.sql.exec<{ seq: number }>(LAST_SEQ_SQL).one().seq;
    let purged = 0;
    for (;;) {
      const deleted = this.storage.transactionSync(() => deleteJobs(this.sql, this.sql.exec<DeletedJob>(QUEUE_PURGE_SQL, queue, lastSeq, batch).toArray()));
      purged += deleted;
      if (deleted < batch) return purged;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }
}
