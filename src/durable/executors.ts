/** Executors: the functions a user registers, by kind, to run a lane's jobs in process. */
import type { Job, Json } from "../shared/job.js";
import type { SwitchyardEnv } from "./env.js";

export interface ExecutorContext<E = SwitchyardEnv> {
  /** Fires on cancel, on `timeoutMs`, and when the attempt loses its lease. Honour it. */
  signal: AbortSignal;
  job: Job;
  /** 1 for the first attempt. */
  attempt: number;
  env: E;
}

/** Runs one attempt of a job. Its return value (JSON) is the job's result; a throw fails the attempt. */
export type Executor<E = SwitchyardEnv> = (payload: any, ctx: ExecutorContext<E>) => unknown;

export type ExecutorRegistry<E = SwitchyardEnv> = Readonly<Record<string, Executor<E>>>;

export { NonRetryableError, RetryAfterError } from "../shared/executor-errors.js";

/** Why an in-process attempt's signal fired. */
export type AbortCause = "cancelled" | "timeout" | "lost";

export type { Json };
