/**
 * The SQL of jobs that wait on a waitpoint of another object (migration 25's `waitpoint_waiters` and
 * `waitpoint_outbox`): the waitpoint's side keeps their registrations and owes them notices; the
 * waiter's side applies a notice to its job's waits. `now` is always a parameter.
 */

/**
 * Job ?3 of object ?2 waits on waitpoint ?1 (?4 now), registered by the enqueue of token ?5 (null:
 * held for good). A second registration of the same waiter adds its token, as `dependents` do.
 */
export const REGISTER_WAITER_SQL = `INSERT INTO waitpoint_waiters (waitpoint, lane, id, created_at, owners)
  VALUES (?1, ?2, ?3, ?4, CASE WHEN ?5 IS NULL THEN NULL ELSE json_array(?5) END)
  ON CONFLICT (waitpoint, lane, id) DO UPDATE SET owners = CASE
    WHEN waitpoint_waiters.owners IS NULL OR excluded.owners IS NULL THEN NULL
    WHEN EXISTS (SELECT 1 FROM json_each(waitpoint_waiters.owners) WHERE value = ?5) THEN waitpoint_waiters.owners
    ELSE json_insert(waitpoint_waiters.owners, '$[#]', ?5) END`;

/** Token ?4 withdraws its registration of job ?3 of object ?2 with waitpoint ?1 (a row held for good keeps). */
export const UNREGISTER_WAITER_SQL = `UPDATE waitpoint_waiters SET owners = (SELECT json_group_array(value) FROM json_each(waitpoint_waiters.owners) WHERE value <> ?4)
  WHERE waitpoint = ?1 AND lane = ?2 AND id = ?3 AND EXISTS (SELECT 1 FROM json_each(waitpoint_waiters.owners) WHERE value = ?4) RETURNING 1`;

/** The registration whose last owner withdrew it. */
export const DROP_UNOWNED_WAITER_SQL = `DELETE FROM waitpoint_waiters WHERE waitpoint = ?1 AND lane = ?2 AND id = ?3 AND owners = '[]'`;

/** Whether any job of another object waits on a waitpoint here (read once an instance). */
export const ANY_REMOTE_WAITERS_SQL = `SELECT 1 FROM waitpoint_waiters LIMIT 1`;

/** How many jobs of other objects wait on waitpoint ?1. */
export const COUNT_REMOTE_WAITERS_SQL = `SELECT COUNT(*) AS n FROM waitpoint_waiters WHERE waitpoint = ?1`;

/** Waitpoint ?1 settled (?2 its outcome, ?3 now): a notice owed to each of its waiters elsewhere, due now. */
export const OWE_NOTICES_SQL = `INSERT INTO waitpoint_outbox (waitpoint, outcome, lane, id, attempts, next_at, created_at)
  SELECT waitpoint, ?2, lane, id, 0, ?3, ?3 FROM waitpoint_waiters WHERE waitpoint = ?1 RETURNING seq`;

/** Its registrations go with the notices they became. */
export const DROP_WAITERS_SQL = `DELETE FROM waitpoint_waiters WHERE waitpoint = ?1`;

/** The next notice due (the waitpoint outbox's wake term). */
export const NEXT_WAITPOINT_NOTICE_SQL = `SELECT MIN(next_at) AS at FROM waitpoint_outbox`;

/** Notices ?1 (JSON array of seqs) due at ?2, ?3 more tries counted. */
export const POSTPONE_WAITPOINT_NOTICES_SQL = `UPDATE waitpoint_outbox SET next_at = ?2, attempts = attempts + ?3 WHERE seq IN (SELECT value FROM json_each(?1))`;

/** Acknowledged notices ?1 (JSON array of seqs), answered with their waitpoints (each then told one fewer). */
export const ACK_WAITPOINT_NOTICES_SQL = `DELETE FROM waitpoint_outbox WHERE seq IN (SELECT value FROM json_each(?1)) RETURNING waitpoint`;

/**
 * The waiter's side: job ?1 (seq) hears of waitpoint ?3 of lane ?2, ?4 its outcome, ?5 its result,
 * ?6 now: each of its waits on it not yet told (a `dependsOn` item, attempts' waits). Answers their places.
 * A wait told holds no registration there any more: its token goes, so nothing withdraws it.
 */
export const TELL_JOB_WAITS_SQL = `UPDATE job_waits SET outcome = ?4, result = ?5, told_at = ?6, token = NULL
  WHERE job_seq = ?1 AND lane = ?2 AND waitpoint = ?3 AND outcome IS NULL RETURNING position`;

