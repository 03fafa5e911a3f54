/**
 * Whether this object's jobs wait on waitpoints at all, read once an instance: a lane whose jobs never
 * wait pays no statement for waits when it deletes jobs (store/deletion.ts) or counts a waitpoint's
 * waiters. Kept by database, as the upkeep's switches are.
 */
import { ANY_WAITS_SQL, DELETE_OWNED_WAITS_SQL } from "./wait-statements.js";

const known = new WeakMap<SqlStorage, boolean>();

/** Whether a job of this database may have waits (true once any was written). */
export function mayHaveWaits(sql: SqlStorage): boolean {
  let any = known.get(sql);
  if (any === undefined) known.set(sql, (any = sql.exec(ANY_WAITS_SQL).toArray().length > 0));
  return any;
}

/** A wait was written: deletions delete waits from now on. */
export function waitsWritten(sql: SqlStorage): void {
  known.set(sql, true);
}

/** Deletes what the jobs of `seqs` (a JSON array) know of their waitpoints, inside the deletion's transaction. */
export function deleteOwnedWaits(sql: SqlStorage, seqs: string): void {
  if (mayHaveWaits(sql)) sql.exec(DELETE_OWNED_WAITS_SQL, seqs);
}
