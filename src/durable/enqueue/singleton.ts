/**
 * One job per queue (docs/api.md "Singleton"), decided in the enqueue's own transaction: `skip`
 * answers the job that holds the queue and writes nothing; `cancel-running` asks each running job of
 * the queue to cancel exactly as the cancel route does, then writes the new job behind them. Only an
 * enqueue that names `singleton` reads any of this: every other enqueue pays nothing for it.
 */
import { ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import type { Singleton } from "../../shared/schemas.js";
import type { Cancels } from "../attempts/cancel.js";
import { firstJobRow, JOB_COLUMNS, toJob, type Inserted, type JobSpec } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";

/** The running or completing job of a queue that started first. ?1 queue. */
const STARTED_FIRST_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE queue = +?1 AND state IN ('running', 'completing') ORDER BY claimed_at, seq LIMIT 1`;

/** The queued job (not blocked) a queue would start next, due or not: priority, then enqueue order. ?1 queue. */
const NEXT_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE queue = +?1 AND state = 'queued' AND blocked = 0 ORDER BY priority DESC, seq LIMIT 1`;

/** A queue's oldest blocked job. ?1 queue. */
const OLDEST_BLOCKED_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE queue = +?1 AND state = 'queued' AND blocked > 0 ORDER BY seq LIMIT 1`;

/** A queue's running jobs (not yet winding up), in enqueue order. ?1 queue. */
const RUNNING_SQL = `SELECT id FROM jobs WHERE queue = +?1 AND state = 'running' ORDER BY seq`;

/** What a singleton enqueue reaches: the store, the cancels, and the in-process attempts it aborts. */
export interface SingletonHost {
  readonly store: JobStore;
  readonly cancels: Cancels;
  readonly dispatcher: { abort(id: string, why: "cancelled"): void };
}

export class SingletonQueues {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly host: SingletonHost,
  ) {
    this.sql = storage.sql;
  }

  /** The job that holds `queue`: the one that started first among the running, else the next it would start, else its oldest blocked; null: none. */
  holder(queue: string): Job | null {
    const row = firstJobRow(this.sql.exec(STARTED_FIRST_SQL, queue)) ?? firstJobRow(this.sql.exec(NEXT_SQL, queue)) ?? firstJobRow(this.sql.exec(OLDEST_BLOCKED_SQL, queue));
    return row ? toJob(row, this.host.store.lane) : null;
  }

  /**
   * A singleton enqueue of `spec`, whose id names no job: `write` it unless `skip` finds the queue
   * held; with `cancel-running`, in one transaction with the write, every running job of the queue
   * asked to cancel first (its ids answered as `cancelling`). Their in-process attempts are aborted
   * after the commit (`abortCancelled`), never inside it: an executor's abort listener runs at once.
   */
  apply(spec: JobSpec, mode: Singleton, write: () => Result<Inserted>): Result<Inserted> {
    const queue = spec.queue!;
    if (mode === "skip") {
      const job = this.holder(queue);
      return job ? ok({ status: "skipped", job }) : write();
    }
    let cancelling: string[] = [];
    const done = this.host.store.allOrNothing(() => {
      cancelling = this.requestCancels(queue, spec.id);
      return write();
    });
    if (!done.ok || done.value.status !== "queued") return done;
    return ok({ ...done.value, cancelling });
  }

  /** Aborts the in-process attempts of jobs a `cancel-running` enqueue asked to cancel (after its commit). */
  abortCancelled(ids: readonly string[]): void {
    for (const id of ids) this.host.dispatcher.abort(id, "cancelled");
  }

  /** Asks each running job of `queue` to cancel, as the cancel route does; their ids. */
  private requestCancels(queue: string, by: string): string[] {
    const ids = this.sql.exec<{ id: string }>(RUNNING_SQL, queue).toArray().map((r) => r.id);
    for (const id of ids) this.host.cancels.cancel(id, `cancelled by singleton enqueue of ${by}`);
    return ids;
  }
}
