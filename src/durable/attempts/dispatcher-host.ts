/**
 * What the dispatcher (dispatcher.ts) needs of its lane: the claim, the fence, steps, streams, waits,
 * and the hooks it tells of an attempt's end.
 */
import type { PayloadStore } from "../payloads/payload-store.js";
import type { Clock } from "../../shared/clock.js";
import type { Result } from "../../shared/errors.js";
import type { ClaimedJob } from "../../shared/job.js";
import type { LostCause } from "../../shared/log.js";
import type { Dependencies } from "../deps/dependencies.js";
import type { CheckpointStore } from "../steps/checkpoints.js";
import type { Cancels } from "./cancel.js";
import type { Claims } from "./claim.js";
import type { FencedWrites } from "./fenced-writes.js";

/** What an attempt's stream writes reach (results/stream-log.ts), and the look its progress asks of held readers. */
export interface AttemptStreams {
  write(id: string, token: string, chunks: readonly string[]): Result<unknown>;
  progressed(): void;
}

export interface DispatcherHost<E> {
  readonly lane: string;
  /** Big payloads and results in R2: an executor gets them whole, and its big result goes there (payloads/). */
  readonly payloads: PayloadStore;
  /** The claim (claim.ts): the dispatcher claims through it like any pull consumer. */
  readonly claims: Claims;
  /** The fenced writes its attempts make (fenced-writes.ts). */
  readonly fenced: FencedWrites;
  readonly cancels: Cancels;
  /** Where an attempt's steps record their checkpoints and progress. */
  readonly checkpoints: CheckpointStore;
  /** Where an attempt's chunks go (its job's stream), and who is told of its progress (the stream's held readers). */
  readonly streams: AttemptStreams;
  /** What an attempt reads of its job's dependencies (`ctx.dependencies`). */
  readonly dependencies: Dependencies;
  /** Where a durable wait ends its attempt (waits/waits.ts). */
  readonly waits: { wait(id: string, token: string, waitpoint: string, timeoutMs: number | undefined): Result<unknown> };
  readonly clock: Clock;
  readonly env: E;
  /**
   * Rows changed or a slot came free: flush (re-arm the alarm and pump again). `onlyFreed`: an attempt
   * of a job outside any queue completed, which made no other job claimable.
   */
  changed(onlyFreed?: boolean): void;
  /** An attempt ended without a write: it lost its lease. */
  lost(job: ClaimedJob, cause: LostCause, message: string): void;
  /** An aborted executor has not returned after the grace period. */
  stuck(job: ClaimedJob, abortedForMs: number): void;
  /** Keeps the object alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
  /** Runs `fn` in one transaction: a batch's outcomes are written together. */
  together<T>(fn: () => T): T;
  /** Milliseconds an aborted executor keeps its slot before it is called stuck. */
  readonly abortGraceMs: number;
}
