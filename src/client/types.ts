/**
 * What both clients offer for one lane, whether they reach it by RPC (a Worker binding the lane
 * namespace) or over HTTP. Every method answers the value of shared/API.md's success body, or throws
 * a `QueueError` carrying the API's code.
 */
import type { BatchAnswer, CancelAnswer, EnqueueAnswer, JobPage } from "../shared/answers.js";
import type { ClaimedJob, Job, LaneInfo, Lease } from "../shared/job.js";
import type {
  BatchEnqueueRequest,
  CancelRequest,
  ClaimRequest,
  CompleteRequest,
  EnqueueRequest,
  FailRequest,
  LanePatch,
  ListQuery,
  ReleaseRequest,
  RenewRequest,
  SweepRequest,
} from "../shared/schemas.js";
import type { Schedule, SchedulePage } from "../shared/schedule.js";
import type { ScheduleListQuery, ScheduleRequest } from "../shared/schemas.js";

export type { BatchAnswer, CancelAnswer, EnqueueAnswer, JobPage };

export interface LaneClient {
  /** The lane's name. */
  readonly name: string;
  /** Enqueues a job, idempotent by `id`: `queued`, or `duplicate` when the id exists with the same spec. */
  enqueue(request: EnqueueRequest): Promise<EnqueueAnswer>;
  /** Enqueues 1..1000 jobs, all or nothing. */
  enqueueBatch(request: BatchEnqueueRequest): Promise<BatchAnswer>;
  get(id: string): Promise<Job>;
  /** A page of jobs in enqueue order; pass `cursor` back to continue (null: the end). */
  list(query?: ListQuery): Promise<JobPage>;
  info(): Promise<LaneInfo>;
  configure(patch: LanePatch): Promise<LaneInfo>;
  cancel(id: string, request?: CancelRequest): Promise<CancelAnswer>;
  requeue(id: string): Promise<{ job: Job }>;
  sweep(request: SweepRequest): Promise<{ removed: number }>;
  /** Pull consumers: claims up to `max` due jobs, each with its lease token. */
  claim(request?: ClaimRequest): Promise<{ jobs: ClaimedJob[] }>;
  /** A new token for the lease; the old one is then `lease_superseded`. */
  renew(id: string, request: RenewRequest): Promise<{ lease: Lease }>;
  complete(id: string, request: CompleteRequest): Promise<{ job: Job }>;
  fail(id: string, request: FailRequest): Promise<{ job: Job }>;
  release(id: string, request: ReleaseRequest): Promise<{ job: Job }>;
  /** Creates or replaces the schedule `name`: a cron expression (in a time zone) or an interval, and the job it enqueues. */
  putSchedule(name: string, request: ScheduleRequest): Promise<{ schedule: Schedule }>;
  getSchedule(name: string): Promise<Schedule>;
  /** The lane's schedules by name (every one, unless over 500 or 4 MiB of them: then pass `cursor` back). */
  listSchedules(query?: ScheduleListQuery): Promise<SchedulePage>;
  /** Deletes a schedule; the jobs it enqueued stay. */
  deleteSchedule(name: string): Promise<{ deleted: true }>;
}
