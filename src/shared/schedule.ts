/** A schedule as the API shows it (docs/api.md "Schedules"). */
import type { Json } from "./job.js";
import type { ScheduleJob } from "./schemas.js";

/** The job a schedule enqueues: an enqueue request without `id`, `runAt` and `delayMs`. */
export type ScheduledJob = Omit<ScheduleJob, "payload"> & { payload?: Json };

export interface Schedule {
  name: string;
  /** The cron expression, or null for an `everyMs` schedule. */
  cron: string | null;
  /** The interval in ms, or null for a cron schedule. */
  everyMs: number | null;
  /** The cron schedule's IANA time zone; null for `everyMs`. */
  timezone: string | null;
  /** The job each fire enqueues, as the schedule was given it. */
  job: ScheduledJob;
  paused: boolean;
  /** The next fire (null: paused). */
  nextRunAt: number | null;
  /** The instant of the last fire (its job's `runAt`), null before the first. */
  lastRunAt: number | null;
  /** The id of the job the last fire enqueued, `<name>@<lastRunAt>`. */
  lastJobId: string | null;
  createdAt: number;
  /** When the definition last changed (a fire does not change it). */
  updatedAt: number;
}

/** A page of schedules by name; `cursor` continues after the last one (null: the end). */
export type SchedulePage = { schedules: Schedule[]; cursor: string | null };
/** A PUT's answer: whether the schedule was created (201) or replaced (200). */
export type SchedulePut = { created: boolean; schedule: Schedule };
