/** The API's shapes as the page reads them: the server's own types (type-only imports, so nothing of the server is bundled). */
import type { Counts, LaneInfo } from "../../../shared/job.js";

export type { AttemptError, Checkpoint, Counts, DependsOnItem, Job, JobRef, LaneInfo, LaneStats, WaitpointRef } from "../../../shared/job.js";
export type { Waitpoint, WaitpointState } from "../../../shared/waitpoint.js";
export type { FailLaneAnswer, PurgeAnswer, QueueInfo } from "../../../shared/answers.js";
export type { Schedule, SchedulePage } from "../../../shared/schedule.js";
export type { Bulk, BulkAction } from "../../../shared/bulk.js";

export const COUNT_KEYS = ["blocked", "queued", "running", "completing", "completed", "failed", "cancelled", "interrupted"] as const satisfies readonly (keyof Counts)[];
export const STATES = ["blocked", "queued", "running", "completing", "settled"] as const;
export const OUTCOMES = ["completed", "failed", "cancelled", "interrupted"] as const;
/** A lane's lifetime counters, in the order the page shows them. */
export const STAT_KEYS = ["enqueued", "claimed", "completed", "failed", "cancelled", "interrupted", "retried", "recovered", "lost", "snoozed", "deadLettered", "waitpointsCompleted", "waitpointsTimedOut"] as const satisfies readonly (keyof LaneInfo["stats"])[];
