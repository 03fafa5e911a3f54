/**
 * The SQL of durable steps (API.md "Checkpoints"): checkpoints, progress, and the deletion of what
 * belongs to a job. Every write on behalf of an attempt is one statement behind the fence (fence.ts);
 * `checkpoint_totals` is kept by triggers (migration 7). `now` is always a parameter.
 */
import { FENCE } from "./fence.js";
import { JOB_COLUMNS } from "./job-row.js";

/**
 * Records one checkpoint through the fence, stamped with the attempt's generation, if the job stays
 * within its limits: the name is new and the job holds fewer than ?6 names, and its values stay within
 * ?7 bytes in all (the name's old value, if any, replaced). Answers nothing when the fence or a limit
 * refuses. ?1 id, ?2 token, ?3 now, ?4 name, ?5 value (JSON), ?6 max names, ?7 max bytes.
 */
export const SAVE_CHECKPOINT_SQL = `INSERT INTO checkpoints (job_seq, name, value, generation, updated_at)
  SELECT jobs.seq, ?4, ?5, jobs.generation, ?3 FROM jobs
    LEFT JOIN checkpoint_totals t ON t.job_seq = jobs.seq
    LEFT JOIN checkpoints old ON old.job_seq = jobs.seq AND old.name = ?4
  WHERE ${FENCE}
    AND COALESCE(t.names, 0) + (old.name IS NULL) <= ?6
    AND COALESCE(t.bytes, 0) - COALESCE(octet_length(old.value), 0) + octet_length(?5) <= ?7
  ON CONFLICT (job_seq, name) DO UPDATE SET value = excluded.value, generation = excluded.generation, updated_at = excluded.updated_at
  RETURNING generation, updated_at`;

/** The job's progress, through the fence; the lease is kept. ?1 id, ?2 token, ?3 now, ?4 progress (JSON). */
export const SAVE_PROGRESS_SQL = `UPDATE jobs SET progress = ?4, updated_at = ?3 WHERE ${FENCE} RETURNING ${JOB_COLUMNS}`;

/** What the fence reads of a job, to tell a limit's refusal from the fence's. ?1 id. */
export const FENCE_ROW_SQL = `SELECT state, outcome, lease_token, lease_until, cancel_requested, attempt_end FROM jobs WHERE id = ?1`;

/** What an attempt of generation ?2 may read: the job's checkpoints written up to it. ?1 id, ?2 generation. */
export const RECORDED_SQL = `SELECT c.name, c.value FROM jobs CROSS JOIN checkpoints c
  WHERE jobs.id = ?1 AND c.job_seq = jobs.seq AND c.generation <= ?2`;

/**
 * The checkpoints of just-claimed jobs, for the claim's answer: each job's, up to its (new)
 * generation, in name order. ?1 JSON array of job ids.
 */
export const CLAIMED_CHECKPOINTS_SQL = `SELECT jobs.id, c.name, c.value FROM json_each(?1) AS l
  CROSS JOIN jobs CROSS JOIN checkpoints c
  WHERE jobs.id = l.value AND c.job_seq = jobs.seq AND c.generation <= jobs.generation
  ORDER BY jobs.id, c.name`;

/** The job's seq. ?1 id. */
export const JOB_SEQ_SQL = `SELECT seq FROM jobs WHERE id = ?1`;

/** Every checkpoint of a job, in name order (the operator's view). ?1 job seq. */
export const LIST_CHECKPOINTS_SQL = `SELECT name, value, generation, updated_at FROM checkpoints WHERE job_seq = ?1 ORDER BY name`;

/**
 * A completed job's checkpoints, those written up to the completing lease's generation only: run in
 * the completion's transaction. ?1 JSON array of [job seq, generation].
 */
export const DELETE_COMPLETED_CHECKPOINTS_SQL = `DELETE FROM checkpoints
  WHERE job_seq IN (SELECT value->>0 FROM json_each(?1))
    AND generation <= (SELECT value->>1 FROM json_each(?1) WHERE value->>0 = checkpoints.job_seq)`;

/** Everything that belongs to the jobs (their checkpoints; their totals follow by trigger). ?1 JSON array of job seqs. */
export const DELETE_DEPENDENTS_SQL = `DELETE FROM checkpoints WHERE job_seq IN (SELECT value FROM json_each(?1))`;

/** The statements of durable steps on hot paths, with bindings for a plan, for the query-plan test. */
export const CHECKPOINT_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["a checkpoint write", SAVE_CHECKPOINT_SQL, (now) => ["a", "t", now, "s1", "1", 1000, 1048576]],
  ["a progress write", SAVE_PROGRESS_SQL, (now) => ["a", "t", now, "1"]],
  ["an attempt's checkpoints", RECORDED_SQL, () => ["a", 1]],
  ["claimed jobs' checkpoints", CLAIMED_CHECKPOINTS_SQL, () => ['["a","b"]']],
  ["a completion's checkpoints", DELETE_COMPLETED_CHECKPOINTS_SQL, () => ["[[1,1],[2,3]]"]],
  ["a deleted job's dependents", DELETE_DEPENDENTS_SQL, () => ["[1,2]"]],
];
