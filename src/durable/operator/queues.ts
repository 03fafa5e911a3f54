/**
 * Queues as an operator sees and sets them (docs/api.md "Queues"): who holds a queue, what runs
 * next, how many wait and run, its settings (concurrency, a token bucket), and purging its queued
 * jobs. A queue's row (`queues`) holds its settings and its kept counts; its jobs are read on
 * `jobs_queue` (queue, state, priority, seq).
 */
import type { QueueInfo } from "../../shared/answers.js";
import { PURGE_BATCH } from "../../shared/defaults.js";
import type { QueueDefaults, RateLimit } from "../../shared/job.js";
import { deleteJobs, type DeletedJob } from "../store/deletion.js";
import * as O from "./operator-statements.js";

type QueueRow = { concurrency: number; rate_limit: number | null; rate_period_ms: number | null; queued: number; active: number };

export class QueueStore {
  private readonly sql: SqlStorage;
  /** Whether any queue is rate limited, as last read (this store writes every setting). */
  private limited: boolean | undefined = undefined;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly settings: { queueDefaults(): QueueDefaults },
  ) {
    this.sql = storage.sql;
  }

  /** Who holds the queue (a completing job is reported `running`), else its head; how many are queued and run; its settings. */
  info(queue: string): QueueInfo {
    type HeadRow = { id: string; cancel_requested: number };
    const holder = this.sql.exec<HeadRow>(O.QUEUE_HOLDER_SQL, queue).toArray()[0];
    const next = holder ? undefined : this.sql.exec<HeadRow>(O.QUEUE_NEXT_SQL, queue).toArray()[0];
    const head = holder ?? next;
    const row = this.sql.exec<QueueRow>(O.QUEUE_ROW_SQL, queue).toArray()[0];
    // A row holds its effective values (flow/queue-defaults.ts); a queue with none, the lane's defaults.
    const defaults = this.settings.queueDefaults();
    return {
      queue,
      head: head ? { id: head.id, state: holder ? "running" : "queued", cancelRequested: head.cancel_requested === 1 } : null,
      queued: row?.queued ?? 0,
      running: row?.active ?? 0,
      concurrency: row?.concurrency ?? defaults.concurrency,
      rateLimit: !row ? defaults.rateLimit : row.rate_limit != null && row.rate_period_ms != null ? { limit: row.rate_limit, periodMs: row.rate_period_ms } : null,
    };
  }

  /** Sets a queue's concurrency and rate limit (`undefined`: unchanged; a null rate limit: removed). */
  configure(queue: string, settings: { concurrency?: number | undefined; rateLimit?: RateLimit | null | undefined }): void {
    const rate = settings.rateLimit;
    const defaults = this.settings.queueDefaults();
    this.sql.exec(O.CONFIGURE_SQL, queue, settings.concurrency ?? null, rate === undefined ? 0 : 1, rate?.limit ?? null, rate?.periodMs ?? null,
      defaults.concurrency, defaults.rateLimit?.limit ?? null, defaults.rateLimit?.periodMs ?? null);
    this.limited = undefined;
  }

  /**
   * Whether any queue of the lane is rate limited (a claim of its jobs then draws its bucket): every
   * queue that follows a default rate limit is, its row made by the upkeep with no word to this cache.
   */
  anyRateLimited(): boolean {
    if (this.settings.queueDefaults().rateLimit !== null) return true;
    this.limited ??= this.sql.exec<{ any: number }>(O.ANY_RATE_LIMITED_SQL).one().any === 1;
    return this.limited;
  }

  /** Drops the rows of queues with no job and no setting (the upkeep makes them again as needed). */
  prune(): void {
    this.sql.exec(O.PRUNE_SQL);
  }

  /**
   * Deletes the queue's queued jobs enqueued before the call (up to the newest seq now), `batch` per
   * transaction, yielding between transactions so that the lane serves other calls meanwhile.
   */
  async purge(queue: string, batch = PURGE_BATCH): Promise<number> {
    const lastSeq = this.sql.exec<{ seq: number }>(O.LAST_SEQ_SQL).one().seq;
    let purged = 0;
    for (;;) {
      const deleted = this.storage.transactionSync(() => deleteJobs(this.sql, this.sql.exec<DeletedJob>(O.QUEUE_PURGE_SQL, queue, lastSeq, batch).toArray()));
      purged += deleted;
      if (deleted < batch) return purged;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }
}
