/**
 * Batch executors (docs/api.md "Batches"): one function that runs many due jobs of a kind together
 * (one provider call for 100 emails, one insert for 1,000 rows), each job still its own attempt with
 * its own lease, signal and outcome. `batchExecutor` marks the function it returns, so that it sits in
 * `defineLane({executors})` beside single-job executors and the dispatcher knows it by the mark.
 */
import { MAX_BATCH_EXECUTOR_SIZE, MAX_BATCH_EXECUTOR_WAIT_MS } from "../../shared/defaults.js";
import type { ClaimedJob, DependencyOutcome, Json } from "../../shared/job.js";
import type { BatchJob, BatchJobAnswer } from "../../shared/batch-answers.js";
import type { SwitchyardEnv } from "../env.js";
import type { Executor } from "./executors.js";

export type { BatchJob, BatchJobAnswer };

export interface BatchContext<E = SwitchyardEnv> {
  env: E;
  /** The lane's name. */
  lane: string;
}

export interface BatchExecutorOptions<E = SwitchyardEnv> {
  /** Most jobs started together, 1..100. */
  size: number;
  /** Longest a due job waits for company after its `runAt` before a smaller batch starts, 0..60000 ms. */
  waitMs: number;
  /** Runs the batch; answers one `BatchJobAnswer` per job, in input order. A throw fails every job. */
  run(jobs: BatchJob[], ctx: BatchContext<E>): BatchJobAnswer[] | Promise<BatchJobAnswer[]>;
}

const BATCH = Symbol.for("switchyard.batchExecutor");

/** An executor that runs its kind's jobs in batches. */
export type BatchExecutor<E = SwitchyardEnv> = Executor<E> & { readonly [BATCH]: BatchExecutorOptions<E> };

/**
 * A batch executor for `defineLane({executors: {kind: batchExecutor({size, waitMs, run})}})`.
 * Throws at once when `size` (1..100) or `waitMs` (0..60000) is out of range, or `run` is no function.
 */
export function batchExecutor<E = SwitchyardEnv>(options: BatchExecutorOptions<E>): BatchExecutor<E> {
  const { size, waitMs, run } = options ?? ({} as BatchExecutorOptions<E>);
  if (!Number.isInteger(size) || size < 1 || size > MAX_BATCH_EXECUTOR_SIZE) {
    throw new RangeError(`batchExecutor: size must be an integer 1..${MAX_BATCH_EXECUTOR_SIZE}, got ${String(size)}`);
  }
  if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > MAX_BATCH_EXECUTOR_WAIT_MS) {
    throw new RangeError(`batchExecutor: waitMs must be an integer 0..${MAX_BATCH_EXECUTOR_WAIT_MS}, got ${String(waitMs)}`);
  }
  if (typeof run !== "function") throw new TypeError("batchExecutor: run must be a function");
  // The dispatcher never calls it as a single-job executor: it starts the kind's jobs in batches.
  const executor = (() => {
    throw new Error("a batch executor runs only in batches");
  }) as unknown as BatchExecutor<E>;
  Object.defineProperty(executor, BATCH, { value: Object.freeze({ size, waitMs, run }) });
  return executor;
}

/** The batch options of an executor, or null for a single-job executor. */
export function batchOptionsOf<E>(executor: Executor<E>): BatchExecutorOptions<E> | null {
  return (executor as Partial<BatchExecutor<E>>)[BATCH] ?? null;
}

/**
 * A job of a batch as `run` gets it, from its attempt; its dependencies from `dependencies`, which
 * reads the lane once, on first use. `payload`: its payload whole, when its row holds only a reference to it in R2.
 */
export function batchJobOf(attempt: { job: ClaimedJob; controller: AbortController }, dependencies: () => DependencyOutcome[], payload: Json = attempt.job.payload): BatchJob {
  const { job } = attempt;
  return {
    id: job.id,
    payload,
    attempt: job.attempts,
    signal: attempt.controller.signal,
    get dependencies() {
      return dependencies(); // read once by its maker (payloads/held-dependencies.ts `wholeForExecutor`)
    },
  };
}
