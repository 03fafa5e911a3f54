/**
 * Response schemas of the API (docs/api.md), for the OpenAPI document and the typed HTTP client.
 * They describe what the lane answers; nothing parses responses at run time.
 */
import { z } from "@hono/zod-openapi";
import type { ErrorCode } from "../shared/errors.js";
import { ERROR_STATUS } from "./status.js";
import { JOB_STATES, OUTCOMES, type Json } from "../shared/job.js";
import { JobId, Name, ScheduleJob, ScheduleName } from "../shared/schemas.js";

/**
 * Any JSON value (the empty schema), typed as the shared `Json` so that clients read payloads and
 * results as JSON. The cast is sound here: responses are JSON text, and nothing validates them.
 */
const JsonValue = z.unknown().openapi({ description: "any JSON value" }) as z.ZodType<Json>;

const epochMs = z.number().int().openapi({ description: "epoch milliseconds" });

export const LeaseView = z
  .object({ generation: z.number().int(), expiresAt: epochMs })
  .openapi({ description: "a running job's lease as a reader sees it: never the token" });

export const Lease = z
  .object({ token: z.string(), generation: z.number().int(), expiresAt: epochMs })
  .openapi("Lease", { description: "a lease as its holder sees it, in claim and renew answers only" });

/** A payload or result held in R2 that an answer leaves out (docs/api.md "Big payloads"). */
const PayloadRef = z.object({ bytes: z.number().int() }).openapi("PayloadRef");

const jobFields = {
  id: JobId,
  lane: z.string(),
  kind: Name,
  payload: JsonValue,
  payloadRef: PayloadRef.nullable().openapi({ description: "the payload held in R2 and left out of this answer (payload is then null): the size of its JSON; null when payload is here" }),
  queue: Name.nullable(),
  priority: z.number().int(),
  runAt: epochMs,
  state: z.enum(JOB_STATES),
  outcome: z.enum(OUTCOMES).nullable(),
  attempts: z.number().int(),
  generation: z.number().int().openapi({ description: "claims of this job so far; only ever grows" }),
  maxAttempts: z.number().int(),
  timeoutMs: z.number().int(),
  result: JsonValue,
  resultRef: PayloadRef.nullable().openapi({ description: "the result held in R2 and left out of this answer (result is then null): the size of its JSON; null when result is here" }),
  error: z.string().nullable(),
  errors: z
    .array(z.object({ attempt: z.number().int(), generation: z.number().int(), message: z.string(), at: epochMs }))
    .openapi({ description: "every failed attempt, oldest first, at most the last 20" }),
  progress: JsonValue.openapi({ description: "the last progress an attempt reported (at most 16 KiB), or null" }),
  cancelRequested: z.boolean(),
  expiresAt: epochMs.nullable().openapi({ description: "with ttlMs: the instant after which the job is no longer started; null: none" }),
  dependsOn: z
    .array(z.union([z.object({ lane: z.string(), id: JobId }), z.object({ lane: z.string(), waitpoint: z.string() })]))
    .openapi({ description: "the jobs (`{lane, id}`) and waitpoints (`{lane, waitpoint}`) it waits for (each must settle before it runs); [] when none" }),
  traceparent: z
    .string()
    .nullable()
    .openapi({ description: "the W3C trace context (traceparent header) it was enqueued with, or null", example: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }),
  createdAt: epochMs,
  updatedAt: epochMs,
  settledAt: epochMs.nullable(),
};

export const Job = z.object({ ...jobFields, lease: LeaseView.nullable() }).openapi("Job");

export const ClaimedJob = z
  .object({
    ...jobFields,
    lease: Lease,
    checkpoints: z.record(z.string(), JsonValue).openapi({ description: "what earlier attempts of the job recorded, name → value; {} when none" }),
    dependencies: z
      .array(
        z.union([
          z.object({ lane: z.string(), id: JobId, outcome: z.enum(OUTCOMES).nullable(), result: JsonValue, resultRef: PayloadRef.optional(), error: z.string().nullable() }),
          z.object({ lane: z.string(), waitpoint: z.string(), outcome: z.enum(["completed", "timedOut"]).nullable(), result: JsonValue }),
        ]),
      )
      .openapi({ description: "what each dependency (job or waitpoint) settled as and returned, in the order dependsOn names them, then the waits of its attempts in the order made; [] when none" }),
  })
  .openapi("ClaimedJob");

