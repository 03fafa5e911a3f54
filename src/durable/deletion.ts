/**
 * The one place where jobs leave the `jobs` table: sweep, retention and purge all delete through
 * `deleteJobs`. A table that holds rows belonging to a job (checkpoints, migration 7) adds its DELETE
 * to `JOB_DEPENDENTS_SQL`, and every way of deleting a job takes those rows with it. The lane's counts
 * follow the deleted jobs by themselves (the triggers of migration 6).
 */

/** A job about to be deleted: its primary key and its id. */
export type DeletedJob = { seq: number; id: string };

/**
 * Statements that delete the rows belonging to the jobs being deleted, one per table that holds
 * any; each binds ?1 to the JSON array of those jobs' ids. Run before the jobs themselves.
 */
export const JOB_DEPENDENTS_SQL: readonly string[] = [];

/** Deletes the jobs of the JSON array of seqs ?1. */
const DELETE_JOBS_SQL = `DELETE FROM jobs WHERE seq IN (SELECT value FROM json_each(?1))`;

/** Deletes `jobs` and everything that belongs to them. Run it inside the caller's transaction. */
export function deleteJobs(sql: SqlStorage, jobs: readonly DeletedJob[]): number {
  if (jobs.length === 0) return 0;
  if (JOB_DEPENDENTS_SQL.length > 0) {
    const ids = JSON.stringify(jobs.map((job) => job.id));
    for (const statement of JOB_DEPENDENTS_SQL) sql.exec(statement, ids);
  }
  sql.exec(DELETE_JOBS_SQL, JSON.stringify(jobs.map((job) => job.seq)));
  return jobs.length;
}
