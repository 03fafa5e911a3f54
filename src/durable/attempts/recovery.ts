/**
 * Recovery of attempts that vanished: a lease that ran out is recovered by the alarm within the
 * job's budget (`maxRecoveries` per `windowMs`), then the job settles `interrupted`. When the object
 * starts, the leases of its own dispatcher belong to executors that died with the previous instance:
 * those taken by an older version of the code (a deploy) are given back at once and spend nothing;
 * those of this version (a crash, which the job itself may have caused) expire now and are recovered
 * on the budget like any lost lease, so a job that kills its isolate still ends `interrupted`.
 */
import type { Clock } from "../../shared/clock.js";
import { RECOVERY_BATCH } from "../../shared/defaults.js";
import { jobRows, oneJobRow, type SubjectRow } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import type { Cancels } from "./cancel.js";
import * as L from "./lease-statements.js";
import { fromRunning, keepUpkeep, type Change, type Snap } from "../store/upkeep.js";
import { decideRecovery } from "./policy.js";

export class Recovery {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly store: JobStore,
    private readonly cancels: Cancels,
    /** The version of the code running now: what a lease records when it is taken. */
    readonly version: string,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Recovers running jobs whose lease ran out: a cancel-requested one settles `cancelled`; another is
   * queued again (its attempt given back) while its recovery budget lasts, else settled
   * `interrupted`. Idempotent: a second pass finds nothing. Returns how many it handled.
   */
  recoverExpired(limit = RECOVERY_BATCH): number {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const expired = jobRows(this.sql.exec(L.EXPIRED_LEASES_SQL, now, limit));
      const changes: Change[] = [];
      for (const row of expired) {
        if (row.cancel_requested === 1) {
          this.cancels.settle(row, now);
          continue;
        }
        const decision = decideRecovery(row, now);
        const to = this.store.endState();
        const updated = decision.recover
          ? oneJobRow(this.sql.exec(L.RECOVER_SQL, row.seq, now, decision.count, decision.windowStart, decision.message))
          : oneJobRow(this.sql.exec(L.INTERRUPT_SQL, row.seq, now, to, decision.message, to === "settled" ? now : null));
        changes.push({ old: row, new: updated });
        this.store.emit(updated, "running", now - (row.claimed_at ?? now), now);
      }
      keepUpkeep(this.sql, changes, now);
      return expired.length;
    });
  }

  /**
   * At start-up, before any request: the leases of the lane's own dispatcher, whose executors died
   * with the previous instance. Those taken by another version are given back (queued, the attempt
   * returned, no recovery spent); the rest end now, for `recoverExpired` to recover on the budget.
   */
  afterRestart(): { givenBack: number; expired: number } {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const givenBack = this.sql.exec<SubjectRow & Snap>(L.GIVE_BACK_LANE_LEASES_SQL, now, this.version).toArray();
      keepUpkeep(this.sql, givenBack.map(fromRunning), now);
      for (const row of givenBack) this.store.emit(row, "running", now - (row.claimed_at ?? now), now);
      const expired = this.sql.exec(L.EXPIRE_LANE_LEASES_SQL, now).rowsWritten;
      return { givenBack: givenBack.length, expired };
    });
  }
}
