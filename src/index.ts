/**
 * Switchyard as a library: a Worker defines its lane class with its executors, exports it (and the
 * registry) for its Durable Object bindings, and serves `createApp()`; code elsewhere uses a client
 * (`switchyard/client`, which imports nothing of the Workers runtime).
 */
export { createApp, type AppType } from "./worker/app.js";
export { createWorker } from "./worker/worker.js";
export { checkAlarms, type AlarmCheckReport, type AlarmCheckReport as BeltReport } from "./worker/alarm-check.js";
export { defineLane, Lane, type LaneOptions, type LostEvent, type TransitionEvent } from "./durable/lane.js";
export { LaneRegistry, REGISTRY_NAME } from "./durable/registry.js";
export type { SwitchyardEnv } from "./durable/env.js";
export type { WorkerEnv } from "./worker/env.js";
export {
  JobSnoozed,
  JobWaiting,
  NonRetryableError,
  RetryAfterError,
  type AbortCause,
  type Checkpoints,
  type Executor,
  type ExecutorContext,
  type ExecutorRegistry,
} from "./durable/attempts/executors.js";
export {
  batchExecutor,
  type BatchJobAnswer,
  type BatchContext,
  type BatchExecutor,
  type BatchExecutorOptions,
  type BatchJob,
} from "./durable/attempts/batch-executor.js";
export { createLaneClient, type LaneNamespaceClient } from "./client/rpc.js";
export type { KindSchema, KindSchemas, KindJsonSchemas, PayloadOf, ResultOf, StandardSchemaV1 } from "./shared/kinds.js";
export type { KindName, KindsOf, LaneClientOf, TypedEnqueueAnswer, TypedEnqueueRequest, TypedJob, TypedLaneClient } from "./client/typed-kinds.js";
export type { LaneClass } from "./durable/lane.js";
export type { AppOptions } from "./worker/app.js";
export { ERROR_STATUS } from "./worker/status.js";
export { ManualClock, systemClock, type Clock } from "./shared/clock.js";
// Everything of the client entry too: one list, so an export added there is here as well.
export * from "./client/index.js";
