/**
 * What a batch executor's start asks (attempts/batch-executor.ts): how many jobs of its kind may start
 * now (up to its size) and the oldest `runAt` among them. The dispatcher starts a batch when the
 * count reaches its size or that oldest job has waited its `waitMs`, and the wake (wake/compute.ts)
 * wakes for the same instant: both read this one statement, so the wake never names a batch the
 * claim would not start. "May start now" is flow/may-start.ts's, as the claim's is.
 */
import { IS_CLAIMABLE } from "../flow/may-start.js";

/**
 * The claimable due jobs of one kind, best first, at most `limit`: their count, and their oldest
 * `runAt` (fewer than `limit`: every claimable due job of the kind is among them, so it is the
 * kind's oldest). ?1 now, ?2 kind, ?3 job ids excluded (JSON array), ?4 limit.
 */
export const BATCH_DUE_SQL = `SELECT COUNT(*) AS due, MIN(run_at) AS oldest FROM (SELECT j.run_at FROM jobs j
  WHERE j.state = 'queued' AND j.kind = +?2 AND j.run_at <= ?1
    AND j.id NOT IN (SELECT value FROM json_each(?3))
    AND ${IS_CLAIMABLE}
  ORDER BY j.priority DESC, j.seq LIMIT +?4)`;

/** The batch statements, with bindings for a plan, for the query-plan test. */
export const BATCH_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["a batch kind's due jobs (count and oldest)", BATCH_DUE_SQL, (now) => [now, "a", "[]", 100]],
];
