/**
 * The one place where jobs leave the `jobs` table: sweep, retention and purge all delete through
 * `deleteJobs`, which first deletes what belongs to those jobs (`deleteDependents`, dependents.ts:
 * their checkpoints, migration 7), so every way of deleting a job takes those rows with it. The
 * lane's counts follow the deleted jobs by themselves (the triggers of migration 6).
 */
import { deleteDependents } from "./owned-rows.js";

/** A job about to be deleted: its primary key and its id. */
export type DeletedJob = { seq: number; id: string };

/** Deletes the jobs of the JSON array of seqs ?1. */
const DELETE_JOBS_SQL = `DELETE FROM jobs WHERE seq IN (SELECT value FROM json_each(?1))`;

/** Deletes `jobs` and everything that belongs to them. Run it inside the caller's transaction. */
export function deleteJobs(sql: SqlStorage, jobs: readonly DeletedJob[]): number {
  if (jobs.length === 0) return 0;
  deleteDependents(sql, jobs.map((job) => job.seq));
  sql.exec(DELETE_JOBS_SQL, JSON.stringify(jobs.map((job) => job.seq)));
  return jobs.length;
}
