/**
 * What an executor throws to steer its job's retry, in process (src/durable/executors.ts) and in an
 * external worker (src/client/worker.ts) alike. Here, in shared/, so that a worker in Node imports
 * them without anything of the runtime; written without parameter properties, which Node's type
 * stripping cannot run.
 */

/** Throw it from an executor to fail the job now, with no retry. */
export class NonRetryableError extends Error {
  override name = "NonRetryableError";
}

/** Throw it from an executor to retry after `retryAfterMs` instead of the backoff (attempts permitting). */
export class RetryAfterError extends Error {
  override name = "RetryAfterError";
  /** Milliseconds to wait before the next attempt. */
  readonly retryAfterMs: number;

  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}
