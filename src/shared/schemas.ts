/**
 * Request schemas of the API, shared by the front worker (HTTP validation and the OpenAPI document)
 * and the lane (RPC input is validated again there: a lane trusts no caller).
 */
import { z } from "@hono/zod-openapi";
import { MAX_WAITPOINT_TIMEOUT_MS, WaitpointId } from "./waitpoint.js";
import {
  DEFAULT_LIST_LIMIT,
  MAX_ATTEMPTS_LIMIT,
  MAX_ACKS,
  MAX_BATCH_JOBS,
  MAX_CLAIM,
  MAX_CLAIM_WAIT_MS,
  MAX_CLAIM_KINDS,
  MAX_CONCURRENCY,
  MAX_DEBOUNCE_DELAY_MS,
  MAX_DEPENDENCIES,
  MAX_SNOOZE_MS,
  MAX_RATE_LIMIT,
  MAX_RATE_PERIOD_MS,
  MIN_RATE_PERIOD_MS,
  MAX_CURSOR_CHARS,
  MAX_DURATION_MS,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  MAX_PRIORITY,
  MAX_REASON_CHARS,
  MAX_RECOVERIES_LIMIT,
  MAX_SWEEP_LIMIT,
  MAX_TOKEN_CHARS,
  MIN_LEASE_MS,
  MIN_PRIORITY,
  NAME_PATTERN,
} from "./defaults.js";
import type { Issue } from "./errors.js";
import { cronIssues } from "./cron.js";
import {
  DEFAULT_SCHEDULE_TIMEZONE,
  JOB_ID_PATTERN,
  MAX_CRON_CHARS,
  MAX_TIMEZONE_CHARS,
  MIN_SCHEDULE_EVERY_MS,
  SCHEDULE_NAME_PATTERN,
} from "./defaults.js";
import { JOB_STATES, OUTCOMES } from "./job.js";
import { MAX_SHARDS } from "./shards.js";

