/**
 * `switchyard/client`: what code outside a Worker needs to talk to a Switchyard API (Node 20+,
 * browsers, other runtimes). Nothing here may import `cloudflare:workers` or a Durable Object, even
 * indirectly; `npm run check:pack` proves it against the packed entry (scripts/pack-consumer/).
 */
export { createHttpClient, type HttpClient, type HttpClientOptions, type HttpLaneClient } from "./http.js";
export { flow, type FlowAnswer, type FlowChild, type FlowRequest, type LaneSource } from "./flow.js";
export type { AckAnswer, AcksAnswer, BatchAnswer, CancelAnswer, EnqueueAnswer, EnqueueOptions, FailLaneAnswer, JobPage, LaneClient, PurgeAnswer, QueueInfo, WaitOptions } from "./types.js";
export type { WaitpointCompleteAnswer, WaitpointCreateAnswer, WaitpointListQuery } from "./types.js";
export { settledWaitpoint } from "./waitpoint-errors.js";
export type { Waitpoint, WaitpointCompleteRequest, WaitpointCreateRequest, WaitpointState } from "../shared/waitpoint.js";
export type { WaitpointPage } from "../shared/waitpoint-list.js";
export type { StreamEvent, StreamEventType, StreamWriteRequest, StreamWritten } from "../shared/stream.js";
export { QueueError, type ErrorBody, type ErrorCode, type ErrorDetails, type Issue, type Result } from "../shared/errors.js";
export type {
  AttemptError,
  Checkpoint,
  CheckpointInfo,
  ClaimedJob,
  Counts,
  DependencyOutcome,
  DependsOnItem,
  EnqueueStatus,
  Job,
  JobRef,
  JobState,
  Json,
  LaneInfo,
  LaneStats,
  Lease,
  LeaseView,
  Outcome,
  PulledJob,
  Fairness,
  KindCounts,
  RateLimit,
  Retention,
  JobDependencyOutcome,
  WaitForOutcome,
  WaitpointOutcome,
  WaitpointRef,
  WaitpointStats,
} from "../shared/job.js";
export type { Schedule, ScheduledJob, SchedulePage } from "../shared/schedule.js";
export type {
  AckItem,
  AcksRequest,
  BatchEnqueueRequest,
  CancelRequest,
  CheckpointRequest,
  ClaimRequest,
  CompleteRequest,
  EnqueueRequest,
  FailLaneRequest,
  FailRequest,
  LanePatch,
  ListQuery,
  ProgressRequest,
  QueuePut,
  RateLimit as RateLimitRequest,
  Debounce,
  DependencyRef,
  WaitpointDependencyRef,
  WaitRequest,
  ReleaseRequest,
  RenewRequest,
  SnoozeRequest,
  ScheduleListQuery,
  ScheduleRequest,
  SweepRequest,
} from "../shared/schemas.js";
export {
  createWorker,
  batch,
  type BatchJobAnswer,
  type WorkerBatchHandler,
  type WorkerBatchJob,
  type WorkerBatchOptions,
  NonRetryableError,
  RetryAfterError,
  WorkerAbortError,
  WorkerSnoozed,
  WorkerWaiting,
  type PullWorker,
  type WorkerAbortCause,
  type WorkerContext,
  type WorkerEvent,
  type WorkerHandler,
  type WorkerOptions,
  type WorkerStats,
} from "./worker.js";
