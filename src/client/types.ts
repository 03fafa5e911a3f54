/**
 * What both clients offer for one lane, whether they reach it by RPC (a Worker binding the lane
 * namespace) or over HTTP. Every method answers the value of docs/api.md's success body, or throws
 * a `QueueError` carrying the API's code.
 */
import type { AckAnswer, AcksAnswer, BatchAnswer, CancelAnswer, EnqueueAnswer, FailLaneAnswer, JobPage, PurgeAnswer, QueueInfo } from "../shared/answers.js";
import type { Checkpoint, CheckpointInfo, Job, JobRef, Json, LaneInfo, Lease, PulledJob } from "../shared/job.js";
import type {
  AcksRequest,
  BatchEnqueueRequest,
  CancelRequest,
  CheckpointRequest,
  QueuePut,
  ClaimRequest,
  CompleteRequest,
  EnqueueRequest,
  FailLaneRequest,
  FailRequest,
  LanePatch,
  ListQuery,
  ProgressRequest,
  ReleaseRequest,
  RenewRequest,
  SnoozeRequest,
  SweepRequest,
  WaitRequest,
} from "../shared/schemas.js";
import type { Schedule, SchedulePage } from "../shared/schedule.js";
import type { ScheduleListQuery, ScheduleRequest } from "../shared/schemas.js";
import type { Waitpoint, WaitpointCompleteRequest, WaitpointCreateRequest, WaitpointState } from "../shared/waitpoint.js";
import type { Bulk } from "../shared/bulk.js";
import type { BulkRequest } from "../shared/bulk-schemas.js";
import type { WaitpointPage } from "../shared/waitpoint-list.js";

export type { AckAnswer, AcksAnswer, BatchAnswer, CancelAnswer, EnqueueAnswer, FailLaneAnswer, JobPage, PurgeAnswer, QueueInfo };

/** What goes with an enqueue besides its request. */
export interface EnqueueOptions {
  /**
   * The W3C trace context of the producer (`00-<trace-id>-<parent-id>-<flags>`), stored on the job
   * (`job.traceparent`; every job of a batch) and handed to its executor; not part of the job's spec.
   * The HTTP client sends it as the `traceparent` header. A malformed one is refused (`invalid_request`).
   */
  traceparent?: string;
}

/** How long a client waits for a job (`wait`, `enqueueAndWait`). */
export interface WaitOptions {
  /**
   * The longest wait in all, in ms (default 30000): each request waits at most 30000 ms in the lane and
   * is asked again until then. Once it has passed, the job is answered as it stands (unsettled is no error).
   */
  timeoutMs?: number;
}

/**
 * What `createWaitpoint` answers: the waitpoint, and whether this call created it (201) or found it as
 * it is (200). `callbackUrl`: the signed URL that completes it without a token (absolute, under the
 * client's `baseUrl`), given by the HTTP client while the API has a `SIGNING_SECRET` (the RPC client
 * holds no secret, so never by it).
 */
export interface WaitpointCreateAnswer {
  waitpoint: Waitpoint;
  created: boolean;
  callbackUrl?: string;
}

/** What `completeWaitpoint` answers: the waitpoint now `completed`, and whether the id was unknown and so created completed (201). */
export interface WaitpointCompleteAnswer {
  waitpoint: Waitpoint;
  created: boolean;
}

/** Which waitpoints `listWaitpoints` answers: of one state (default every state), whose id starts with `prefix`, at most `limit` (1..500, default 100), after `cursor`. */
export type WaitpointListQuery = {
  state?: WaitpointState;
  prefix?: string;
  limit?: number;
  cursor?: string;
};