export const Name = z
  .string()
  .regex(NAME_PATTERN, "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
  .openapi({ example: "tenant-7" });

/** A job id: a name, or a schedule's fire `<schedule name>@<T>`, or a dead-letter copy's `<lane>.<id>`, which routes accept and no enqueue may choose. */
export const JobId = z
  .string()
  .regex(JOB_ID_PATTERN, "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$, or be a schedule's job id <schedule name>@<epoch ms> or a dead-letter copy's <lane>.<id>")
  .openapi({ example: "invoice-42" });

const ms = (min = 0) => z.number().int().min(min).max(MAX_DURATION_MS);

/** A token bucket: `limit` tokens, refilled evenly over `periodMs` (one every `periodMs`/`limit`). */
export const RateLimit = z
  .strictObject({
    limit: z.number().int().min(1).max(MAX_RATE_LIMIT),
    periodMs: z.number().int().min(MIN_RATE_PERIOD_MS).max(MAX_RATE_PERIOD_MS),
  })
  .openapi("RateLimit", { description: "a token bucket: at most `limit` starts at once, refilled evenly over `periodMs`" });
export type RateLimit = z.infer<typeof RateLimit>;

/** Debounce on enqueue: replace the queued, not yet started job of the same key instead of adding one. */
export const Debounce = z
  .strictObject({
    key: Name,
    delayMs: z.number().int().min(0).max(MAX_DEBOUNCE_DELAY_MS),
    maxDelayMs: z.number().int().min(0).max(MAX_DURATION_MS).optional().openapi({ description: "runAt never later than the first enqueue + this; default: no cap" }),
  })
  .refine((d) => d.maxDelayMs === undefined || d.maxDelayMs >= d.delayMs, { message: "maxDelayMs must be at least delayMs", path: ["maxDelayMs"] })
  .openapi("Debounce");
export type Debounce = z.infer<typeof Debounce>;

/**
 * A dependency of an enqueued job: a job of `lane` (default: the enqueue's own lane) by id, a fire's
 * `<name>@<T>` too; at most 128 characters, as a claimed job's `dependencies` are sized.
 */
export const DependencyRef = z
  .strictObject({ lane: Name.optional().openapi({ description: "default: the enqueue's own lane" }), id: JobId.max(128, "a dependency's id is at most 128 characters") })
  .openapi("DependencyRef");
export type DependencyRef = z.infer<typeof DependencyRef>;

/** A waitpoint an enqueued job waits on: one of `lane` (default: the enqueue's own lane) by id. */
export const WaitpointDependencyRef = z
  .strictObject({ lane: Name.optional().openapi({ description: "default: the enqueue's own lane" }), waitpoint: WaitpointId })
  .openapi("WaitpointDependencyRef");
export type WaitpointDependencyRef = z.infer<typeof WaitpointDependencyRef>;

/** One job per queue (docs/api.md "Singleton"): skip the enqueue while the queue holds a job, or cancel its running jobs. */
export const Singleton = z
  .enum(["skip", "cancel-running"])
  .openapi("Singleton", { description: "needs a queue: skip (enqueue nothing while the queue holds a job) | cancel-running (ask its running jobs to cancel, queue this one behind)" });
export type Singleton = z.infer<typeof Singleton>;

/** Any JSON value; its size (at most 128 KiB serialized) is checked apart, as a 413. */
export const JsonValue = z.unknown().openapi({ description: "any JSON value" });

export const EnqueueRequest = z
  .strictObject({
    id: Name.optional().openapi({ description: "idempotency key; a UUID is generated if absent" }),
    kind: Name,
    payload: JsonValue.optional(),
    queue: Name.nullable().optional().openapi({ description: "serial key: at most one running job per queue" }),
    priority: z.number().int().min(MIN_PRIORITY).max(MAX_PRIORITY).optional(),
    runAt: ms().optional(),
    delayMs: ms().optional(),
    maxAttempts: z.number().int().min(1).max(MAX_ATTEMPTS_LIMIT).optional(),
    backoff: z
      .strictObject({ baseMs: ms(1), maxMs: ms(1) })
      .refine((b) => b.maxMs >= b.baseMs, { message: "maxMs must be at least baseMs", path: ["maxMs"] })
      .optional(),
    timeoutMs: ms(1).optional(),
    recovery: z.strictObject({ maxRecoveries: z.number().int().min(0).max(MAX_RECOVERIES_LIMIT), windowMs: ms(1) }).optional(),
    ttlMs: ms(1).optional().openapi({ description: "not started by runAt + ttlMs: settled cancelled, error \"expired\"" }),
    debounce: Debounce.optional(),
    dependsOn: z
      .array(z.union([DependencyRef, WaitpointDependencyRef]))
      .min(1)
      .max(MAX_DEPENDENCIES)
      .optional()
      .openapi({ description: "jobs and waitpoints that must settle before this one runs (blocked meanwhile); each must exist; an item names exactly one of `id` and `waitpoint`" }),
    dependencyFailure: z.enum(["fail", "ignore"]).optional().openapi({ description: "a dependency that does not complete: fail this job (default) or count it done" }),
    singleton: Singleton.optional(),
  })
  .refine((r) => r.singleton === undefined || (r.queue != null && r.debounce === undefined), {
    message: "singleton needs a queue, and no debounce",
    path: ["singleton"],
  })
  .refine((r) => r.runAt === undefined || r.delayMs === undefined, {
    message: "give at most one of runAt and delayMs",
    path: ["delayMs"],
  })
  .refine((r) => r.dependsOn === undefined || r.debounce === undefined, {
    message: "a debounced job cannot have dependencies",
    path: ["dependsOn"],
  })
  .superRefine((r, ctx) => {
    // The same dependency twice, as far as the request alone can tell (the lane also knows its own name).
    const seen = new Set<string>();
    for (const [i, dep] of (r.dependsOn ?? []).entries()) {
      const what = "id" in dep ? "job" : "waitpoint";
      const key = `${dep.lane ?? ""}\u0000${what}\u0000${"id" in dep ? dep.id : dep.waitpoint}`;
      if (seen.has(key)) ctx.addIssue({ code: "custom", path: ["dependsOn", i], message: `dependsOn[${i}] names the same ${what} as an earlier item` });
      seen.add(key);
      if ("id" in dep && dep.lane === undefined && r.id !== undefined && dep.id === r.id) ctx.addIssue({ code: "custom", path: ["dependsOn", i], message: `dependsOn[${i}] names the job itself` });
    }
  })
  .openapi("EnqueueRequest");
export type EnqueueRequest = z.infer<typeof EnqueueRequest>;

const SIMPLE_KEYS = new Set(["id", "kind", "payload"]);

/**
 * The commonest enqueue request — a plain object of `kind`, maybe `payload` and `id`, nothing else
 * — checked without zod, or null for zod to judge: in workerd (no code generation, so zod runs its
 * interpreted path) `EnqueueRequest.safeParse` costs 4–5 µs on a quiet machine, this <1 µs. Whatever
 * it accepts, `EnqueueRequest` accepts with the same value (a property test holds it to that).
 */
export function simpleEnqueueRequest(input: unknown): EnqueueRequest | null {
  if (typeof input !== "object" || input === null || Object.getPrototypeOf(input) !== Object.prototype) return null;
  const request = input as Record<string, unknown>;
  for (const key of Object.keys(request)) if (!SIMPLE_KEYS.has(key)) return null;
  const { id, kind } = request;
  if (typeof kind !== "string" || !NAME_PATTERN.test(kind)) return null;
  if ("id" in request && (typeof id !== "string" || !NAME_PATTERN.test(id))) return null;
  const simple: EnqueueRequest = { kind };
  if ("id" in request) simple.id = id as string;
  if ("payload" in request) simple.payload = request.payload;
  return simple;
}

/** Group commit's call (client/group-commit.ts): 1..1000 single enqueues, each the JSON text of its request. */
export const EnqueueGroup = z.array(z.string()).min(1).max(MAX_BATCH_JOBS);

export const BatchEnqueueRequest = z
  .strictObject({ jobs: z.array(EnqueueRequest).min(1).max(MAX_BATCH_JOBS) })
  .openapi("BatchEnqueueRequest");
export type BatchEnqueueRequest = z.infer<typeof BatchEnqueueRequest>;

/**
 * A batch whose every job is a simple request (`simpleEnqueueRequest`), checked without zod, or null
 * for zod to judge: zod's interpreted path costs a batch several µs a job, this a fraction of one.
 * Whatever it accepts, `BatchEnqueueRequest` accepts with the same value (a property test holds it to that).
 */
export function simpleBatchEnqueueRequest(input: unknown): BatchEnqueueRequest | null {
  if (typeof input !== "object" || input === null || Object.getPrototypeOf(input) !== Object.prototype) return null;
  const keys = Object.keys(input);
  if (keys.length !== 1 || keys[0] !== "jobs") return null;
  const { jobs } = input as { jobs: unknown };
  if (!Array.isArray(jobs) || jobs.length < 1 || jobs.length > MAX_BATCH_JOBS) return null;
  const simple: EnqueueRequest[] = [];
  for (const job of jobs) {
    const one = simpleEnqueueRequest(job);
    if (one === null) return null;
    simple.push(one);
  }
  return { jobs: simple };
}

export const ListQuery = z.strictObject({
  state: z.enum(JOB_STATES).optional(),
  outcome: z.enum(OUTCOMES).optional(),
  kind: Name.optional(),
  queue: Name.optional(),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: z.string().max(MAX_CURSOR_CHARS).optional(),
});
export type ListQuery = z.input<typeof ListQuery>;

export const CancelRequest = z
  .strictObject({
    reason: z.string().max(MAX_REASON_CHARS).optional(),
    onlyIfQueued: z.boolean().optional().openapi({ description: "refuse (409 job_running) a job that has started, changing nothing; default false" }),
  })
  .openapi("CancelRequest");
export type CancelRequest = z.infer<typeof CancelRequest>;

export const LanePatch = z
  .strictObject({
    concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).optional(),
    paused: z.boolean().optional(),
    rateLimit: RateLimit.nullable().optional().openapi({ description: "the lane's token bucket; null removes it" }),
    fairness: z.enum(["fifo", "round-robin"]).optional(),
    deadLetter: z
      .strictObject({ lane: Name })
      .nullable()
      .optional()
      .openapi({ description: "the lane failed and interrupted jobs are copied into (not this lane); null: none" }),
    shards: z.number().int().min(1).max(MAX_SHARDS).optional().openapi({ description: "how many objects the lane is (1..64), only while it holds no jobs" }),
    retention: z
      .strictObject({
        completedMs: ms().nullable().optional().openapi({ description: "keep completed jobs this long after they settle; null keeps them" }),
        failedMs: ms().nullable().optional().openapi({ description: "the same for failed, cancelled and interrupted jobs" }),
      })
      .optional(),
    queueDefaults: z
      .strictObject({
        concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).optional(),
        rateLimit: RateLimit.nullable().optional(),
      })
      .optional()
      .openapi({ description: "the settings of every queue whose PUTs never named its own; a field left out is kept" }),
  })
  .openapi("LanePatch");
