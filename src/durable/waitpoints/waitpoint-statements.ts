/** The waitpoints' statements (waitpoints.ts runs them; migration 23 made their table and indexes). */

const COLUMNS = `id, state, result, timeout_at, created_at, settled_at`;

export const WAITPOINT_SQL = `SELECT ${COLUMNS} FROM waitpoints WHERE id = ?1`;

/** A new pending waitpoint; an existing id is left as it is (no row returned). */
export const INSERT_PENDING_SQL = `INSERT INTO waitpoints (id, state, result, timeout_at, created_at, settled_at)
  VALUES (?1, 'pending', NULL, ?2, ?3, NULL) ON CONFLICT (id) DO NOTHING RETURNING ${COLUMNS}`;

/** A waitpoint created already completed (a completion before anyone created it). */
export const INSERT_COMPLETED_SQL = `INSERT INTO waitpoints (id, state, result, timeout_at, created_at, settled_at)
  VALUES (?1, 'completed', ?2, NULL, ?3, ?3) ON CONFLICT (id) DO NOTHING RETURNING ${COLUMNS}`;

/** Settles a pending waitpoint; a settled one is left as it is (no row returned): the first settlement wins. */
export const SETTLE_SQL = `UPDATE waitpoints SET state = ?2, result = ?3, settled_at = ?4
  WHERE id = ?1 AND state = 'pending' RETURNING ${COLUMNS}`;

/** The kept counts follow: `?1` pending made, `?2` pending settled, `?3` completed, `?4` timed out. */
export const COUNT_SQL = `UPDATE lane_counts SET waitpoints_pending = waitpoints_pending + ?1 - ?2,
  total_waitpoints_completed = total_waitpoints_completed + ?3, total_waitpoints_timed_out = total_waitpoints_timed_out + ?4 WHERE id = 1`;

/** The kept counts: pending now, and the lifetime stats. */
export const COUNTS_SQL = `SELECT waitpoints_pending AS pending, total_waitpoints_completed AS waitpointsCompleted, total_waitpoints_timed_out AS waitpointsTimedOut FROM lane_counts WHERE id = 1`;

/** Pending waitpoints whose timeout has come, earliest first, on `waitpoints_timeout`. */
export const DUE_TIMEOUTS_SQL = `SELECT ${COLUMNS} FROM waitpoints
  WHERE state = 'pending' AND timeout_at IS NOT NULL AND timeout_at <= ?1 ORDER BY timeout_at LIMIT +?2`;

/** The earliest timeout of a pending waitpoint, on `waitpoints_timeout`. */
export const NEXT_TIMEOUT_SQL = `SELECT MIN(timeout_at) AS at FROM waitpoints WHERE state = 'pending' AND timeout_at IS NOT NULL`;

/** The oldest settlement that no waiter still waits to be told of, on `waitpoints_settled`. */
export const OLDEST_SETTLED_SQL = `SELECT settled_at AS at FROM waitpoints WHERE state <> 'pending' AND untold = 0 ORDER BY settled_at LIMIT 1`;

/** Deletes at most `?2` settled waitpoints settled before `?1` whose waiters were all told, oldest first. */
export const DELETE_SETTLED_SQL = `DELETE FROM waitpoints WHERE id IN (
  SELECT id FROM waitpoints WHERE state <> 'pending' AND settled_at < ?1 AND untold = 0 ORDER BY settled_at LIMIT +?2)`;

/** Whether the lane holds any waitpoint (a shard's count may change only while it holds none). */
export const ANY_SQL = `SELECT EXISTS (SELECT 1 FROM waitpoints) AS any`;

/** `?2` more waiters in other lanes wait to be told of waitpoint `?1`'s settlement. */
export const HOLD_UNTOLD_SQL = `UPDATE waitpoints SET untold = untold + ?2 WHERE id = ?1`;

/** `?2` of waitpoint `?1`'s untold waiters were told. */
export const RELEASE_UNTOLD_SQL = `UPDATE waitpoints SET untold = MAX(0, untold - ?2) WHERE id = ?1`;

/** The statements the alarm and the wake run, for the query-plan test: none may read the whole table. */
export const WAITPOINT_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the due timeouts", DUE_TIMEOUTS_SQL, (now) => [now, 100]],
  ["the wake: earliest timeout", NEXT_TIMEOUT_SQL, () => []],
  ["the wake: oldest settlement", OLDEST_SETTLED_SQL, () => []],
  ["retention and sweep", DELETE_SETTLED_SQL, (now) => [now, 100]],
  ["one waitpoint", WAITPOINT_SQL, () => ["w"]],
];
