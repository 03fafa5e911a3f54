/** The dead-letter outbox's statements (outbox.ts runs them; its rows are written by the trigger of migration 28). */

/** The earliest due copy (null: none owed), on `dead_letter_outbox_due`. */
export const NEXT_DEAD_LETTER_SQL = `SELECT MIN(next_at) AS at FROM dead_letter_outbox`;

/**
 * Due copies, the earliest first, each with its payload as the dead-letter lane stores it: the job's
 * fields as it settled, its payload whole (JSON text built here, nothing parsed). A payload held in
 * R2 (its column a reference, `@…`: migration 30) is not JSON: such a copy says null for now, rather
 * than fail the delivery of every copy with it. ?1 the lane's name, ?2 now, ?3 limit.
 */
export const DUE_DEAD_LETTERS_SQL = `SELECT seq, lane, id, tries, json_object('lane', ?1, 'id', id, 'kind', kind,
  'payload', IIF(substr(payload, 1, 1) = '@', NULL, json(payload)),
  'outcome', outcome, 'error', error, 'errors', json(errors), 'attempts', attempts, 'settledAt', settled_at) AS copy
  FROM dead_letter_outbox WHERE next_at <= ?2 ORDER BY next_at, seq LIMIT ?3`;

/** Copies postponed to ?2 (a JSON array of seqs in ?1); ?3 1 counts a failed try. */
export const POSTPONE_DEAD_LETTERS_SQL = `UPDATE dead_letter_outbox SET next_at = ?2, tries = tries + ?3 WHERE seq IN (SELECT value FROM json_each(?1))`;

/**
 * Copies the dead-letter lane has (a JSON array of seqs in ?1): they go, each answered once (a copy
 * sent twice, its first answer late, is counted by the answer that deletes it alone).
 */
export const ACK_DEAD_LETTERS_SQL = `DELETE FROM dead_letter_outbox WHERE seq IN (SELECT value FROM json_each(?1)) RETURNING seq`;

/** ?1 copies made: the lane's lifetime count. */
export const COUNT_DEAD_LETTERED_SQL = `UPDATE lane_counts SET total_dead_lettered = total_dead_lettered + ?1 WHERE id = 1`;