export type LanePatch = z.infer<typeof LanePatch>;

/** `PUT /v1/lanes/{lane}/queues/{queue}`: a queue's settings (they outlive its jobs). */
export const QueuePut = z
  .strictObject({
    concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).optional().openapi({ description: "how many of the queue's jobs may run at once; default 1" }),
    rateLimit: RateLimit.nullable().optional().openapi({ description: "the queue's token bucket; null removes it" }),
  })
  .openapi("QueuePut");
export type QueuePut = z.infer<typeof QueuePut>;

export const SweepRequest = z
  .strictObject({ settledBefore: ms(), limit: z.number().int().min(1).max(MAX_SWEEP_LIMIT).optional() })
  .openapi("SweepRequest");
export type SweepRequest = z.infer<typeof SweepRequest>;

const leaseMs = z.number().int().min(MIN_LEASE_MS).max(MAX_LEASE_MS);
const Token = z.string().min(1).max(MAX_TOKEN_CHARS);

export const ClaimRequest = z
  .strictObject({
    kinds: z.array(Name).min(1).max(MAX_CLAIM_KINDS).optional(),
    max: z.number().int().min(1).max(MAX_CLAIM).optional(),
    leaseMs: leaseMs.optional(),
    waitMs: z
      .number()
      .int()
      .min(0)
      .max(MAX_CLAIM_WAIT_MS)
      .optional()
      .openapi({ description: "hold the claim up to this long until a job is claimable (long poll); default 0" }),
    minJobs: z
      .number()
      .int()
      .min(1)
      .max(MAX_CLAIM)
      .optional()
      .openapi({ description: "with waitMs, hold the claim until this many jobs are claimable (then claim up to max) or waitMs has passed (then claim what is claimable); at most max; default 1" }),
  })
  .refine((r) => r.minJobs === undefined || r.minJobs <= (r.max ?? 1), { message: "minJobs must be at most max", path: ["minJobs"] })
  .openapi("ClaimRequest");
