/** The listing's statement (rpc/waitpoint-list.ts runs it; migration 23 made the table). */

/**
 * The ids of the waitpoints after id `?1` (the cursor's; empty text: from the first), from `?4` and
 * below `?5` (a prefix's range; every id: from "" below "~"), of state `?2` (NULL: every state), in id
 * order, at most `?3`, with the bytes of each one's result: a walk of the table's key, so a page
 * costs the rows it reads, and its size is known before any is read whole.
 */
export const LIST_WAITPOINTS_SQL = `SELECT id, COALESCE(length(CAST(result AS BLOB)), 0) AS bytes FROM waitpoints
  WHERE id > ?1 AND id >= ?4 AND id < ?5 AND (?2 IS NULL OR state = ?2) ORDER BY id LIMIT ?3`;
