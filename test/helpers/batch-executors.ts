/**
 * Controllable batch executors for the suite's lanes (`test.batch`, `typed.batch`: size 3, waitMs 1000): each call
 * of its `run` is kept, and a test answers it (or throws) when it likes. Tests and lanes share one
 * isolate, so a test awaits the call from inside the lane's I/O context.
 */
import { batchExecutor, type BatchJobAnswer, type BatchJob } from "../../src/durable/attempts/batch-executor.js";

export const TEST_BATCH = { size: 3, waitMs: 1000 } as const;

/** One call of `test.batch`'s `run`. */
export interface BatchCall {
  jobs: BatchJob[];
  answer(answers: unknown): void;
  throw(error: unknown): void;
}

const calls: BatchCall[] = [];
const waiters: (() => void)[] = [];

/** Every call of `test.batch` so far whose jobs carry `tag` in their payload. */
export function batchCalls(tag: string): BatchCall[] {
  return calls.filter((c) => c.jobs.some((j) => (j.payload as { tag?: string } | null)?.tag === tag));
}

/** Resolves with call number `n` (1-based) of the jobs tagged `tag`, once it has come. */
export function batchCall(tag: string, n = 1): Promise<BatchCall> {
  return new Promise((resolve) => {
    const check = () => {
      const call = batchCalls(tag)[n - 1];
      if (call) resolve(call);
      return call !== undefined;
    };
    if (!check()) waiters.push(function again() {
      if (!check()) waiters.push(again);
    });
  });
}

/** A batch executor of TEST_BATCH's size and wait whose calls a test answers. */
const answeredByTests = () =>
  batchExecutor({
    ...TEST_BATCH,
    run: (jobs: BatchJob[]) =>
      new Promise<BatchJobAnswer[]>((resolve, reject) => {
        calls.push({ jobs, answer: (answers) => resolve(answers as BatchJobAnswer[]), throw: reject });
        for (const wake of waiters.splice(0)) wake();
      }),
  });

export const testBatchExecutors = {
  "test.batch": answeredByTests(),
  /** A declared kind (kinds.ts) with a result schema. */
  "typed.batch": answeredByTests(),
};
