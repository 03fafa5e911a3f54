/** The job as the API shows it (docs/api.md "The job"). */
import type { PayloadRef } from "./payload-ref.js";

export const JOB_STATES = ["blocked", "queued", "running", "completing", "settled"] as const;
/** A job's state as the API shows it; `blocked`: it waits for its dependencies. */
export type JobState = (typeof JOB_STATES)[number];
/** The states a row stores: a blocked job is a queued row with dependencies not yet settled. */
export type RowState = Exclude<JobState, "blocked">;

export const OUTCOMES = ["completed", "failed", "cancelled", "interrupted"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** A lease as a reader sees it: never the token. */
export interface LeaseView {
  generation: number;
  expiresAt: number;
}

/** A lease as its holder sees it, in claim and renew answers only. */
export interface Lease extends LeaseView {
  token: string;
}

/** Any JSON value. Interfaces (not a type alias) keep the recursion lazy for RPC stub typing. */
export type Json = null | boolean | number | string | JsonArray | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}
export interface JsonArray extends Array<Json> {}

export interface Job {
  id: string;
  lane: string;
  kind: string;
  payload: Json;
  /** The payload held in R2 and left out of this answer (`payload` is then null): its size; null when `payload` is here. */
  payloadRef: PayloadRef | null;
  queue: string | null;
  priority: number;
  runAt: number;
  state: JobState;
  outcome: Outcome | null;
  attempts: number;
  /** Claims of this job so far; only ever grows (an extension of docs/api.md's job). */
  generation: number;
  maxAttempts: number;
  /** An in-process executor is aborted after this long (an extension of docs/api.md's job). */
  timeoutMs: number;
  result: Json;
  /** The result held in R2 and left out of this answer (`result` is then null): its size; null when `result` is here. */
  resultRef: PayloadRef | null;
  error: string | null;
  /** Every failed attempt, oldest first, at most the last 20. */
  errors: AttemptError[];
  /** The last progress an attempt reported (at most 16 KiB of JSON), or null. */
  progress: Json;
  cancelRequested: boolean;
  lease: LeaseView | null;
  /** With `ttlMs`: the instant after which it is no longer started (settled `cancelled`, error "expired"); null: none. */
  expiresAt: number | null;
  /** The jobs and waitpoints it waits for (docs/api.md "Dependencies", "Waitpoints"); empty: none. */
  dependsOn: DependsOnItem[];
  /** The W3C `traceparent` it was enqueued with (docs/api.md "The job"), or null. */
  traceparent: string | null;
  createdAt: number;
  updatedAt: number;
  settledAt: number | null;
}

/** A job named by its lane and id. */
export interface JobRef {
  lane: string;
  id: string;
}

/** A waitpoint named by its lane and id, as a `dependsOn` item. */
export interface WaitpointRef {
  lane: string;
  waitpoint: string;
}

/** One item of a job's `dependsOn`: a job, or a waitpoint. */
export type DependsOnItem = JobRef | WaitpointRef;

/** What a dependent is told of one of its dependencies once it settled (null fields: not yet). */
export interface JobDependencyOutcome extends JobRef {
  outcome: Outcome | null;
  result: Json;
  /** A result held in R2 that a pull claim leaves out (`result` is then null): its size (docs/api.md "Big payloads"). */
  resultRef?: PayloadRef;
  error: string | null;
}

/** What a job is told of a waitpoint it waits on (a `dependsOn` item, or an attempt's wait) once it settled (null: not yet). */
export interface WaitpointOutcome extends WaitpointRef {
  outcome: "completed" | "timedOut" | null;
  /** The completion's result; null when timed out. */
  result: Json;
}

/** What a wait (`ctx.waitFor`) passes through with: the waitpoint's completion and its result, or its timeout (never a throw). */
export type WaitForOutcome = { outcome: "completed"; result: Json } | { outcome: "timedOut" };

/** An entry of a claimed job's `dependencies`: its jobs' and waitpoints' in `dependsOn` order, then its attempts' waits. */
export type DependencyOutcome = JobDependencyOutcome | WaitpointOutcome;