export type ClaimRequest = z.infer<typeof ClaimRequest>;

/** How many jobs a claim waits for: its `minJobs` when it is held (`waitMs` > 0); without a wait, `minJobs` changes nothing. */
export function heldMinJobs(request: { waitMs?: number; minJobs?: number }): number {
  return (request.waitMs ?? 0) > 0 ? (request.minJobs ?? 1) : 1;
}

export const RenewRequest = z
  .strictObject({
    token: Token,
    leaseMs: leaseMs.optional(),
    progress: JsonValue.optional().openapi({ description: "the job's progress, recorded with the renewal (at most 16 KiB serialized)" }),
  })
  .openapi("RenewRequest");
export type RenewRequest = z.infer<typeof RenewRequest>;

export const CompleteRequest = z.strictObject({ token: Token, result: JsonValue.optional() }).openapi("CompleteRequest");
export type CompleteRequest = z.infer<typeof CompleteRequest>;

export const FailRequest = z
  .strictObject({
    token: Token,
    error: z.string().max(MAX_ERROR_MESSAGE_CHARS),
    retry: z.boolean().optional(),
    retryAfterMs: ms().optional(),
  })
  .openapi("FailRequest");
export type FailRequest = z.infer<typeof FailRequest>;

export const ReleaseRequest = z.strictObject({ token: Token }).openapi("ReleaseRequest");
export type ReleaseRequest = z.infer<typeof ReleaseRequest>;

/** `POST …/jobs/{id}/snooze`: fenced like complete; the job is queued again after `delayMs`, its attempt given back. */
export const SnoozeRequest = z
  .strictObject({ token: Token, delayMs: z.number().int().min(0).max(MAX_SNOOZE_MS) })
  .openapi("SnoozeRequest");
export type SnoozeRequest = z.infer<typeof SnoozeRequest>;

/** `POST …/jobs/{id}/wait`: fenced like complete; the job is blocked on the waitpoint (created pending when missing), its attempt given back. */
export const WaitRequest = z
  .strictObject({
    token: Token,
    waitpoint: WaitpointId,
    timeoutMs: z.number().int().min(1).max(MAX_WAITPOINT_TIMEOUT_MS).optional().openapi({ description: "the waitpoint's timeout when this wait creates it (an existing one keeps its own)" }),
  })
  .openapi("WaitRequest");
export type WaitRequest = z.infer<typeof WaitRequest>;

/** zod issues as API `details`: one entry per problem with its path; an unknown key at its own path. */
export function toIssues(error: z.ZodError, prefix: (string | number)[] = []): Issue[] {
  return error.issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: [...path, key], message: `unknown field "${key}"` }));
    }
    return [{ path, message: issue.message }];
  });
}

export const FailLaneRequest = z
  .strictObject({ reason: z.string().min(1).max(MAX_ERROR_MESSAGE_CHARS).openapi({ description: "the error the failed jobs carry" }) })
  .openapi("FailLaneRequest");
export type FailLaneRequest = z.infer<typeof FailLaneRequest>;
// ---- schedules ----

