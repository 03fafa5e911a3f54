/** The dead-letter outbox's statements (outbox.ts runs them; its rows are written by the trigger of migration 28). */

/** The earliest due copy (null: none owed), on `dead_letter_outbox_due`. */
export const NEXT_DEAD_LETTER_SQL = `SELECT MIN(next_at) AS at FROM dead_letter_outbox`;

/**
 * Due copies, the earliest first, each with about the bytes its copy will take (its payload's, the
 * size a reference to R2 states, and its errors'): a delivery takes a budget of bytes in hand before
 * it builds any copy. ?1 now, ?2 limit.
 */
export const DUE_DEAD_LETTERS_SQL = `SELECT seq, lane, id, tries,
  IIF(held IS NULL, length(CAST(payload AS BLOB)), CAST(substr(payload, instr(payload, ' ') + 1) AS INTEGER))
    + length(CAST(errors AS BLOB)) + ifnull(length(CAST(error AS BLOB)), 0) + 256 AS bytes
  FROM dead_letter_outbox WHERE next_at <= ?1 ORDER BY next_at, seq LIMIT +?2`;

/**
 * The copies of some rows (a JSON array of seqs in ?2) as the dead-letter lane stores them: the job's
 * fields as it settled, its payload whole (JSON text built here, nothing parsed). A payload held in R2
 * is no JSON: such a copy leaves it out here and names its key (`held`), and the outbox reads the
 * object and puts it in. ?1 the lane's name.
 */
export const COPIES_SQL = `SELECT seq, held, IIF(held IS NULL,
    ${copyObject(true)},
    ${copyObject(false)}) AS copy
  FROM dead_letter_outbox WHERE seq IN (SELECT value FROM json_each(?2))`;

/** The SQL of a copy's JSON object: the job's fields as it settled, its payload among them when `withPayload`. */
function copyObject(withPayload: boolean): string {
  const payload = withPayload ? "'payload', json(payload), " : "";
  return `json_object('lane', ?1, 'id', id, 'kind', kind, ${payload}'outcome', outcome, 'error', error, 'errors', json(errors), 'attempts', attempts, 'settledAt', settled_at)`;
}

/** Copies postponed to ?2 (a JSON array of seqs in ?1); ?3 1 counts a failed try. */
export const POSTPONE_DEAD_LETTERS_SQL = `UPDATE dead_letter_outbox SET next_at = ?2, tries = tries + ?3 WHERE seq IN (SELECT value FROM json_each(?1))`;

/**
 * Copies the dead-letter lane has (a JSON array of seqs in ?1): they go, each answered once (a copy
 * sent twice, its first answer late, is counted by the answer that deletes it alone), with the keys of
 * the objects they held for their copies (owed a deletion once no job points at them).
 */
export const ACK_DEAD_LETTERS_SQL = `DELETE FROM dead_letter_outbox WHERE seq IN (SELECT value FROM json_each(?1)) RETURNING seq, held`;

/** ?1 copies made: the lane's lifetime count. */
export const COUNT_DEAD_LETTERED_SQL = `UPDATE lane_counts SET total_dead_lettered = total_dead_lettered + ?1 WHERE id = 1`;
