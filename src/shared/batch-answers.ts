/**
 * A batch executor's jobs and answers (docs/api.md "Batches"), the same in process
 * (durable/attempts/batch-executor.ts) and by a pull worker's `batch(...)` handler
 * (client/worker-batch.ts): one per job in input order; anything else fails every job alike.
 */
import { NonRetryableError, RetryAfterError } from "./executor-errors.js";
import type { DependencyOutcome } from "./job.js";

/** One job of a batch as `run` sees it, in process and in a pull worker alike: no durable steps, its own signal. */
export interface BatchJob {
  id: string;
  payload: any;
  /** 1 for the first attempt. */
  attempt: number;
  /** Fires on this job's cancel or its own `timeoutMs`, when its attempt loses its lease, or (a pull worker's) when the worker stops before `run` returns. */
  signal: AbortSignal;
  /** What the job's dependencies settled as and returned, in `dependsOn` order; empty without any. */
  readonly dependencies: DependencyOutcome[];
}

/** `run`'s answer for one job, in input order: done with a result, or failed (retried unless `retry` is false). */
export type BatchJobAnswer = { ok: true; result?: unknown } | { ok: false; error: string; retry?: boolean; retryAfterMs?: number };

/** What one job's attempt ended with: a result, or an error as a single-job executor would throw it. */
export type BatchEnding = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * What each job's attempt ended with, from `run`'s answer: one per job in input order, or, for an
 * answer that is not an array of that length, the same failure for every job.
 */
export function batchEndings(answer: BatchEnding, count: number): BatchEnding[] {
  if (!answer.ok) return Array.from({ length: count }, () => answer);
  const answers: unknown = answer.value;
  if (!Array.isArray(answers) || answers.length !== count) {
    const got = Array.isArray(answers) ? `an array of ${answers.length}` : answers === null ? "null" : typeof answers;
    const error = new Error(`batch executor answered ${got}, not an array of ${count} answers`);
    return Array.from({ length: count }, () => ({ ok: false, error }));
  }
  return answers.map((one: unknown): BatchEnding => endingOf(one));
}

function endingOf(one: unknown): BatchEnding {
  if (typeof one !== "object" || one === null) return { ok: false, error: new Error(`batch executor answered ${one === null ? "null" : typeof one} for a job, not {ok, …}`) };
  const a = one as { ok?: unknown; result?: unknown; error?: unknown; retry?: unknown; retryAfterMs?: unknown };
  if (a.ok === true) return { ok: true, value: a.result };
  const message = typeof a.error === "string" && a.error !== "" ? a.error : a.ok === false ? "batch executor failed the job" : "batch executor answered a job without ok: true or false";
  if (a.ok === false && a.retry === false) return { ok: false, error: new NonRetryableError(message) };
  if (a.ok === false && typeof a.retryAfterMs === "number" && Number.isFinite(a.retryAfterMs)) return { ok: false, error: new RetryAfterError(message, a.retryAfterMs) };
  return { ok: false, error: new Error(message) };
}

