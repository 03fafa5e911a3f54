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
import { SUBJECT_COLUMNS, type SubjectRow } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import { keepUpkeep, subjectSnap } from "../store/upkeep.js";

/** Queued jobs not yet started whose expiry has come, soonest first. ?1 now, ?2 limit. */
export const EXPIRED_DUE_SQL = `SELECT seq FROM jobs WHERE state = 'queued' AND generation = 0 AND expires_at <= ?1
  ORDER BY expires_at LIMIT +?2`;

/** The given queued jobs settled `cancelled`, "expired". ?1 now, ?2 state (completing or settled), ?3 settled at, ?4 JSON array of seqs. */
const EXPIRE_SQL = `UPDATE jobs SET state = ?2, outcome = 'cancelled', error = 'expired', settled_at = ?3, updated_at = ?1
  WHERE seq IN (SELECT value FROM json_each(?4)) AND state = 'queued' AND generation = 0
  RETURNING ${SUBJECT_COLUMNS}, blocked`;

const COUNT_EXPIRED_SQL = `UPDATE lane_counts SET total_expired = total_expired + ?1 WHERE id = 1`;

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
