/**
 * TTL (`ttlMs` on enqueue): a job not started by its `expiresAt` (its runAt + ttlMs, fixed at
 * enqueue) is settled `cancelled` with error "expired", and counted in `stats.expired`. A TTL holds
 * until the job's first start: a job that started and went back to queued (a retry, a release) is
 * never expired. No claim or start hands out an expired job even when the alarm is late (the claim's
 * own condition, attempts/claim-statements.ts); the alarm settles them, a bounded batch at a time,
 * the next expiry being one of the wake's terms.
 */
import type { Clock } from "../../shared/clock.js";
import { EXPIRY_BATCH } from "../../shared/defaults.js";
import type { SubjectRow } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import { keepUpkeep, subjectSnap } from "../store/upkeep.js";
import { EXPIRED_DUE_SQL, EXPIRE_SQL, COUNT_EXPIRED_SQL } from "./expiry-statements.js";

export class Expiry {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly store: JobStore,
  ) {
    this.sql = storage.sql;
  }

  /** Settles at most a batch of expired jobs, in one transaction; answers how many. */
  expireDue(limit = EXPIRY_BATCH): number {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const due = this.sql.exec<{ seq: number }>(EXPIRED_DUE_SQL, now, limit).toArray();
      if (due.length === 0) return 0;
      const to = this.store.endState();
      const rows = this.sql.exec<SubjectRow & { blocked: number }>(EXPIRE_SQL, now, to, to === "settled" ? now : null, JSON.stringify(due.map((r) => r.seq))).toArray();
      keepUpkeep(this.sql, rows.map((row) => {
        const to = subjectSnap(row, now);
        return { old: { ...to, state: "queued", outcome: null, blocked: row.blocked }, new: to };
      }), now);
      this.sql.exec(COUNT_EXPIRED_SQL, rows.length);
      for (const row of rows) this.store.emit(row, row.blocked > 0 ? "blocked" : "queued", null);
      return rows.length;
    });
  }
}