export const Counts = z
  .object({
    blocked: z.number().int().openapi({ description: "queued jobs that wait for their dependencies" }),
    queued: z.number().int(),
    running: z.number().int(),
    completing: z.number().int(),
    completed: z.number().int(),
    failed: z.number().int(),
    cancelled: z.number().int(),
    interrupted: z.number().int(),
  })
  .openapi("Counts");

const RateLimitView = z.object({ limit: z.number().int(), periodMs: z.number().int() });

const msOrKeep = z.number().int().nullable().openapi({ description: "milliseconds after they settle; null keeps them" });

export const LaneStats = z
  .object({
    enqueued: z.number().int(),
    claimed: z.number().int(),
    completed: z.number().int(),
    failed: z.number().int(),
    cancelled: z.number().int(),
    interrupted: z.number().int(),
    retried: z.number().int().openapi({ description: "attempts that failed and were queued again" }),
    recovered: z.number().int().openapi({ description: "expired leases queued again" }),
    lost: z.number().int().openapi({ description: "in-process attempts that lost their lease" }),
    expired: z.number().int().openapi({ description: "jobs settled cancelled because their TTL ran out before they started" }),
    snoozed: z.number().int().openapi({ description: "attempts that snoozed their job (queued for later, the attempt given back)" }),
    debounced: z.number().int().openapi({ description: "enqueues that replaced a queued job of their debounce key" }),
    deadLettered: z.number().int().openapi({ description: "copies of failed and interrupted jobs this lane made in its dead-letter lane" }),
    waitpointsCompleted: z.number().int().openapi({ description: "waitpoints completed (by route, callback or a completion that created one)" }),
    waitpointsTimedOut: z.number().int().openapi({ description: "waitpoints that timed out" }),
  })
  .openapi("LaneStats", { description: "lifetime counters of the lane; they never go down" });

export const LaneInfo = z
  .object({
    lane: z.string(),
    counts: Counts,
    paused: z.boolean(),
    concurrency: z.number().int(),
    nextWakeAt: epochMs.nullable(),
    retention: z.object({ completedMs: msOrKeep, failedMs: msOrKeep }),
    stats: LaneStats,
    oldestDueAt: epochMs.nullable().openapi({ description: "the runAt of the longest-waiting queued job that is due now" }),
    kinds: z
      .record(z.string(), z.object({ queued: z.number().int(), running: z.number().int() }))
      .openapi({ description: "queued and running jobs per kind (kinds with any), kept as the jobs change" }),
    rateLimit: RateLimitView.nullable().openapi({ description: "the lane's token bucket; null: none" }),
    fairness: z.enum(["fifo", "round-robin"]),
    deadLetter: z.object({ lane: z.string() }).nullable().openapi({ description: "the lane failed and interrupted jobs are copied into; null: none" }),
    shards: z.number().int().optional().openapi({ description: "how many objects the lane is (1..64); a sharded lane's counts, stats and kinds are its shards' sums" }),
    shardList: z
      .array(z.object({ shard: z.number().int(), counts: Counts }))
      .optional()
      .openapi({ description: "a sharded lane's shards, each with its counts" }),
    waitpoints: z.object({ pending: z.number().int() }).openapi({ description: "the lane's pending waitpoints, kept as they change" }),
    queueDefaults: z
      .object({ concurrency: z.number().int(), rateLimit: RateLimitView.nullable() })
      .openapi({ description: "the settings of every queue whose PUTs never named its own" }),
  })
  .openapi("LaneInfo");

const EnqueueStatus = z.enum(["queued", "duplicate", "debounced", "skipped"]).openapi({ description: "a new job; the same one again; the queued job of its debounce key replaced; (singleton skip) the job that holds the queue, nothing enqueued" });

export const EnqueueResponse = z
  .object({ status: EnqueueStatus, job: Job, cancelling: z.array(Name).optional().openapi({ description: "singleton cancel-running: the running jobs asked to cancel" }) })
  .openapi("EnqueueResponse");

export const BatchEnqueueResponse = z
  .object({ results: z.array(z.object({ id: Name, status: EnqueueStatus })) })
  .openapi("BatchEnqueueResponse");

export const JobList = z
  .object({ jobs: z.array(Job), cursor: z.string().nullable().openapi({ description: "pass back to continue; null: the end" }) })
  .openapi("JobList");

