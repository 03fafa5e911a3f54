/** Executors: the functions a user registers, by kind, to run a lane's jobs in process. */
import type { ErrorCode } from "../../shared/errors.js";
import type { ClaimedJob, DependencyOutcome, Job, Json, WaitForOutcome } from "../../shared/job.js";
import type { LostCause } from "../../shared/log.js";
import type { SwitchyardEnv } from "../env.js";

export interface ExecutorContext<E = SwitchyardEnv> {
  /** Fires on cancel, on `timeoutMs`, and when the attempt loses its lease. Honour it. */
  signal: AbortSignal;
  job: Job;
  /** 1 for the first attempt. */
  attempt: number;
  env: E;
  /**
   * The W3C `traceparent` the job was enqueued with (`job.traceparent`), or null: make it the parent
   * of the attempt's span to follow the producer's trace into the job (docs/workers.md).
   */
  traceparent: string | null;
  /**
   * A durable step: the value an earlier attempt of this job recorded under `name`, without running
   * `fn`; else runs `fn`, records its result (JSON, at most 128 KiB) through the fence, and returns it
   * as every later attempt will see it (through JSON). A record the fence refuses aborts the attempt
   * as lost: its signal fires and the step rejects with the signal's reason. `name` follows docs/api.md's
   * name pattern; the job's checkpoints are deleted when it completes.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /** The job's checkpoints, read and written directly (`step` is built on them). */
  checkpoints: Checkpoints;
  /** Reports the job's progress (any JSON, at most 16 KiB) through the fence, keeping the lease; refused like a step's record. */
  progress(value: unknown): Promise<void>;
  /** The job's stream (docs/api.md "Results"): what this attempt writes for its readers. */
  stream: JobStream;
  /**
   * What the job's dependencies settled as and returned (docs/api.md "Dependencies"), in the order
   * `dependsOn` names them; empty without any. Read from the lane on first use.
   */
  readonly dependencies: DependencyOutcome[];
  /**
   * A durable sleep: the first time, records its wake instant (now + `ms`, at most a year) as the
   * checkpoint `name` and snoozes the job until then, which ends this attempt without spending it
   * (the promise rejects with a `JobSnoozed`: let it propagate; whatever the executor answers after
   * it is ignored). The attempt that resumes after that instant passes through at once, past every
   * step recorded before.
   */
  sleep(name: string, ms: number): Promise<void>;
  /** `sleep` until the instant `epochMs` (recorded the first time, as `sleep` records its own). */
  sleepUntil(name: string, epochMs: number): Promise<void>;
  /**
   * A durable wait on the waitpoint `<job id>.<name>` of the job's lane (docs/api.md "Waitpoints"):
   * the first time, the waitpoint is created pending (timing out in `timeoutMs`, 1..31536000000,
   * when given) and the attempt ends in a wait, without spending it (the promise rejects with a
   * `JobWaiting`: let it propagate); the job is blocked until the waitpoint settles. The attempt that
   * resumes passes through at once with `{outcome: "completed", result}` or `{outcome: "timedOut"}`:
   * a timeout never fails the job. Rejects with `invalid_request` when `<job id>.<name>` is no waitpoint id.
   */
  waitFor(name: string, options?: { timeoutMs?: number }): Promise<WaitForOutcome>;
  /** The waitpoint `waitFor(name)` waits on, `<job id>.<name>`, to hand out before waiting (throws as `waitFor` rejects). */
  waitpointId(name: string): string;
}

/** The checkpoints of the job as its attempt sees them (docs/api.md "Checkpoints"). */
export interface Checkpoints {
  /** What this attempt and the earlier ones recorded, name → value. */
  load(): Promise<Record<string, Json>>;
  /**
   * Records `value` under `name` for this attempt, through the fence. Rejects with `payload_too_large`
   * (over 128 KiB) or `checkpoint_limit` (past 1,000 names or 1 MiB per job), recording nothing; a
   * refusal of the fence aborts the attempt as lost and rejects with the signal's reason.
   */
  save(name: string, value: unknown): Promise<void>;
}

/** An attempt's writes to its job's stream. */
export interface JobStream {
  /**
   * Writes one chunk (any JSON, at most 64 KiB serialized) through the fence, keeping the lease.
   * Rejects with `payload_too_large`, or `stream_limit` (past 1,000 chunks or 1 MiB per job), writing
   * nothing (the executor may catch it); a refusal of the fence aborts the attempt as lost and
   * rejects with the signal's reason.
   */
  write(data: unknown): Promise<void>;
}

/** Runs one attempt of a job. Its return value (JSON) is the job's result; a throw fails the attempt. */
export type Executor<E = SwitchyardEnv> = (payload: any, ctx: ExecutorContext<E>) => unknown;

export type ExecutorRegistry<E = SwitchyardEnv> = Readonly<Record<string, Executor<E>>>;

export { NonRetryableError, RetryAfterError } from "../../shared/executor-errors.js";

/** What a durable sleep rejects with: its attempt ends in a snooze until `wakeAt`. */
export class JobSnoozed extends Error {
  override name = "JobSnoozed";
  constructor(
    readonly jobId: string,
    readonly wakeAt: number,
  ) {
    super(`job ${jobId} sleeps until ${new Date(wakeAt).toISOString()}`);
  }
}

/** What a durable wait rejects with: its attempt ends in a wait on the waitpoint. */
export class JobWaiting extends Error {
  override name = "JobWaiting";
  constructor(
    readonly jobId: string,
    readonly waitpoint: string,
  ) {
    super(`job ${jobId} waits on waitpoint ${waitpoint}`);
  }
}

/** Why an in-process attempt's signal fired. */
export type AbortCause = "cancelled" | "timeout" | "lost";

export type { Json };

/** The fence's refusals that mean an attempt lost its lease, and what to call the loss. */
export const LOST_CAUSES: Partial<Record<ErrorCode, LostCause>> = {
  lease_superseded: "superseded",
  lease_expired: "expired",
  job_settled: "settled",
};

/** The reason an attempt's signal carries. */
export class AbortError extends Error {
  override name = "AbortError";
  constructor(
    readonly abortCause: AbortCause,
    job: Job | ClaimedJob,
  ) {
    super(`attempt of job ${job.id} aborted: ${abortCause}`);
  }
}
