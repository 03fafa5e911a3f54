/**
 * The statements of a sharded lane's debounce keys (key-state.ts) and of the moves of their queued
 * jobs between shards (key-moves.ts; docs/concepts.md "Sharded lanes").
 */

// ---- key reservations (on a key's own shard) and refused nonces ----

/** Drops key `?1`'s reservation. */
export const DROP_KEY_RESERVATION_SQL = `DELETE FROM key_reservations WHERE key = ?1`;

/** Drops key `?1`'s reservation if its nonce is still `?2`. */
export const DROP_KEY_RESERVATION_UNDER_SQL = `DELETE FROM key_reservations WHERE key = ?1 AND nonce = ?2`;

/** Key `?1`'s reservation now for shard `?2` under nonce `?3`, if its nonce is still `?4`. */
export const ADVANCE_KEY_RESERVATION_SQL = `UPDATE key_reservations SET shard = ?2, nonce = ?3 WHERE key = ?1 AND nonce = ?4`;

/** Key `?1`'s job is on shard `?2` under nonce `?3`. */
export const POINT_KEY_SQL = `INSERT INTO key_reservations (key, shard, nonce) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO UPDATE SET shard = ?2, nonce = ?3`;

/** Key `?1`'s reservation: its shard and nonce. */
export const KEY_RESERVATION_SQL = `SELECT shard, nonce FROM key_reservations WHERE key = ?1`;

/** Gives nonce `?2` of key `?1` up for good. */
export const REFUSE_KEY_SQL = `INSERT INTO refused_keys (key, nonce) VALUES (?1, ?2) ON CONFLICT DO NOTHING`;

/** Whether nonce `?2` of key `?1` was given up. */
export const KEY_REFUSED_SQL = `SELECT 1 FROM refused_keys WHERE key = ?1 AND nonce = ?2`;

/** Every key reservation goes (the shard count changed). */
export const CLEAR_KEY_RESERVATIONS_SQL = `DELETE FROM key_reservations`;

/** Every refused key nonce goes (the shard count changed). */
export const CLEAR_REFUSED_KEYS_SQL = `DELETE FROM refused_keys`;

// ---- moves: on the sending shard ----

/** The shard key `?1`'s job is moving to, while a move of it is owed. */
export const KEY_MOVING_TO_SQL = `SELECT to_shard FROM key_moves WHERE key = ?1 LIMIT 1`;

/** The owed move of key `?1`. */
export const KEY_MOVE_OF_SQL = `SELECT * FROM key_moves WHERE key = ?1 LIMIT 1`;

/** Whether job `?1` is owed to another shard. */
export const JOB_MOVING_SQL = `SELECT 1 FROM key_moves WHERE job_id = ?1 LIMIT 1`;

/** Job `?1`'s row, every column (a moved job's row goes whole). */
export const JOB_ROW_SQL = `SELECT * FROM jobs WHERE seq = ?1`;

/** Job `?1`'s dependents' rows, every column. */
export const DEPENDENT_ROWS_SQL = `SELECT * FROM dependents WHERE dep_seq = ?1`;

/** Job `?1` has no dependents (they go with it: no notice of its deletion is owed). */
export const CLEAR_HAS_DEPENDENTS_SQL = `UPDATE jobs SET has_dependents = 0 WHERE seq = ?1`;

/** Job `?1`'s dependents' rows go. */
export const DROP_DEPENDENTS_SQL = `DELETE FROM dependents WHERE dep_seq = ?1`;

/** Job `?1` goes. */
export const DROP_JOB_SQL = `DELETE FROM jobs WHERE seq = ?1`;

/** A move owed: ?1 nonce, ?2 key, ?3 job id, ?4 receiving shard, ?5 key's shard, ?6 old nonce, ?7 id's shard, ?8 row, ?9 dependents (JSON), ?10 next delivery at, ?11 now. */
export const OWE_KEY_MOVE_SQL = `INSERT INTO key_moves (nonce, key, job_id, to_shard, key_shard, old_nonce, id_shard, row, dependents, next_at, created_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`;

/** Move `?1` delivered. */
export const DROP_KEY_MOVE_SQL = `DELETE FROM key_moves WHERE nonce = ?1`;

/** When the next owed move is due. */
export const NEXT_KEY_MOVE_AT_SQL = `SELECT MIN(next_at) AS at FROM key_moves`;

/** Owed moves due at `?1`, at most `?2`, earliest first. */
export const DUE_KEY_MOVES_SQL = `SELECT * FROM key_moves WHERE next_at <= ?1 ORDER BY next_at LIMIT +?2`;

/** Move `?1` next due at `?2`, one more attempt. */
export const KEY_MOVE_ATTEMPTED_SQL = `UPDATE key_moves SET next_at = ?2, attempts = attempts + 1 WHERE nonce = ?1`;

/** Move `?1` next due at `?2` (it failed: backed off). */
export const KEY_MOVE_BACKOFF_SQL = `UPDATE key_moves SET next_at = ?2 WHERE nonce = ?1`;

// ---- moves: on the receiving shard ----

/** Whether move `?1` arrived already. */
export const KEY_ARRIVED_SQL = `SELECT 1 FROM key_arrivals WHERE nonce = ?1`;

/** A queued job of key `?1` here is no longer of the key (the moved one arrives). */
export const UNKEY_QUEUED_SQL = `UPDATE jobs SET debounce_key = NULL WHERE debounce_key = ?1 AND state = 'queued' AND generation = 0`;

/** The moved job's row, its columns named by its sender's own row (all but `seq`), valued ?1.. in that order. */
export function insertMovedJobSql(columns: readonly string[]): string {
  return `INSERT INTO jobs (${columns.join(", ")}) VALUES (${columns.map((_, i) => `?${i + 1}`).join(", ")}) RETURNING seq`;
}

/** A moved job's dependent's row, its columns named by its sender's own row, valued ?1.. in that order. */
export function insertMovedDependentSql(columns: readonly string[]): string {
  return `INSERT INTO dependents (${columns.join(", ")}) VALUES (${columns.map((_, i) => `?${i + 1}`).join(", ")}) ON CONFLICT DO NOTHING`;
}

/** A moved job's arrival is not a new enqueue (its sender counted it). */
export const UNCOUNT_ARRIVAL_SQL = `UPDATE lane_counts SET total_enqueued = total_enqueued - 1 WHERE id = 1`;

/** Move `?1` arrived. */
export const KEY_ARRIVAL_SQL = `INSERT INTO key_arrivals (nonce) VALUES (?1)`;
