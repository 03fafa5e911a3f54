/**
 * Retention (docs/api.md "The lane"): settled jobs past their lane's horizon — `completedMs` after they
 * settled for completed jobs, `failedMs` for failed, cancelled and interrupted ones, null keeping
 * them — are deleted by the alarm, at most `RETENTION_BATCH` per alarm. While expired jobs remain, the
 * retention wake term is now, so the alarm comes back at once, and requests and jobs are served
 * between two passes; once none remain, it is the next horizon (plus a little slack, so that jobs
 * expiring together go in one pass). Sweep is the same walk with one horizon for every outcome.
 */
import type { Clock } from "../../shared/clock.js";
import { RETENTION_BATCH, RETENTION_SLACK_MS } from "../../shared/defaults.js";
import { OUTCOMES, type Outcome, type Retention } from "../../shared/job.js";
import { deleteJobs, type DeletedJob } from "../store/deletion.js";
import * as O from "./operator-statements.js";

type Cutoffs = [completed: number | null, failed: number | null, cancelled: number | null, interrupted: number | null];

/** The cutoff of each outcome at `now`: a job settled before it has passed its horizon. */
export function cutoffs(retention: Retention, now: number): Cutoffs {
  const cut = (ms: number | null) => (ms === null ? null : now - ms);
  const failed = cut(retention.failedMs);
  return [cut(retention.completedMs), failed, failed, failed];
}

/**
 * The retention wake term, from the instant the first settled job passes its horizon (null: never):
 * that instant plus the slack, or now once that has passed. The term never moves earlier as time
 * passes without a change (it did: "now" the moment the horizon passed, earlier than the alarm the
 * last change had stored for the horizon plus the slack).
 */
export function retentionWake(firstExpiry: number | null, now: number): number | null {
  if (firstExpiry === null) return null;
  return Math.max(now, firstExpiry + RETENTION_SLACK_MS);
}

export class RetentionStore {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
  ) {
    this.sql = storage.sql;
  }

  /** One retention pass: deletes at most `limit` jobs past their horizon, oldest first; answers how many. */
  pass(retention: Retention, limit = RETENTION_BATCH): number {
    return this.deleteSettled(cutoffs(retention, this.clock.now()), limit);
  }

  /** Sweep: deletes at most `limit` settled jobs settled before `before`, oldest first, whatever their outcome. */
  sweep(before: number, limit: number): number {
    return this.deleteSettled([before, before, before, before], limit);
  }

  /** The retention wake term (wake.ts): one statement on `jobs_settled_by_outcome`. */
  nextPass(retention: Retention): number | null {
    const oldestOf = this.sql.exec<Record<Outcome, number | null>>(O.OLDEST_SETTLED_SQL).one();
    let first: number | null = null;
    for (const outcome of OUTCOMES) {
      const ms = outcome === "completed" ? retention.completedMs : retention.failedMs;
      const settledAt = oldestOf[outcome];
      if (settledAt !== null && ms !== null) first = Math.min(first ?? Infinity, settledAt + ms);
    }
    return retentionWake(first, this.clock.now());
  }

  private deleteSettled(cutoff: Cutoffs, limit: number): number {
    return this.storage.transactionSync(() => deleteJobs(this.sql, this.sql.exec<DeletedJob>(O.EXPIRED_SQL, ...cutoff, limit).toArray()));
  }
}
