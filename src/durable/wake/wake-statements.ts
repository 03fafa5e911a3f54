/** The wake's statements: its reads of the jobs (reads.ts) and the lost-alarm watch's flag (alarm-watch.ts). */
import { BLOCKED_RUN_AT } from "../../shared/defaults.js";
import { IS_CLAIMABLE } from "../flow/may-start.js";

/** How many outcomes wait for delivery and how many jobs run (both kept counts), the earliest lease
 *  expiry and how many in-process cancellations wait, in one statement. */
export const WAKE_STATE_SQL = `SELECT
  (SELECT completing FROM lane_counts WHERE id = 1) AS completing,
  (SELECT MIN(lease_until) FROM jobs WHERE state = 'running') AS lease,
  (SELECT running FROM lane_counts WHERE id = 1) AS running,
  (SELECT COUNT(*) FROM jobs WHERE state = 'running' AND cancel_requested = 1 AND lease_holder = 'lane') AS cancels,
  (SELECT MIN(expires_at) FROM jobs WHERE state = 'queued' AND generation = 0 AND expires_at IS NOT NULL) AS expiry`;

/** Is a job of one in-process kind claimable now (asked once per kind, on `jobs_kind`). ?1 now, ?2 kind, ?3 job ids excluded (JSON array). */
export const DUE_EXECUTOR_HEAD_SQL = `SELECT 1 FROM jobs j WHERE j.state = 'queued' AND j.kind = ?2 AND j.run_at <= ?1
  AND j.id NOT IN (SELECT value FROM json_each(?3)) AND ${IS_CLAIMABLE} LIMIT 1`;

/** The earliest future runAt of a job that will be claimable then, as things stand (a blocked job has none). ?1 now. */
export const EARLIEST_FUTURE_HEAD_SQL = `SELECT j.run_at FROM jobs j WHERE j.state = 'queued' AND j.run_at > ?1 AND j.run_at < ${BLOCKED_RUN_AT}
  AND ${IS_CLAIMABLE} ORDER BY j.run_at LIMIT 1`;

/** Whether the registry watches this lane for the cron's check of lost alarms. */
export const WATCHED_SQL = `SELECT watched FROM lane WHERE id = 1`;

/** The watch's flag. ?1 0 or 1. */
export const SET_WATCHED_SQL = `UPDATE lane SET watched = ?1 WHERE id = 1`;

/** The wake's statements, with bindings for a plan, for the query-plan test. */
export const WAKE_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the wake: outcomes, earliest lease, running count, cancellations, expiry at once", WAKE_STATE_SQL, () => []],
  ["the wake: a due in-process head", DUE_EXECUTOR_HEAD_SQL, (now) => [now, "a", "[]"]],
  ["the wake: earliest future head", EARLIEST_FUTURE_HEAD_SQL, (now) => [now]],
];
