/** The listing's statements (rpc/waitpoint-list.ts runs them; migration 23 made the table). */

const LIST = `SELECT id, COALESCE(length(CAST(result AS BLOB)), 0) AS bytes FROM waitpoints`;
const FILTER = `id < ?2 AND (?3 IS NULL OR state = ?3) ORDER BY id LIMIT ?4`;

/**
 * A first page: the ids from `?1` (a prefix; "" for every id) and below `?2` (where the prefix's ids
 * end), of state `?3` (NULL: every state), in id order, at most `?4`, with the bytes of each one's
 * result. One lower bound, so that the walk of the table's key starts there: a page costs the rows
 * it reads, and its size is known before any is read whole.
 */
export const LIST_WAITPOINTS_FROM_SQL = `${LIST} WHERE id >= ?1 AND ${FILTER}`;

/** A page after a cursor: as the first, from the id after `?1`. */
export const LIST_WAITPOINTS_AFTER_SQL = `${LIST} WHERE id > ?1 AND ${FILTER}`;