export interface LaneClient {
  /** The lane's name. */
  readonly name: string;
  /** Enqueues a job, idempotent by `id`: `queued`, or `duplicate` when the id exists with the same spec. */
  enqueue(request: EnqueueRequest, options?: EnqueueOptions): Promise<EnqueueAnswer>;
  /** Enqueues 1..1000 jobs, all or nothing. */
  enqueueBatch(request: BatchEnqueueRequest, options?: EnqueueOptions): Promise<BatchAnswer>;
  get(id: string): Promise<Job>;
  /** Job `id` once it is settled, or as it stands once `timeoutMs` has passed; throws `job_not_found` for an unknown job. */
  wait(id: string, options?: WaitOptions): Promise<Job>;
  /**
   * Enqueues a job, then waits for it as `wait` does: the enqueue's `status` (`queued`, `duplicate`,
   * `debounced`) with the job it names, settled or as it stands once `timeoutMs` has passed. A refused
   * enqueue throws at once.
   */
  enqueueAndWait(request: EnqueueRequest, options?: EnqueueOptions & WaitOptions): Promise<EnqueueAnswer>;
  /** A page of jobs in enqueue order; pass `cursor` back to continue (null: the end). */
  list(query?: ListQuery): Promise<JobPage>;
  info(): Promise<LaneInfo>;
  configure(patch: LanePatch): Promise<LaneInfo>;
  cancel(id: string, request?: CancelRequest): Promise<CancelAnswer>;
  requeue(id: string): Promise<{ job: Job }>;
  sweep(request: SweepRequest): Promise<{ removed: number; waitpointsRemoved: number }>;
  /** Pull consumers: claims up to `max` due jobs, each with its lease token and what its earlier attempts recorded. */
  claim(request?: ClaimRequest): Promise<{ jobs: PulledJob[] }>;
  /** A new token for the lease; the old one is then `lease_superseded`. */
  renew(id: string, request: RenewRequest): Promise<{ lease: Lease }>;
  complete(id: string, request: CompleteRequest): Promise<{ job: Job }>;
  fail(id: string, request: FailRequest): Promise<{ job: Job }>;
  release(id: string, request: ReleaseRequest): Promise<{ job: Job }>;
  /** Ends the attempt and queues the job again after `delayMs`, the attempt given back; the token is then `lease_superseded`. */
  snooze(id: string, request: SnoozeRequest): Promise<{ job: Job }>;
  /**
   * Ends the attempt in a wait on waitpoint `request.waitpoint` of the lane (created pending with
   * `timeoutMs` when missing), fenced like complete: the job is `blocked` on it (`queued` when it has
   * settled), the attempt given back; the attempt that resumes reads the outcome in `dependencies`.
   */
  waitOn(id: string, request: WaitRequest): Promise<{ job: Job; waitpoint: Waitpoint }>;
  /** The jobs registered to wait for job `id` (their `dependsOn` names it), by lane then id. */
  dependents(id: string): Promise<{ dependents: JobRef[] }>;
  /** Job `id`'s payload, whole: what a list or a claim of several leaves out when it is held in R2 (`payloadRef`). */
  payload(id: string): Promise<Json>;
  /** Job `id`'s result, whole (null until there is one): what a list leaves out when it is held in R2 (`resultRef`). */
  result(id: string): Promise<Json>;
  /**
   * Settles up to 500 queued and running jobs `failed` (running first, then queued in enqueue order),
   * aborting their in-process attempts; call again while `more` is true.
   */
  failLane(request: FailLaneRequest): Promise<FailLaneAnswer>;
  /**
   * Starts a bulk action (admin only): requeue, cancel or delete the jobs enqueued before now that
   * match every field of `filter`, a chunk of at most 500 an alarm. Refused `bulk_running` while one runs.
   */
  bulk(request: BulkRequest): Promise<{ bulk: Bulk }>;
  /** A bulk action's progress (`state` "done" once it has finished; kept 7 days after). */
  getBulk(id: string): Promise<{ bulk: Bulk }>;
  /** Who holds the queue (a completing job reports `running`), else its next job, how many are queued and run, its settings. */
  queue(name: string): Promise<QueueInfo>;
  /** Sets a queue's concurrency (1..1000) and rate limit (null removes it); they outlive its jobs. */
  putQueue(name: string, request: QueuePut): Promise<QueueInfo>;
  /** Deletes the queue's queued jobs; a running head runs on. */
  purgeQueue(name: string): Promise<PurgeAnswer>;
  /** Creates or replaces the schedule `name`: a cron expression (in a time zone) or an interval, and the job it enqueues. */
  putSchedule(name: string, request: ScheduleRequest): Promise<{ schedule: Schedule }>;
  getSchedule(name: string): Promise<Schedule>;
  /** The lane's schedules by name (every one, unless over 500 or 4 MiB of them: then pass `cursor` back). */
  listSchedules(query?: ScheduleListQuery): Promise<SchedulePage>;
  /** Deletes a schedule; the jobs it enqueued stay. */
  deleteSchedule(name: string): Promise<{ deleted: true }>;
  /**
   * Up to 100 complete, fail, release, progress and snooze items, each fenced on its own: one answer per item
   * (`ok`, or the refusal its single route would answer). A malformed item refuses the whole batch.
   */
  acks(request: AcksRequest): Promise<AcksAnswer>;
  /** Records a checkpoint for the attempt holding `request.token` (fenced like complete). */
  saveCheckpoint(id: string, name: string, request: CheckpointRequest): Promise<{ checkpoint: CheckpointInfo }>;
  /** Every checkpoint of a job, in name order. */
  checkpoints(id: string): Promise<{ checkpoints: Checkpoint[] }>;
  /** Records the job's progress for the attempt holding `request.token` (fenced like complete; keeps the token). */
  progress(id: string, request: ProgressRequest): Promise<{ job: Job }>;
  /** Creates a pending waitpoint (an id is made when none is given); the same id again answers it as it is, whatever its state. */
  createWaitpoint(request?: WaitpointCreateRequest): Promise<WaitpointCreateAnswer>;
  /** Throws `waitpoint_not_found` for an unknown id. */
  getWaitpoint(id: string): Promise<{ waitpoint: Waitpoint }>;
  /**
   * Completes a waitpoint with `result` (null when absent), releasing the jobs that wait on it; an
   * unknown id is created completed. The first settlement wins: a settled waitpoint throws
   * `waitpoint_settled`, its `details` `{"waitpoint"}` as it is.
   */
  completeWaitpoint(id: string, request?: WaitpointCompleteRequest): Promise<WaitpointCompleteAnswer>;
  /** A page of the lane's waitpoints in id order; pass `cursor` back to continue (null: the end). */
  listWaitpoints(query?: WaitpointListQuery): Promise<WaitpointPage>;
}
