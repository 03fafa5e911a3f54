/**
 * The one place where jobs leave the `jobs` table, and what belongs to a job goes with it. Sweep,
 * retention and purge all delete through `deleteJobs`, which deletes what the jobs own (their
 * checkpoints, what they know of their dependencies, the registrations of their dependents) in the
 * same transaction, so nothing outlives its job. A job deleted before it settled tells its
 * dependents first (the outbox trigger of migration 13 reads its registrations as it goes). A completion deletes its job's
 * checkpoints through `deleteCompletedCheckpoints`, in its own transaction. The lane's counts follow
 * the deleted jobs in the same transaction (upkeep.ts, from the rows the delete answers).
 */
import { keepUpkeep, type Snap } from "./upkeep.js";
import { deleteOwnedWaits } from "../waits/owned-waits.js";
import { afterJobsDeleted } from "../payloads/owed-deletions.js";
import { DELETE_JOBS_SQL, DELETE_COMPLETED_CHECKPOINTS_SQL, DELETE_OWNED_CHECKPOINTS_SQL, DELETE_OWNED_DEPENDENCIES_SQL, DELETE_OWNED_DEPENDENTS_SQL } from "./deletion-statements.js";

/** A job about to be deleted: its primary key and its id. */
export type DeletedJob = { seq: number; id: string };

/** Deletes `jobs` and everything that belongs to them. Run it inside the caller's transaction. */
export function deleteJobs(sql: SqlStorage, jobs: readonly DeletedJob[]): number {
  if (jobs.length === 0) return 0;
  const seqs = JSON.stringify(jobs.map((job) => job.seq));
  sql.exec(DELETE_OWNED_CHECKPOINTS_SQL, seqs);
  keepUpkeep(sql, sql.exec<Snap>(DELETE_JOBS_SQL, seqs).toArray().map((old) => ({ old, new: null })), null);
  // After the jobs: an unsettled one's trigger reads its registrations to tell its dependents.
  sql.exec(DELETE_OWNED_DEPENDENCIES_SQL, seqs);
  sql.exec(DELETE_OWNED_DEPENDENTS_SQL, seqs);
  deleteOwnedWaits(sql, seqs);
  afterJobsDeleted(sql); // their objects in R2, recorded by the delete's trigger, go once this commits
  return jobs.length;
}

/**
 * Deletes the checkpoints of just-completed jobs, each job's only up to the generation of the lease
 * that completed it: a checkpoint of a newer attempt is never taken by an older one's settlement.
 */
export function deleteCompletedCheckpoints(sql: SqlStorage, completed: readonly { seq: number; generation: number }[]): void {
  if (completed.length > 0) sql.exec(DELETE_COMPLETED_CHECKPOINTS_SQL, JSON.stringify(completed.map((c) => [c.seq, c.generation])));
}
