/**
 * Queues as an operator sees them (docs/api.md "Queues"): who holds a queue, what runs next, how many wait,
 * and purging its queued jobs. Every statement reads `jobs_queue` (queue, state, priority, seq).
 */
import type { QueueInfo } from "../../shared/answers.js";
import { PURGE_BATCH } from "../../shared/defaults.js";
import { deleteJobs, type DeletedJob } from "../store/deletion.js";

/** The job that holds a queue: running, or completing (its outcome is delivered before the next starts). ?1 queue. */
export const QUEUE_HOLDER_SQL = `SELECT id, cancel_requested FROM jobs WHERE queue = +?1 AND state IN ('running', 'completing') ORDER BY seq LIMIT 1`;

/** The queued job of a queue that runs next, due or not: the queue's head. ?1 queue. */
export const QUEUE_NEXT_SQL = `SELECT id, cancel_requested FROM jobs WHERE queue = +?1 AND state = 'queued' ORDER BY priority DESC, seq LIMIT 1`;

/** How many of a queue's jobs are queued (a range of the index). ?1 queue. */
export const QUEUE_QUEUED_SQL = `SELECT COUNT(*) AS n FROM jobs WHERE queue = ?1 AND state = 'queued'`;

/** Queued jobs of a queue enqueued up to a seq, to purge. ?1 queue, ?2 last seq, ?3 limit. */
export const QUEUE_PURGE_SQL = `SELECT seq, id FROM jobs WHERE queue = ?1 AND state = 'queued' AND seq <= ?2 LIMIT +?3`;

/** The newest job's seq (0: none yet). */
const LAST_SEQ_SQL = `SELECT COALESCE(MAX(seq), 0) AS seq FROM jobs`;

export class QueueStore {
  private readonly sql: SqlStorage;

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
  }

  /** Who holds the queue (a completing job is reported `running`), else its head, and how many are queued. */
  info(queue: string): QueueInfo {
    type HeadRow = { id: string; cancel_requested: number };
    const holder = this.sql.exec<HeadRow>(QUEUE_HOLDER_SQL, queue).toArray()[0];
    const next = holder ? undefined : this.sql.exec<HeadRow>(QUEUE_NEXT_SQL, queue).toArray()[0];
    const row = holder ?? next;
    const queued = this.sql.exec<{ n: number }>(QUEUE_QUEUED_SQL, queue).one().n;
    return {
      queue,
      head: row ? { id: row.id, state: holder ? "running" : "queued", cancelRequested: row.cancel_requested === 1 } : null,
      queued,
    };
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
