/**
 * Batch handlers of the pull-worker runtime (docs/api.md "Batches"): `batch({size, waitMs, run})` in
 * `createWorker({handlers})`. Its kind is claimed on its own, with `max` and `minJobs` = `size` (no
 * more than the free slots) and its `waitMs`, so that the lane answers once `size` jobs are claimable
 * or the wait is over. Each claimed job is an attempt of its own (worker-attempt.ts: renewals, its
 * signal, its one ack), whose handler waits for the batch's one `run`; the acks of a batch, answered
 * together, go in one request (ack-batcher.ts).
 */
import { MAX_BATCH_EXECUTOR_SIZE, MAX_CLAIM_WAIT_MS } from "../shared/defaults.js";
import { batchEndings, type BatchJob, type BatchJobAnswer, type BatchEnding } from "../shared/batch-answers.js";
import { QueueError } from "../shared/errors.js";
import type { WorkerHandler } from "./worker-attempt.js";
import { wholeOfPulled, type ReadValue } from "./worker-held.js";

export type { BatchJobAnswer };

/** One job of a batch as `run` sees it (the in-process batch executor's too). */
export type WorkerBatchJob = BatchJob;

export interface WorkerBatchOptions {
  /** Most jobs run together, 1..100 (and no more than the worker's free slots). */
  size: number;
  /** How long a claim waits for `size` jobs before it takes fewer, 0..30,000 ms (a claim's `waitMs`). */
  waitMs: number;
  /** Runs the batch; answers one `BatchJobAnswer` per job, in input order. A throw fails every job. */
  run(jobs: WorkerBatchJob[]): BatchJobAnswer[] | Promise<BatchJobAnswer[]>;
}

const BATCH = Symbol.for("switchyard.workerBatch");

/** A handler that runs its kind's jobs in batches. */
export type WorkerBatchHandler = WorkerHandler & { readonly [BATCH]: WorkerBatchOptions };

/**
 * A batch handler for `createWorker({handlers: {kind: batch({size, waitMs, run})}})`. Throws
 * `invalid_request` at once when `size` (1..100) or `waitMs` (0..30,000) is out of range.
 */
export function batch(options: WorkerBatchOptions): WorkerBatchHandler {
  const { size, waitMs, run } = options ?? ({} as WorkerBatchOptions);
  if (!Number.isInteger(size) || size < 1 || size > MAX_BATCH_EXECUTOR_SIZE) throw new QueueError("invalid_request", `batch: size must be an integer in 1..${MAX_BATCH_EXECUTOR_SIZE}`);
  if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > MAX_CLAIM_WAIT_MS) throw new QueueError("invalid_request", `batch: waitMs must be an integer in 0..${MAX_CLAIM_WAIT_MS}`);
  if (typeof run !== "function") throw new QueueError("invalid_request", "batch: run must be a function");
  const handler = (() => {
    throw new Error("a batch handler runs only in batches");
  }) as unknown as WorkerBatchHandler;
  Object.defineProperty(handler, BATCH, { value: Object.freeze({ size, waitMs, run }) });
  return handler;
}

/** The batch options of a handler, or null for a single-job handler. */
export function batchOf(handler: WorkerHandler | undefined): WorkerBatchOptions | null {
  return (handler as Partial<WorkerBatchHandler> | undefined)?.[BATCH] ?? null;
}

/**
 * The handlers of one claimed batch of `count` jobs, by place: each records its job, the last one
 * calls `run` once for all, and each then answers its own job from `run`'s answer. A payload or
 * dependency's result held in R2 is read first (`read`), so that `run` gets each whole; a read that
 * fails fails every job of the batch, as a throw of `run` would.
 */
export function batchHandlers(options: WorkerBatchOptions, count: number, read: ReadValue): (index: number) => WorkerHandler {
  const jobs: WorkerBatchJob[] = new Array(count);
  const reads: Promise<void>[] = [];
  let seen = 0;
  let answered!: (endings: BatchEnding[]) => void;
  const endings = new Promise<BatchEnding[]>((resolve) => (answered = resolve));
  const runAll = () =>
    Promise.all(reads)
      .then(() => options.run(jobs))
      .then((value) => answered(batchEndings({ ok: true, value }, count)), (error: unknown) => answered(batchEndings({ ok: false, error }, count)));
  return (index) => (payload, ctx) => {
    const job: WorkerBatchJob = (jobs[index] = { id: ctx.job.id, payload, attempt: ctx.attempt, signal: ctx.signal, dependencies: ctx.job.dependencies });
    const whole = wholeOfPulled(ctx.job, read);
    if (whole) reads.push(whole.then((w) => void Object.assign(job, w)));
    if (++seen === count) void runAll();
    return endings.then((all) => {
      const ending = all[index]!;
      if (ending.ok) return ending.value;
      throw ending.error;
    });
  };
}
