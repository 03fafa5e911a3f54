/**
 * One in-process attempt as the dispatcher keeps it (dispatcher.ts): its job, lease token, signal and
 * how far it has got; and what its end means, whatever its executor threw.
 */
import type { ClaimedJob } from "../../shared/job.js";
import type { DurableSteps } from "../steps/steps.js";
import { NonRetryableError, RetryAfterError, type AbortCause } from "./executors.js";

/** What the executor did: returned a value, or threw. */
export type Ended = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface Attempt {
  job: ClaimedJob;
  /** Its job's row, for the fenced records of its steps. */
  seq: number;
  /** The current lease token; replaced on every renewal. */
  token: string;
  controller: AbortController;
  cause: AbortCause | null;
  /** Wound up (outcome written, or nothing if lost); whatever the executor does next is ignored. */
  ended: boolean;
  /** The executor has returned (or thrown). */
  returned: boolean;
  /** When `timeoutMs` runs out, on the platform clock (timers run on real time). */
  deadline: number;
  /** Aborted long ago and still running: its slot is given back. */
  stuck: boolean;
  /** Its steps recorded a checkpoint. */
  recorded: boolean;
  /** `ctx.step`, `ctx.checkpoints` and `ctx.progress`, once the executor has asked for one. */
  steps: DurableSteps | null;
  /** A durable sleep asked to end the attempt in a snooze until then (null: none). */
  snoozeUntil: number | null;
  /** A durable wait asked to end the attempt in a wait on this waitpoint (null: none). */
  waitOn: { waitpoint: string; timeoutMs: number | undefined } | null;
}

/** Why an ended attempt's writes are refused: its signal's reason, or (its executor returned) that it is over. */
export function reasonOf(attempt: Attempt): Error {
  const reason: unknown = attempt.controller.signal.reason;
  return reason instanceof Error ? reason : new Error(`the attempt of job ${attempt.job.id} is over`);
}

/** What a thrown value asks of its retry: none (`NonRetryableError`), later (`RetryAfterError`), or the backoff; never a throw. */
export function retryOf(error: unknown): { retry: boolean; retryAfterMs: number | null } {
  try {
    if (error instanceof NonRetryableError) return { retry: false, retryAfterMs: null };
    if (error instanceof RetryAfterError) return { retry: true, retryAfterMs: Math.max(0, Math.floor(error.retryAfterMs)) };
  } catch {
    // a hostile value (a proxy whose prototype throws): an ordinary failure
  }
  return { retry: true, retryAfterMs: null };
}
