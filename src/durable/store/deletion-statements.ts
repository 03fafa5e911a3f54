/** The statements of a job's deletion and of what it owns (deletion.ts runs them). */
import { SNAP_COLUMNS } from "./upkeep.js";

/** Deletes the jobs of the JSON array of seqs ?1, answering what the upkeep reads of each. */
export const DELETE_JOBS_SQL = `DELETE FROM jobs WHERE seq IN (SELECT value FROM json_each(?1)) RETURNING ${SNAP_COLUMNS}`;

/**
 * A completed job's checkpoints, those written up to the completing lease's generation only: run in
 * the completion's transaction. ?1 JSON array of [job seq, generation].
 */
export const DELETE_COMPLETED_CHECKPOINTS_SQL = `DELETE FROM checkpoints
  WHERE job_seq IN (SELECT value->>0 FROM json_each(?1))
    AND generation <= (SELECT value->>1 FROM json_each(?1) WHERE value->>0 = checkpoints.job_seq)`;

/** Everything that belongs to the jobs: their checkpoints. ?1 JSON array of job seqs. */
export const DELETE_OWNED_CHECKPOINTS_SQL = `DELETE FROM checkpoints WHERE job_seq IN (SELECT value FROM json_each(?1))`;

/** What the jobs know of their dependencies. ?1 JSON array of job seqs. */
export const DELETE_OWNED_DEPENDENCIES_SQL = `DELETE FROM dependencies WHERE job_seq IN (SELECT value FROM json_each(?1))`;

/** Who registered to wait for the jobs. ?1 JSON array of job seqs. */
export const DELETE_OWNED_DEPENDENTS_SQL = `DELETE FROM dependents WHERE dep_seq IN (SELECT value FROM json_each(?1))`;
