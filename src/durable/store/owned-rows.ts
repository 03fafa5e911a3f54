/**
 * What belongs to a job and goes when the job goes (today its checkpoints). Whatever deletes jobs — sweep, purge, retention — calls `deleteDependents` with their
 * seqs in the same transaction as the deletion, so that nothing outlives its job. A completion calls
 * `deleteCompletedCheckpoints` in its own transaction.
 */
import { DELETE_COMPLETED_CHECKPOINTS_SQL, DELETE_DEPENDENTS_SQL } from "../steps/checkpoint-statements.js";

/** Deletes everything that belongs to the jobs of these seqs. One statement, whatever their number. */
export function deleteDependents(sql: SqlStorage, seqs: readonly number[]): void {
  if (seqs.length > 0) sql.exec(DELETE_DEPENDENTS_SQL, JSON.stringify(seqs));
}

/**
 * Deletes the checkpoints of just-completed jobs, each job's only up to the generation of the lease
 * that completed it: a checkpoint of a newer attempt is never taken by an older one's settlement.
 */
export function deleteCompletedCheckpoints(sql: SqlStorage, completed: readonly { seq: number; generation: number }[]): void {
  if (completed.length > 0) sql.exec(DELETE_COMPLETED_CHECKPOINTS_SQL, JSON.stringify(completed.map((c) => [c.seq, c.generation])));
}
