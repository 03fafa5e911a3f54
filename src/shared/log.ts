/**
 * The one log of the project: a closed union of events, written as one JSON line each by `log()`.
 * Every line names its lane (or its HTTP request). This is the only place that writes logs, so it is
 * the one place to check that no secret leaks: lease tokens, API tokens and tickets never appear in
 * any event's fields (the union has no field that could hold one).
 */
import type { JobState, Outcome } from "./job.js";

/** Why an in-process attempt lost its lease. */
export type LostCause = "expired" | "superseded" | "settled" | "recovered";

/** The steps of a lane's alarm, each run on its own (one that throws starves none of the others). */
export type AlarmStep = "fires" | "recovery" | "reconcile" | "windUp" | "expiry" | "undeliverable" | "retention" | "outbox" | "housekeeping" | "flush" | "sent" | "keyMoves" | "waitpoints" | "bulk" | "deadLetters";

export type LogEvent =
  | {
      event: "job.transition";
      lane: string;
      jobId: string;
      kind: string;
      /** null: the job was just enqueued. */
      from: JobState | null;
      to: JobState;
      outcome: Outcome | null;
      attempt: number;
      generation: number;
      durationMs: number | null;
      at: number;
      /** The trace id (32 hex) of the job's `traceparent`, when it was enqueued with one. */
      traceId?: string;
    }
  | { event: "job.lost"; lane: string; jobId: string; kind: string; attempt: number; generation: number; cause: LostCause; message: string }
  | { event: "executor.stuck"; lane: string; jobId: string; kind: string; generation: number; abortedForMs: number }
  | { event: "lane.flush_failed"; lane: string; message: string }
  /** The sweep of big payloads' objects could not delete what it owes (payloads/payload-sweep.ts): tried again later. */
  | { event: "lane.payload_sweep_failed"; lane: string; message: string }
  | { event: "lane.alarm_write_failed"; lane: string; message: string }
  | { event: "lane.on_outcome_failed"; lane: string; jobId: string; message: string }
  | { event: "lane.hook_failed"; lane: string; hook: "onTransition" | "onLost"; jobId: string; message: string }
  | { event: "lane.register_failed"; lane: string; message: string }
  /** The wait for a write to be durable failed: the transitions it held are not told (the ones after it are). */
  | { event: "lane.transitions_unconfirmed"; lane: string; count: number; message: string }
  /** At start-up: leases of the previous instance's executors, given back (another version took them) or ended for recovery. */
  | { event: "lane.leases_after_restart"; lane: string; version: string; givenBack: number; expired: number }
  | { event: "lane.schema_too_new"; lane: string; stored: number; supported: number }
  | { event: "dispatcher.wind_up_failed"; lane: string; jobId: string; message: string }
  | { event: "http.internal_error"; method: string; path: string; name: string; message: string; stack: string | undefined }
  /** A schedule's fire that the enqueue refused (its id taken by a job of another spec): the schedule goes on. */
  | { event: "schedule.fire_failed"; lane: string; schedule: string; jobId: string; code: string; message: string }
  /** A sharded lane's fire whose shard could not take it (unreachable, or refusing every job): sent again after `retryInMs`; the schedule waits. */
  | { event: "schedule.fire_deferred"; lane: string; schedule: string; jobId: string; tries: number; retryInMs: number; message: string }
  /** The lane could not tell the registry that it has work for the belt to watch (it tries again on its next change). */
  | { event: "lane.watch_failed"; lane: string; message: string }
  /** The belt found the lane's alarm missing or later than its wake, and set it again. */
  | { event: "lane.alarm_rearmed"; lane: string; alarmWas: number | null; wakeAt: number }
  /**
   * The alarm the lane had stored (or last wrote) was overdue by more than `ALARM_OVERDUE_GRACE_MS`
   * and had not run: taken for lost (stored, never scheduled) and written again at `wakeAt`.
   */
  | { event: "lane.alarm_lost"; lane: string; alarmWas: number; wakeAt: number }
  /** One step of the alarm threw; the others ran. The step is tried again from `retryAt` (backoff per step). */
  | { event: "lane.alarm_step_failed"; lane: string; step: AlarmStep; failures: number; retryAt: number; message: string }
  /** A delivery of the outbox's notices to a dependent's lane failed, or that lane refused it: they are sent again after a backoff. */
  | { event: "lane.outbox_failed"; lane: string; to: string; notices: number; message: string }
  /** Copies whose id would pass 4,096 characters (a copy of a copy of …): not made, dropped from the outbox (deadletters/outbox.ts). */
  | { event: "lane.dead_letter_dropped"; lane: string; to: string; ids: string[]; message: string }
  /** A copy's payload held in R2 was missing from the bucket when it went (changed behind the lane's back): the copy says null. */
  | { event: "lane.dead_letter_payload_missing"; lane: string; to: string; id: string; message: string }
  | { event: "waitpoint.tell_failed"; lane: string; message: string }
  | { event: "lane.key_move_failed"; lane: string; key: string; jobId: string; to: number; message: string }
  /**
   * The outbox hands notices to their receiving object `to` (its own, applied in place, or another by
   * one call): `keys` are its outbox rows (per sending object `from`), one a notice, `dependencies`
   * and `dependents` the ids each names. With `lane.outbox_answered`, a notice's trail (sent, heard,
   * sent again) can be read from the log alone.
   */
  | { event: "lane.outbox_sent"; lane: string; from: string; to: string; keys: number[]; dependencies: string[]; dependents: string[] }
  /** What `to` answered for each of `keys` (`applied`, `repeat`, `gone`: acknowledged, its row deleted; `pending`: sent again later). */
  | { event: "lane.outbox_answered"; lane: string; from: string; to: string; keys: number[]; answers: (string | null)[] }
  /** The lane could not send its metrics report to the registry (it tries again later, backing off to a minute). */
  | { event: "lane.metrics_report_failed"; lane: string; failures: number; message: string }
  /** A lane whose metrics reports are off could not withdraw its last one from the registry (it tries again at its next start). */
  | { event: "lane.metrics_withdraw_failed"; lane: string; message: string }
  /** The belt could not reach a lane it watches (it tries again on its next run). */
  | { event: "belt.check_failed"; lane: string; message: string }
  /** The worker has no usable token configuration (none set, or API_KEYS does not parse): it refuses every /v1 request. Said once per configuration. */
  | { event: "auth.not_configured"; message: string };

/** A `job.transition` line: every change of a job's state, once durable. */
export type TransitionEvent = Extract<LogEvent, { event: "job.transition" }>;
/** A `job.lost` line: an in-process attempt that lost its lease (neither completed nor failed). */
export type LostEvent = Extract<LogEvent, { event: "job.lost" }>;

/** Writes one event as one JSON line: errors to stderr, the rest to stdout. */
export function log(event: LogEvent): void {
  const line = JSON.stringify(event);
  if (event.event.endsWith("_failed") || event.event === "http.internal_error" || event.event === "lane.transitions_unconfirmed" || event.event === "auth.not_configured") console.error(line);
  else console.log(line);
}
