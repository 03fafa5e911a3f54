/**
 * Failing a lane whose downstream is gone for good (docs/api.md `POST /v1/lanes/{lane}/fail`): up to
 * `FAIL_LANE_BATCH` queued and running jobs settle `failed` with the operator's reason in one
 * transaction — running ones first, then queued ones in enqueue order. A completing job finishes its
 * delivery. The lane aborts the in-process attempts of the jobs this settled.
 *
 * A failed job's lease token is cleared, so that its holder hears `job_settled` whatever it says
 * next (with its token still on the row, a repeated `fail` would read as the holder's own). A
 * running job whose cancellation was already requested settles `cancelled`, as that request
 * promised, and is not among the failed.
 */
import type { Clock } from "../../shared/clock.js";
import type { JobState } from "../../shared/job.js";
import type { SubjectRow } from "../store/job-row.js";
import type { StoreOptions } from "../store/job-store.js";
import { keepUpkeep, subjectSnap } from "../store/upkeep.js";
import { RUNNING_TO_FAIL_SQL, QUEUED_TO_FAIL_SQL, FAIL_JOBS_SQL, CANCEL_JOBS_SQL } from "./operator-statements.js";

type Candidate = { seq: number; id: string; cancel_requested: number };

export interface LaneFailed {
  /** Jobs settled `failed`: running ones first, then queued ones, each in enqueue order. */
  failed: string[];
  /** The running jobs this settled, and how: an in-process attempt of one is to be aborted. */
  running: { id: string; outcome: "failed" | "cancelled" }[];
}

export class LaneFailure {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly options: Pick<StoreOptions, "deliverOutcomes" | "transitions">,
  ) {
    this.sql = storage.sql;
  }

  /** Settles at most `limit` queued and running jobs `failed` with `reason`. */
  fail(reason: string, limit: number): LaneFailed {
    const now = this.clock.now();
    const to: JobState = this.options.deliverOutcomes ? "completing" : "settled";
    const settledAt = to === "settled" ? now : null;
    return this.storage.transactionSync(() => {
      const running = this.sql.exec<Candidate>(RUNNING_TO_FAIL_SQL, limit).toArray();
      const queued = running.length < limit ? this.sql.exec<Candidate>(QUEUED_TO_FAIL_SQL, limit - running.length).toArray() : [];
      const cancelling = running.filter((job) => job.cancel_requested === 1);
      const failing = [...running.filter((job) => job.cancel_requested === 0), ...queued];
      const seqs = (jobs: Candidate[]) => JSON.stringify(jobs.map((job) => job.seq));
      const changed = [
        ...(failing.length > 0 ? this.sql.exec<SubjectRow & { blocked: number }>(FAIL_JOBS_SQL, seqs(failing), to, reason, settledAt, now).toArray() : []),
        ...(cancelling.length > 0 ? this.sql.exec<SubjectRow & { blocked: number }>(CANCEL_JOBS_SQL, seqs(cancelling), to, settledAt, now).toArray() : []),
      ];
      const wasRunning = new Set(running.map((job) => job.id));
      keepUpkeep(this.sql, changed.map((row) => {
        const snap = subjectSnap(row, now);
        return { old: { ...snap, state: wasRunning.has(row.id) ? "running" : "queued", outcome: null, blocked: row.blocked }, new: snap };
      }), now);
      const sink = this.options.transitions;
      if (sink?.wanted) {
        for (const row of changed) {
          const from: JobState = wasRunning.has(row.id) ? "running" : "queued";
          sink.record({ job: row, from, to: row.state, durationMs: from === "running" ? now - (row.claimed_at ?? now) : null, at: now });
        }
      }
      return {
        failed: failing.map((job) => job.id),
        running: running.map((job) => ({ id: job.id, outcome: job.cancel_requested === 1 ? ("cancelled" as const) : ("failed" as const) })),
      };
    });
  }
}
