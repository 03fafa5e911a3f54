/**
 * The SQL of dependencies (docs/api.md "Dependencies"): what a dependent knows of its dependencies
 * (`dependencies`), who waits for a job of this lane (`dependents`), the notices this lane owes
 * (`outbox`, written by the triggers of migration 13 in the statement that settles a job), and the
 * writes that block, release and fail a dependent. `now` is always a parameter.
 */
import { JOB_COLUMNS } from "../store/job-row.js";

// ---- the dependency's side: registrations ----

/** What a registration needs of the named jobs. ?1 JSON array of ids. */
export const DEPENDENCY_STATE_SQL = `SELECT seq, id, state, outcome, result, error, generation FROM jobs WHERE id IN (SELECT value FROM json_each(?1))`;

/**
 * Registrations of dependents. ?1 JSON [[dep seq, lane, id], …], ?2 now, ?3 the token of the enqueue
 * that registers them, or NULL: held for good (the dependent is written in this very transaction, or
 * the caller is a lane of an older version, which names none). A dependent has one row, however many
 * enqueues of it register (so its notice goes once): the row's `owners` gains each token, until one
 * holds it for good.
 */
export const REGISTER_SQL = `INSERT INTO dependents (dep_seq, lane, id, created_at, owners)
  SELECT value->>0, value->>1, value->>2, ?2, CASE WHEN ?3 IS NULL THEN NULL ELSE json_array(?3) END FROM json_each(?1) WHERE true
  ON CONFLICT (dep_seq, lane, id) DO UPDATE SET owners = CASE
    WHEN dependents.owners IS NULL OR excluded.owners IS NULL THEN NULL
    WHEN EXISTS (SELECT 1 FROM json_each(dependents.owners) WHERE value = ?3) THEN dependents.owners
    ELSE json_insert(dependents.owners, '$[#]', ?3) END`;

/**
 * A registration withdrawn by the enqueue that made it: its own token taken out of the row's owners,
 * never another's (a row held for good has none to take). ?1 the job's id, ?2 the dependent's lane,
 * ?3 its id, ?4 the token.
 */
export const UNREGISTER_SQL = `UPDATE dependents SET owners = (SELECT json_group_array(value) FROM json_each(dependents.owners) WHERE value <> ?4)
  WHERE dep_seq = (SELECT seq FROM jobs WHERE id = ?1) AND lane = ?2 AND id = ?3
    AND EXISTS (SELECT 1 FROM json_each(dependents.owners) WHERE value = ?4) RETURNING 1`;

/** The row of a registration whose last owner withdrew it. ?1 the job's id, ?2 the dependent's lane, ?3 its id. */
export const DROP_UNOWNED_SQL = `DELETE FROM dependents WHERE dep_seq = (SELECT seq FROM jobs WHERE id = ?1) AND lane = ?2 AND id = ?3 AND owners = '[]'`;

/** The jobs that now have dependents: their settlement writes the outbox. ?1 JSON array of seqs. */
export const MARK_HAS_DEPENDENTS_SQL = `UPDATE jobs SET has_dependents = 1 WHERE seq IN (SELECT value FROM json_each(?1)) AND has_dependents = 0`;

/** What the outbox trigger of migration 13 reads of a settling job's registrations (for its plan). ?1 job seq. */
export const REGISTRATIONS_OF_SQL = `SELECT lane, id FROM dependents WHERE dep_seq = ?1`;

/** Whether any job of the lane has dependents registered (their settlements write the outbox). */
export const ANY_DEPENDENTS_SQL = `SELECT 1 FROM dependents LIMIT 1`;

/** A job's dependents, by lane then id, at most ?2. ?1 job id. */
export const DEPENDENTS_OF_SQL = `SELECT d.lane, d.id FROM jobs j JOIN dependents d ON d.dep_seq = j.seq WHERE j.id = +?1
  ORDER BY d.lane, d.id LIMIT +?2`;

// ---- the dependent's side: the enqueue, notices, reads ----

/**
 * What a dependent knows of each dependency when it is written. ?1 job seq, ?2 JSON
 * [[position, lane, id, outcome, result, error, generation, told at], …].
 */
export const INSERT_DEPENDENCIES_SQL = `INSERT INTO dependencies (job_seq, position, lane, id, outcome, result, error, generation, told_at)
  SELECT ?1, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7 FROM json_each(?2) WHERE true`;

/** A notice applied to the dependency row that has not heard yet; nothing for a repeat. ?1 job seq, ?2 lane, ?3 id, ?4 outcome, ?5 result, ?6 error, ?7 generation, ?8 now. */
export const TELL_DEPENDENCY_SQL = `UPDATE dependencies SET outcome = ?4, result = ?5, error = ?6, generation = ?7, told_at = ?8
  WHERE job_seq = ?1 AND lane = ?2 AND id = ?3 AND outcome IS NULL RETURNING position`;

/**
 * One dependency of a blocked job settled in a way that lets it go on: one fewer to wait for; at the
 * last, its runAt back (it is queued). ?1 seq, ?2 now.
 */
