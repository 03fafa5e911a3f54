/** The history's statements (history.ts runs them; the store's upkeep rolls the minute with its own: store/upkeep-statements.ts). */
import { HISTORY_MINUTES } from "../../shared/history.js";

/** The minute being counted: NULL while the lane records no history. */
export const COUNTING_MINUTE_SQL = `SELECT history_minute AS minute FROM lane_counts WHERE id = 1`;

export const CLEAR_SQL = `DELETE FROM history`;

export const OFF_SQL = `UPDATE lane_counts SET history_minute = NULL WHERE id = 1`;

export const COUNTING_SQL = `SELECT history_minute AS minute, total_enqueued - history_base_enqueued AS enqueued, total_claimed - history_base_started AS started,
  total_completed - history_base_completed AS completed, total_failed - history_base_failed AS failed, queued - blocked AS depth
  FROM lane_counts WHERE id = 1`;

export const ROWS_SQL = `SELECT minute, enqueued, started, completed, failed, depth FROM history WHERE minute BETWEEN ?1 AND ?2`;

export const BEFORE_SQL = `SELECT depth FROM history WHERE minute < ?1 ORDER BY minute DESC LIMIT 1`;

/** Recording starts: counting from now, and the depth now as the minute before's, for the minutes before to carry. */
export const ON_SQL = [
  `UPDATE lane_counts SET history_minute = ?1, history_base_enqueued = total_enqueued, history_base_started = total_claimed,
    history_base_completed = total_completed, history_base_failed = total_failed WHERE id = 1`,
  `INSERT INTO history (slot, minute, enqueued, started, completed, failed, depth)
    SELECT (?1 - 1) % ${HISTORY_MINUTES}, ?1 - 1, 0, 0, 0, 0, queued - blocked FROM lane_counts WHERE id = 1`,
];
