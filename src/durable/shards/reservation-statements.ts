/**
 * The statements of a sharded lane's id reservations (shard-state.ts; docs/concepts.md "Sharded
 * lanes"): on a job id's own shard, the shard its job is on when another, and the nonce a write
 * there carries; on that shard, the nonces refused since.
 */

/** The lane's shard count as this object stores it. */
export const SHARD_COUNT_SQL = `SELECT shards FROM lane WHERE id = 1`;

/** Sets the lane's shard count (`?1`). */
export const SET_SHARD_COUNT_SQL = `UPDATE lane SET shards = ?1 WHERE id = 1`;

/** Every reservation goes (the count changed). */
export const CLEAR_RESERVATIONS_SQL = `DELETE FROM reservations`;

/** Every refused reservation goes (the count changed). */
export const CLEAR_REFUSED_RESERVATIONS_SQL = `DELETE FROM refused_reservations`;

/** Drops id `?1`'s reservation if it is for shard `?2`. */
export const DROP_RESERVATION_FOR_SQL = `DELETE FROM reservations WHERE id = ?1 AND shard = ?2`;

/** Id `?1`'s reservation for shard `?2` now for shard `?3`. */
export const REPOINT_RESERVATION_SQL = `UPDATE reservations SET shard = ?3 WHERE id = ?1 AND shard = ?2`;

/** The shard id `?1` is reserved for. */
export const RESERVED_SHARD_SQL = `SELECT shard FROM reservations WHERE id = ?1`;

/** Id `?1`'s reservation: its shard and nonce. */
export const RESERVATION_SQL = `SELECT shard, nonce FROM reservations WHERE id = ?1`;

/** Drops id `?1`'s reservation. */
export const DROP_RESERVATION_SQL = `DELETE FROM reservations WHERE id = ?1`;

/** Reserves id `?1` for shard `?2` (its job's queue `?3`) under nonce `?4`, replacing any reservation of it. */
export const RESERVE_SQL = `INSERT INTO reservations (id, shard, queue, nonce) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (id) DO UPDATE SET shard = ?2, queue = ?3, nonce = ?4`;

/** Refuses id `?1`'s reservation under nonce `?2` for good. */
export const REFUSE_RESERVATION_SQL = `INSERT INTO refused_reservations (id, nonce) VALUES (?1, ?2) ON CONFLICT DO NOTHING`;

/** Whether id `?1`'s reservation under nonce `?2` was refused. */
export const RESERVATION_REFUSED_SQL = `SELECT 1 FROM refused_reservations WHERE id = ?1 AND nonce = ?2`;