export const CancelResponse = z.object({ status: z.enum(["cancelled", "cancelling"]), job: Job }).openapi("CancelResponse");

export const JobResponse = z.object({ job: Job }).openapi("JobResponse");

export const LaneList = z
  .object({ lanes: z.array(z.object({ lane: z.string(), counts: Counts })), cursor: z.string().nullable() })
  .openapi("LaneList");

export const SweepResponse = z
  .object({ removed: z.number().int(), waitpointsRemoved: z.number().int().openapi({ description: "settled waitpoints removed" }) })
  .openapi("SweepResponse");

export const ClaimResponse = z.object({ jobs: z.array(ClaimedJob) }).openapi("ClaimResponse");

export const DependentsResponse = z
  .object({ dependents: z.array(z.object({ lane: z.string(), id: Name })).openapi({ description: "the jobs registered to wait for this one, by lane then id" }) })
  .openapi("DependentsResponse");

export const RenewResponse = z.object({ lease: Lease }).openapi("RenewResponse");

/** Every code of `ERROR_STATUS`, so the document lists a new code as soon as it is mapped. */
const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      details: z
        .union([
          z.array(z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })),
          z.object({ ids: z.array(z.string()) }),
          z.object({ index: z.number().int() }),
          z.object({ dependencies: z.array(z.object({ lane: z.string(), id: z.string() })) }),
        ])
        .optional(),
    }),
  })
  .openapi("ErrorResponse");

export const FailLaneResponse = z
  .object({ failed: z.array(Name), more: z.boolean().openapi({ description: "queued or running jobs are left: call again" }) })
  .openapi("FailLaneResponse");

export const QueueInfo = z
  .object({
    queue: Name,
    head: z
      .object({ id: Name, state: z.enum(["running", "queued"]), cancelRequested: z.boolean() })
      .nullable()
      .openapi({ description: "the job holding the queue (running, or completing: reported running), else the queued job that runs next; null: idle" }),
    queued: z.number().int(),
    running: z.number().int().openapi({ description: "the queue's jobs holding a slot: running, or completing" }),
    concurrency: z.number().int(),
    rateLimit: RateLimitView.nullable(),
  })
  .openapi("QueueInfo");

export const PurgeResponse = z.object({ purged: z.number().int() }).openapi("PurgeResponse");
// ---- schedules ----

export const Schedule = z
  .object({
    name: ScheduleName,
    cron: z.string().nullable(),
    everyMs: z.number().int().nullable(),
    timezone: z.string().nullable().openapi({ description: "the cron schedule's IANA time zone; null for everyMs" }),
    job: ScheduleJob.extend({ payload: JsonValue.optional() }),
    paused: z.boolean(),
    nextRunAt: epochMs.nullable().openapi({ description: "the next fire; null while paused" }),
    lastRunAt: epochMs.nullable(),
    lastJobId: JobId.nullable(),
    createdAt: epochMs,
    updatedAt: epochMs,
  })
  .openapi("Schedule");

export const ScheduleResponse = z.object({ schedule: Schedule }).openapi("ScheduleResponse");

export const ScheduleList = z
  .object({ schedules: z.array(Schedule), cursor: z.string().nullable().openapi({ description: "pass back to continue; null: the end" }) })
  .openapi("ScheduleList");

export const ScheduleDeleted = z.object({ deleted: z.literal(true) }).openapi("ScheduleDeleted");
/** A checkpoint as its write answers it. */
const checkpointFields = {
  name: Name,
  generation: z.number().int().openapi({ description: "the generation of the attempt that wrote it" }),
  updatedAt: epochMs,
};

export const CheckpointResponse = z.object({ checkpoint: z.object(checkpointFields) }).openapi("CheckpointResponse");

export const CheckpointList = z
  .object({ checkpoints: z.array(z.object({ ...checkpointFields, value: JsonValue })) })
  .openapi("CheckpointList");

export const AckAnswer = z
  .union([
    z.object({ id: Name, ok: z.literal(true) }),
    z.object({ id: Name, ok: z.literal(false), error: z.object({ code: z.enum(ERROR_CODES), message: z.string() }) }),
  ])
  .openapi("AckAnswer");

export const AcksResponse = z.object({ results: z.array(AckAnswer) }).openapi("AcksResponse");
