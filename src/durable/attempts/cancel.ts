/**
 * Cancellation (the intent of a running job's cancel): a queued job settles `cancelled` at once; a
 * running one is marked, and settles `cancelled` when its attempt winds up, its holder next speaks
 * through the fence, or its lease expires — whichever comes first.
 */
import type { Clock } from "../../shared/clock.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { oneJobRow, stateOf, toJob, type JobRow } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import * as L from "./lease-statements.js";
import { keepUpkeep } from "../store/upkeep.js";

export type CancelAnswer = { status: "cancelled" | "cancelling"; job: Job };

export class Cancels {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly store: JobStore,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Cancels a job: settled now when queued, asked of its attempt when running (202 `cancelling`).
   * `onlyIfQueued`: a job that has started (running or completing) is refused `job_running`, unchanged.
   */
  cancel(id: string, reason: string | null, onlyIfQueued = false): Result<CancelAnswer> {
    const now = this.clock.now();
    const row = this.store.row(id);
    if (!row) return fail("job_not_found", `no job ${id} in this lane`);
    if (onlyIfQueued && (row.state === "running" || row.state === "completing")) {
      return fail("job_running", `job ${id} has started (${row.state}); onlyIfQueued leaves it be`);
    }
    switch (row.state) {
      case "queued":
        return ok({ status: "cancelled", job: this.settle(row, now, reason) });
      case "running": {
        if (row.cancel_requested === 1) return ok({ status: "cancelling", job: toJob(row, this.store.lane) });
        const updated = oneJobRow(this.sql.exec(L.REQUEST_CANCEL_SQL, row.seq, reason, now));
        return ok({ status: "cancelling", job: toJob(updated, this.store.lane) });
      }
      default:
        if (row.outcome === "cancelled") return ok({ status: "cancelled", job: toJob(row, this.store.lane) });
        return fail("job_settled", `job ${id} is already settled (${row.outcome})`);
    }
  }

  /** Settles a queued or running job `cancelled` (running: its attempt is over). */
  settle(row: JobRow, now: number, reason: string | null = null): Job {
    const to = this.store.endState();
    const updated = oneJobRow(this.sql.exec(L.SETTLE_CANCELLED_SQL, row.seq, row.state, to, reason, to === "settled" ? now : null, now));
    keepUpkeep(this.sql, [{ old: row, new: updated }], now);
    this.store.emit(updated, stateOf(row), row.state === "running" ? now - (row.claimed_at ?? now) : null, now);
    return toJob(updated, this.store.lane);
  }

  /**
   * Settles `cancelled` the running job whose cancellation was requested, if `token` still holds it
   * (null: it does not): the wind-up of an aborted in-process attempt, or of one whose executor is
   * gone (the alarm).
   */
  settleAttempt(id: string, token: string): Job | null {
    const row = this.store.row(id);
    if (!row || row.state !== "running" || row.lease_token !== token || row.cancel_requested !== 1) return null;
    return this.settle(row, this.clock.now());
  }

  /** Running jobs of the lane's own dispatcher whose cancellation was requested: id and the token that holds it. */
  inProcess(): { id: string; token: string }[] {
    return this.sql.exec<{ id: string; lease_token: string }>(L.LANE_CANCELS_SQL).toArray().map((r) => ({ id: r.id, token: r.lease_token }));
  }
}
