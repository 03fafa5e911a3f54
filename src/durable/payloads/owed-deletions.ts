/**
 * After jobs are deleted (retention, sweep, purge, bulk delete: store/deletion.ts), the objects they
 * held are owed: the trigger of migration 30 recorded them in the deletion's own transaction, and the
 * lane's sweep deletes them once it has committed. A lane that has never held an object is not asked.
 */
/** What a deletion asks of a lane's payload store (payload-store.ts). */
export interface OwedObjects {
  /** Whether the lane has ever held an object. */
  readonly mayHold: boolean;
  readonly sweep: { soon(): void };
}

/** Each lane's payload store, by its database (one per object). */
const stores = new WeakMap<SqlStorage, OwedObjects>();

export function registerPayloadStore(sql: SqlStorage, store: OwedObjects): void {
  stores.set(sql, store);
}

/** Jobs were deleted in `sql`'s current transaction: a sweep follows its commit, when the lane may hold objects. */
export function afterJobsDeleted(sql: SqlStorage): void {
  const store = stores.get(sql);
  if (store?.mayHold) store.sweep.soon();
}
