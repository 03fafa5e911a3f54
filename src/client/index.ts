/**
 * `switchyard/client`: what code outside a Worker needs to talk to a Switchyard API (Node 20+,
 * browsers, other runtimes). Nothing here may import `cloudflare:workers` or a Durable Object, even
 * indirectly; `npm run check:pack` proves it against the packed entry (scripts/pack-consumer/).
 */
export { createHttpClient, type HttpClient, type HttpClientOptions } from "./http.js";
export type { BatchAnswer, CancelAnswer, EnqueueAnswer, FailLaneAnswer, JobPage, LaneClient, PurgeAnswer, QueueInfo } from "./types.js";
export { QueueError, type ErrorBody, type ErrorCode, type ErrorDetails, type Issue, type Result } from "../shared/errors.js";
export type { ClaimedJob, Counts, EnqueueStatus, Job, JobState, Json, LaneInfo, LaneStats, Lease, LeaseView, Outcome, Retention } from "../shared/job.js";
export type {
  BatchEnqueueRequest,
  CancelRequest,
  ClaimRequest,
  CompleteRequest,
  EnqueueRequest,
  FailLaneRequest,
  FailRequest,
  LanePatch,
  ListQuery,
  ReleaseRequest,
  RenewRequest,
  SweepRequest,
} from "../shared/schemas.js";
