/**
 * The SQL of durable steps (docs/api.md "Checkpoints"): checkpoints, progress, and the deletion of what
 * belongs to a job. Every write on behalf of an attempt is one statement behind the fence (fence.ts).
 * `now` is always a parameter.
 */
import { FENCE, fenceClause } from "../attempts/fence.js";
import { DELETE_COMPLETED_CHECKPOINTS_SQL, DELETE_OWNED_CHECKPOINTS_SQL } from "../store/deletion-statements.js";
import { JOB_COLUMNS } from "../store/job-row.js";

const UPSERT = `ON CONFLICT (job_seq, name) DO UPDATE SET value = excluded.value, generation = excluded.generation, updated_at = excluded.updated_at`;

/**
 * Records one checkpoint through the fence, stamped with the attempt's generation, if the job stays
 * within its limits: fewer than ?6 other names, and at most ?7 bytes of values with this one (the
 * name's old value replaced). Answers nothing when the fence or a limit refuses. For writes over
 * HTTP. ?1 id, ?2 token, ?3 now, ?4 name, ?5 value (JSON), ?6 max names, ?7 max bytes.
 */
export const SAVE_CHECKPOINT_SQL = `INSERT INTO checkpoints (job_seq, name, value, generation, updated_at)
  SELECT jobs.seq, ?4, ?5, jobs.generation, ?3 FROM jobs
  WHERE ${FENCE}
    AND (SELECT COUNT(*) < ?6 AND COALESCE(SUM(octet_length(c.value)), 0) + octet_length(?5) <= ?7
      FROM checkpoints c WHERE c.job_seq = jobs.seq AND c.name <> ?4)
  ${UPSERT}
  RETURNING generation, updated_at`;

/**
 * Records one checkpoint of an in-process attempt through the fence: the hot path of `ctx.step`, so
 * the row is found by its seq (no index to walk first), nothing is answered (`rowsWritten` says
 * whether it landed), and the job's checkpoints are not walked — the attempt holding the lease is the
 * job's only writer and keeps its limits itself (steps.ts).
 * ?1 id, ?2 token, ?3 now, ?4 name, ?5 value (JSON), ?6 the job's seq.
 */
export const RECORD_CHECKPOINT_SQL = `INSERT INTO checkpoints (job_seq, name, value, generation, updated_at)
  SELECT jobs.seq, ?4, ?5, jobs.generation, ?3 FROM jobs WHERE jobs.seq = ?6 AND ${FENCE}
  ${UPSERT}`;

/**
 * The records of several in-process attempts made in one turn, in one statement, each row through the
 * fence by its own token; answers the rows it wrote. ?1 JSON [[seq, id, token, name, value], …], ?2 now.
 */
export const RECORD_MANY_CHECKPOINTS_SQL = `INSERT INTO checkpoints (job_seq, name, value, generation, updated_at)
  SELECT jobs.seq, c.value->>3, c.value->>4, jobs.generation, ?2 FROM json_each(?1) AS c CROSS JOIN jobs
  WHERE jobs.seq = c.value->>0 AND ${fenceClause("c.value->>1", "c.value->>2", "?2")}
  ${UPSERT}
  RETURNING job_seq, name`;

/** The job's progress, through the fence; the lease is kept. ?1 id, ?2 token, ?3 now, ?4 progress (JSON). */
export const SAVE_PROGRESS_SQL = `UPDATE jobs SET progress = ?4, updated_at = ?3 WHERE ${FENCE} RETURNING ${JOB_COLUMNS}`;

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

/**
 * What the checkpoints of claim candidates add to a claim's answer: their values and one
 * `"name":` entry each (?2 bytes). ?1 JSON array of job seqs.
 */
export const CHECKPOINT_BYTES_SQL = `SELECT job_seq AS seq, SUM(octet_length(value)) + COUNT(*) * ?2 AS bytes FROM checkpoints
  WHERE job_seq IN (SELECT value FROM json_each(?1)) GROUP BY job_seq`;

/** The job's seq. ?1 id. */
export const JOB_SEQ_SQL = `SELECT seq FROM jobs WHERE id = ?1`;

/** Every checkpoint of a job, in name order (the operator's view). ?1 job seq. */
export const LIST_CHECKPOINTS_SQL = `SELECT name, value, generation, updated_at FROM checkpoints WHERE job_seq = +?1 ORDER BY name`;

/** The statements of durable steps on hot paths, with bindings for a plan, for the query-plan test. */
export const CHECKPOINT_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["a checkpoint write over HTTP", SAVE_CHECKPOINT_SQL, (now) => ["a", "t", now, "s1", "1", 1000, 1048576]],
  ["a checkpoint write in process", RECORD_CHECKPOINT_SQL, (now) => ["a", "t", now, "s1", "1", 1]],
  ["checkpoint writes of several attempts in process", RECORD_MANY_CHECKPOINTS_SQL, (now) => ['[[1,"a","t","s1","1"],[2,"b","u","s1","2"]]', now]],
  ["claim candidates' checkpoint bytes", CHECKPOINT_BYTES_SQL, () => ["[1,2]", 132]],
  ["a progress write", SAVE_PROGRESS_SQL, (now) => ["a", "t", now, "1"]],
  ["an attempt's checkpoints", RECORDED_SQL, () => ["a", 1]],
  ["claimed jobs' checkpoints", CLAIMED_CHECKPOINTS_SQL, () => ['["a","b"]']],
  ["a completion's checkpoints", DELETE_COMPLETED_CHECKPOINTS_SQL, () => ["[[1,1],[2,3]]"]],
  ["a deleted job's checkpoints", DELETE_OWNED_CHECKPOINTS_SQL, () => ["[1,2]"]],
];