/** A claimed job: the claimer alone learns the token. */
export interface ClaimedJob extends Omit<Job, "lease"> {
  lease: Lease;
}

/** One failed attempt of a job, as `errors` keeps it. */
export interface AttemptError {
  attempt: number;
  generation: number;
  message: string;
  /** When the attempt ended, epoch ms. */
  at: number;
}

/**
 * A job as a pull consumer's claim answers it: its lease, every checkpoint its earlier attempts
 * recorded, and what its dependencies returned (in the order it named them; empty: none).
 */
export interface PulledJob extends ClaimedJob {
  checkpoints: Record<string, Json>;
  dependencies: DependencyOutcome[];
}

/** A checkpoint as its write answers it. */
export interface CheckpointInfo {
  name: string;
  /** The generation of the attempt that wrote it. */
  generation: number;
  updatedAt: number;
}

/** A checkpoint as the operator's view lists it. */
export interface Checkpoint extends CheckpointInfo {
  value: Json;
}

export type Counts = Record<"blocked" | "queued" | "running" | "completing" | Outcome, number>;

/** Lifetime counters of a lane (docs/api.md "The lane"): they never go down, and survive restarts. */
export type LaneStats = Record<
  "enqueued" | "claimed" | "completed" | "failed" | "cancelled" | "interrupted" | "retried" | "recovered" | "lost" | "expired" | "snoozed" | "debounced" | "deadLettered",
  number
>;

/** A token bucket: at most `limit` starts at once, refilled evenly over `periodMs`. */
export interface RateLimit {
  limit: number;
  periodMs: number;
}

/** How a lane orders due jobs of equal priority: enqueue order, or the queue that started least recently first. */
export type Fairness = "fifo" | "round-robin";

/** The settings of every queue whose PUTs never named its own (docs/api.md "Queues"). */
export interface QueueDefaults {
  concurrency: number;
  rateLimit: RateLimit | null;
}

/** How long settled jobs are kept, in ms since they settled: `completedMs` for completed ones, `failedMs` for the rest; null keeps them. */
export interface Retention {
  completedMs: number | null;
  failedMs: number | null;
}

/** Queued and running jobs of one kind. */
export interface KindCounts {
  queued: number;
  running: number;
}

/** Lifetime counters of a lane's waitpoints: each settlement counted once. */
export type WaitpointStats = Record<"waitpointsCompleted" | "waitpointsTimedOut", number>;

export interface LaneInfo {
  lane: string;
  counts: Counts;
  paused: boolean;
  concurrency: number;
  nextWakeAt: number | null;
  retention: Retention;
  /** The jobs' stats, and the waitpoints' (docs/api.md "Waitpoints"). */
  stats: LaneStats & WaitpointStats;
  /** The runAt of the longest-waiting queued job that is due now; null when none is. */
  oldestDueAt: number | null;
  /** Queued and running jobs per kind (kinds with any), kept as the jobs change. */
  kinds: Record<string, KindCounts>;
  /** The lane's token bucket (in-process starts and pull claims draw from it alike); null: none. */
  rateLimit: RateLimit | null;
  fairness: Fairness;
  /** The lane its failed and interrupted jobs are copied into (docs/api.md "Dead letters"); null: none. */
  deadLetter: { lane: string } | null;
  /** How many objects the lane is (docs/concepts.md "Sharded lanes"), said only when more than one. */
  shards?: number;
  /** A sharded lane's shards, each with its counts (the front worker's sum says it; a shard never does). */
  shardList?: { shard: number; counts: Counts }[];
  /** The lane's waitpoints now (docs/api.md "Waitpoints"): how many are pending, kept as they change. */
  waitpoints: { pending: number };
  /** What every queue's unnamed settings follow. */
  queueDefaults: QueueDefaults;
}

/** What an enqueue did: a new job, the same one again, or (debounce) the queued job of its key replaced. */
export type EnqueueStatus = "queued" | "duplicate" | "debounced" | "skipped";
