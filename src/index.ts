/**
 * Switchyard as a library: a Worker defines its lane class with its executors, exports it (and the
 * registry) for its Durable Object bindings, and serves `createApp()`; code elsewhere uses a client.
 */
export { createApp, type AppType } from "./worker/app.js";
export { defineLane, Lane, type LaneOptions, type LostEvent, type TransitionEvent } from "./durable/lane.js";
export { LaneRegistry, REGISTRY_NAME } from "./durable/registry.js";
export type { SwitchyardEnv } from "./durable/env.js";
export {
  NonRetryableError,
  RetryAfterError,
  type AbortCause,
  type Checkpoints,
  type Executor,
  type ExecutorContext,
  type ExecutorRegistry,
} from "./durable/executors.js";
export { createLaneClient, type LaneNamespaceClient } from "./client/rpc.js";
export { createHttpClient, type HttpClient, type HttpClientOptions } from "./client/http.js";
export type { AckAnswer, AcksAnswer, BatchAnswer, CancelAnswer, EnqueueAnswer, JobPage, LaneClient } from "./client/types.js";
export { ERROR_STATUS } from "./worker/status.js";
export { QueueError, type ErrorBody, type ErrorCode, type ErrorDetails, type Issue, type Result } from "./shared/errors.js";
export { ManualClock, systemClock, type Clock } from "./shared/clock.js";
export type {
  AttemptError,
  Checkpoint,
  CheckpointInfo,
  ClaimedJob,
  Counts,
  EnqueueStatus,
  Job,
  JobState,
  Json,
  LaneInfo,
  Lease,
  LeaseView,
  Outcome,
  PulledJob,
} from "./shared/job.js";
export type {
  AckItem,
  AcksRequest,
  BatchEnqueueRequest,
  CancelRequest,
  CheckpointRequest,
  ClaimRequest,
  CompleteRequest,
  EnqueueRequest,
  FailRequest,
  LanePatch,
  ListQuery,
  ProgressRequest,
  ReleaseRequest,
  RenewRequest,
  SweepRequest,
} from "./shared/schemas.js";
export {
  createWorker,
  WorkerAbortError,
  type PullWorker,
  type WorkerAbortCause,
  type WorkerContext,
  type WorkerEvent,
  type WorkerHandler,
  type WorkerOptions,
  type WorkerStats,
} from "./client/worker.js";