export const ScheduleName = z
  .string()
  .regex(SCHEDULE_NAME_PATTERN, "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")
  .openapi({ example: "nightly-report" });

/** The job a schedule enqueues: an enqueue request without `id`, `runAt` and `delayMs` (each fire sets them). */
const { id: _id, runAt: _runAt, delayMs: _delayMs, dependsOn: _dependsOn, dependencyFailure: _dependencyFailure, ...scheduledJobFields } = EnqueueRequest.shape;
export const ScheduleJob = z.strictObject(scheduledJobFields).openapi("ScheduleJob");
export type ScheduleJob = z.infer<typeof ScheduleJob>;

/**
 * A schedule's definition (docs/api.md "Schedules"): exactly one of `cron` (5 fields, or 6 with leading
 * seconds, in `timezone`, default UTC) and `everyMs` (at least 1000). A bad expression or zone is an
 * issue at its own path.
 */
export const ScheduleRequest = z
  .strictObject({
    cron: z.string().min(1).max(MAX_CRON_CHARS).optional().openapi({ example: "*/5 * * * *" }),
    timezone: z.string().min(1).max(MAX_TIMEZONE_CHARS).optional().openapi({ description: `IANA name, cron only; default ${DEFAULT_SCHEDULE_TIMEZONE}` }),
    everyMs: z.number().int().min(MIN_SCHEDULE_EVERY_MS).max(MAX_DURATION_MS).optional(),
    job: ScheduleJob,
    paused: z.boolean().optional(),
  })
  .superRefine((request, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    // Checked here, not on ScheduleJob: a refined object could no longer be extended.
    if (request.job.singleton !== undefined && (request.job.queue == null || request.job.debounce !== undefined)) {
      ctx.addIssue({ code: "custom", path: ["job", "singleton"], message: "singleton needs a queue, and no debounce" });
    }
    if (request.cron === undefined && request.everyMs === undefined) issue("cron", "give one of cron and everyMs");
    else if (request.cron !== undefined && request.everyMs !== undefined) issue("everyMs", "give cron or everyMs, not both");
    else if (request.cron === undefined) {
      if (request.timezone !== undefined) issue("timezone", "a time zone belongs to a cron schedule only");
    } else {
      for (const found of cronIssues(request.cron, request.timezone ?? DEFAULT_SCHEDULE_TIMEZONE)) issue(String(found.path[0]), found.message);
    }
  })
  .openapi("ScheduleRequest");
export type ScheduleRequest = z.infer<typeof ScheduleRequest>;

export const ScheduleListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: ScheduleName.optional().openapi({ description: "the cursor of the previous page" }),
});
export type ScheduleListQuery = z.input<typeof ScheduleListQuery>;
/** `PUT …/jobs/{id}/checkpoints/{name}`: a checkpoint of the attempt holding `token` (docs/api.md "Checkpoints"). */
export const CheckpointRequest = z
  .strictObject({ token: Token, value: JsonValue.openapi({ description: "any JSON value, at most 128 KiB serialized" }) })
  .openapi("CheckpointRequest");
export type CheckpointRequest = z.infer<typeof CheckpointRequest>;

/** `POST …/jobs/{id}/progress`: the job's progress, reported by the attempt holding `token`. */
export const ProgressRequest = z
  .strictObject({ token: Token, progress: JsonValue.openapi({ description: "any JSON value, at most 16 KiB serialized" }) })
  .openapi("ProgressRequest");
export type ProgressRequest = z.infer<typeof ProgressRequest>;

/** One item of a batch ack: the body of its single route, plus `op` and the job's `id`. */
export const AckItem = z
  .discriminatedUnion("op", [
    z.strictObject({ op: z.literal("complete"), id: JobId, ...CompleteRequest.shape }),
    z.strictObject({ op: z.literal("fail"), id: JobId, ...FailRequest.shape }),
    z.strictObject({ op: z.literal("release"), id: JobId, ...ReleaseRequest.shape }),
    z.strictObject({ op: z.literal("progress"), id: JobId, ...ProgressRequest.shape }),
    z.strictObject({ op: z.literal("snooze"), id: JobId, ...SnoozeRequest.shape }),
    z.strictObject({ op: z.literal("wait"), id: JobId, ...WaitRequest.shape }),
  ])
  .openapi("AckItem");
export type AckItem = z.infer<typeof AckItem>;

export const AcksRequest = z.strictObject({ acks: z.array(AckItem).min(1).max(MAX_ACKS) }).openapi("AcksRequest");
export type AcksRequest = z.infer<typeof AcksRequest>;