/** Whether job ?1 (seq) waits or waited on waitpoint ?3 of lane ?2 (a notice told twice is a repeat). */
export const KNOWN_JOB_WAIT_SQL = `SELECT 1 FROM job_waits WHERE job_seq = ?1 AND lane = ?2 AND waitpoint = ?3 LIMIT 1`;

// ---- the waiter's side: registrations withdrawn (migration 26) ----

/** Job ?1 (seq) registered with a waitpoint of another object: its settlement or deletion unheard withdraws it (the triggers of migration 26). */
export const MARK_REMOTE_WAITS_SQL = `UPDATE jobs SET remote_waits = 1 WHERE seq = ?1 AND remote_waits IS NULL`;

/**
 * Job ?1 (seq) was told: with no registration elsewhere left unheard, its flag goes, and with it the
 * withdrawal triggers' work at its later settlement or deletion.
 */
export const UNMARK_REMOTE_WAITS_SQL = `UPDATE jobs SET remote_waits = NULL WHERE seq = ?1 AND remote_waits IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM job_waits WHERE job_seq = ?1 AND token IS NOT NULL)`;

/** Job ?1 (seq) waits again on its unheard wait at ?2, registered anew under token ?3 (an attempt's wait after a requeue). */
export const REREGISTER_WAIT_SQL = `UPDATE job_waits SET token = ?3 WHERE job_seq = ?1 AND position = ?2 AND outcome IS NULL`;

/** Whether this object may owe withdrawals: a registration held, or a withdrawal owed (read once an instance). */
export const ANY_REGISTERED_SQL = `SELECT 1 FROM job_waits WHERE token IS NOT NULL UNION ALL SELECT 1 FROM waitpoint_withdrawals LIMIT 1`;

/** The next withdrawal due (its wake term). */
export const NEXT_WITHDRAWAL_SQL = `SELECT MIN(next_at) AS at FROM waitpoint_withdrawals`;

/** Due withdrawals, oldest first. ?1 now, ?2 limit. */
export const DUE_WITHDRAWALS_SQL = `SELECT seq, lane, waitpoint, id, token, attempts FROM waitpoint_withdrawals
  WHERE next_at <= ?1 ORDER BY next_at, seq LIMIT +?2`;

/** Withdrawals ?1 (JSON array of seqs) due at ?2, ?3 more tries counted. */
export const POSTPONE_WITHDRAWALS_SQL = `UPDATE waitpoint_withdrawals SET next_at = ?2, attempts = attempts + ?3 WHERE seq IN (SELECT value FROM json_each(?1))`;

/** Withdrawals ?1 (JSON array of seqs) acknowledged by their waitpoints' objects. */
export const ACK_WITHDRAWALS_SQL = `DELETE FROM waitpoint_withdrawals WHERE seq IN (SELECT value FROM json_each(?1))`;

/** The statements of remote waits on their paths, with bindings for a plan, for the query-plan test: none may read a whole table. */
export const REMOTE_WAIT_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["a waitpoint's waiters elsewhere", COUNT_REMOTE_WAITERS_SQL, () => ["w"]],
  ["a settlement's notices owed", OWE_NOTICES_SQL, (now) => ["w", "completed", now]],
  ["a settlement's registrations dropped", DROP_WAITERS_SQL, () => ["w"]],
  ["a withdrawn registration", UNREGISTER_WAITER_SQL, () => ["w", "l", "j", "t"]],
  ["the outbox's wake term", NEXT_WAITPOINT_NOTICE_SQL, () => []],
  ["notices postponed", POSTPONE_WAITPOINT_NOTICES_SQL, (now) => ["[1,2]", now, 1]],
  ["notices acknowledged", ACK_WAITPOINT_NOTICES_SQL, () => ["[1,2]"]],
  ["a notice told to its job's waits", TELL_JOB_WAITS_SQL, (now) => [1, "l", "w", "completed", null, now]],
  ["a notice told twice", KNOWN_JOB_WAIT_SQL, () => [1, "l", "w"]],
  ["a job marked as registered elsewhere", MARK_REMOTE_WAITS_SQL, () => [1]],
  ["a job told of its last registration elsewhere", UNMARK_REMOTE_WAITS_SQL, () => [1]],
  ["an unheard wait registered anew", REREGISTER_WAIT_SQL, () => [1, 1000, "t"]],
  ["the withdrawals' wake term", NEXT_WITHDRAWAL_SQL, () => []],
  ["withdrawals due", DUE_WITHDRAWALS_SQL, (now) => [now, 10]],
  ["withdrawals postponed", POSTPONE_WITHDRAWALS_SQL, (now) => ["[1,2]", now, 1]],
  ["withdrawals acknowledged", ACK_WITHDRAWALS_SQL, () => ["[1,2]"]],
];