export const RELEASE_ONE_SQL = `UPDATE jobs SET blocked = blocked - 1, updated_at = ?2,
    run_at = CASE WHEN blocked = 1 THEN blocked_run_at ELSE run_at END,
    blocked_run_at = CASE WHEN blocked = 1 THEN NULL ELSE blocked_run_at END
  WHERE seq = ?1 AND state = 'queued' AND blocked > 0 RETURNING ${JOB_COLUMNS}`;

/**
 * A blocked job failed by a dependency that did not complete (policy fail): settled (or completing,
 * when outcomes are delivered) at once, its runAt back. ?1 seq, ?2 state, ?3 error, ?4 settled at, ?5 now.
 */
export const FAIL_DEPENDENT_SQL = `UPDATE jobs SET state = ?2, outcome = 'failed', error = ?3, settled_at = ?4, updated_at = ?5,
    run_at = COALESCE(blocked_run_at, run_at), blocked_run_at = NULL
  WHERE seq = ?1 AND state = 'queued' RETURNING ${JOB_COLUMNS}`;

/**
 * Claimed jobs' dependencies, each job's in the order it named them (its jobs' and waitpoints', then
 * its attempts' waits: migration 25's `job_waits`, `waitpoint` not null). A wait that has not heard
 * (a requeue cut it short) is left out: an entry is completed or timedOut. ?1 JSON array of job seqs.
 */
export const DEPENDENCIES_OF_SQL = `SELECT job_seq, position, lane, id, NULL AS waitpoint, outcome, result, error FROM dependencies
  WHERE job_seq IN (SELECT value FROM json_each(?1))
  UNION ALL SELECT job_seq, position, lane, NULL, waitpoint, outcome, result, NULL FROM job_waits
  WHERE job_seq IN (SELECT value FROM json_each(?1)) AND outcome IS NOT NULL ORDER BY job_seq, position`;

const JOB_DEPENDENCY_BYTES = `SELECT job_seq AS seq, COALESCE(octet_length(result), 4) + 6 * COALESCE(length(error), 0) + ?2 AS bytes FROM dependencies WHERE job_seq IN (SELECT value FROM json_each(?1))`;

/** What claim candidates' dependencies (and waits) add to a pull claim's answer: results, errors (escaped, at most 6×) and names. ?1 JSON array of seqs, ?2 overhead per item. */
export const DEPENDENCY_BYTES_SQL = `SELECT seq, SUM(bytes) AS bytes FROM (
    ${JOB_DEPENDENCY_BYTES}
    UNION ALL SELECT job_seq, COALESCE(octet_length(result), 4) + ?2 FROM job_waits WHERE job_seq IN (SELECT value FROM json_each(?1)) AND outcome IS NOT NULL)
  GROUP BY seq`;

/** The same in a lane whose jobs never waited on a waitpoint: no read of waits. */
export const JOB_DEPENDENCY_BYTES_SQL = `SELECT seq, SUM(bytes) AS bytes FROM (${JOB_DEPENDENCY_BYTES}) GROUP BY seq`;

// ---- the outbox ----

/**
 * Due notices, oldest first, with the result of the settled job (kept while its notices are
 * untold; a job deleted unsettled has none). ?1 now, ?2 limit.
 */
export const DUE_NOTICES_SQL = `SELECT o.seq, o.dep_id, o.outcome, o.error, o.generation, o.lane, o.id, o.attempts, j.result
  FROM outbox o LEFT JOIN jobs j ON j.seq = o.dep_seq
  WHERE o.next_at <= ?1 ORDER BY o.next_at, o.seq LIMIT +?2`;

/** Notices taken in hand (or to try again later): not due again before ?2. ?1 JSON array of seqs, ?3 1 to count a failed try. */
export const POSTPONE_NOTICES_SQL = `UPDATE outbox SET next_at = ?2, attempts = attempts + ?3 WHERE seq IN (SELECT value FROM json_each(?1))`;

/** Acknowledged notices. ?1 JSON array of seqs. */
export const ACK_NOTICES_SQL = `DELETE FROM outbox WHERE seq IN (SELECT value FROM json_each(?1))`;

/** The next notice due (the outbox's wake term). */
export const NEXT_NOTICE_SQL = `SELECT MIN(next_at) AS at FROM outbox`;

/** The statements of dependencies on hot paths, with bindings for a plan, for the query-plan test. */
export const DEPENDENCY_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["a registration's jobs", DEPENDENCY_STATE_SQL, () => ['["a","b"]']],
  ["a job's dependents", DEPENDENTS_OF_SQL, () => ["a", 100]],
  ["a settling job's registrations (the outbox trigger)", REGISTRATIONS_OF_SQL, () => [1]],
  ["a notice told to its dependency row", TELL_DEPENDENCY_SQL, (now) => [1, "l", "a", "completed", null, null, 1, now]],
  ["releasing a dependent", RELEASE_ONE_SQL, (now) => [1, now]],
  ["claimed jobs' dependencies", DEPENDENCIES_OF_SQL, () => ["[1,2]"]],
  ["due outbox notices", DUE_NOTICES_SQL, (now) => [now, 500]],
  ["the outbox's wake term", NEXT_NOTICE_SQL, () => []],
];
