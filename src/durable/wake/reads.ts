/**
 * What the wake reads of the jobs (wake.ts turns it into terms): outcomes to deliver, the earliest
 * lease, running jobs and their cancellations, a due in-process head, the earliest future head. Also
 * the running count a claim asks for. Reads only.
 */
import type { Clock } from "../../shared/clock.js";
import type { LaneSettingsStore } from "../store/settings.js";
import * as Q from "../store/job-statements.js";

/** What the wake reads of the rows (wake.ts turns it into an instant). */
export interface WakeRows {
  completing: number;
  lease: number | null;
  running: number;
  /** Running jobs of the lane's own dispatcher whose cancellation was requested. */
  cancels: number;
  /** A queue head of an in-process kind is due now. */
  dueExecutorHead: boolean;
  /** The earliest future runAt of a queue head. */
  futureHead: number | null;
}

export class WakeReads {
  constructor(
    private readonly sql: SqlStorage,
    private readonly clock: Clock,
    private readonly settings: LaneSettingsStore,
  ) {}

  /** What the wake reads of the rows; `excludeIds` are jobs no in-process executor may start yet. */
  rows(executorKinds: readonly string[], excludeIds: readonly string[], heldSlots: number): WakeRows {
    const now = this.clock.now();
    const state = this.sql.exec<{ completing: number; lease: number | null; running: number; cancels: number }>(Q.WAKE_STATE_SQL).one();
    const { concurrency, paused } = this.settings.read();
    const rows: WakeRows = { ...state, dueExecutorHead: false, futureHead: null };
    if (paused || state.running + heldSlots >= concurrency) return rows;
    const excluded = JSON.stringify(excludeIds);
    rows.dueExecutorHead = executorKinds.some((kind) => this.sql.exec(Q.DUE_EXECUTOR_HEAD_SQL, now, kind, excluded).toArray().length > 0);
    if (!rows.dueExecutorHead) rows.futureHead = this.sql.exec<{ run_at: number }>(Q.EARLIEST_FUTURE_HEAD_SQL, now).toArray()[0]?.run_at ?? null;
    return rows;
  }

  /** How many jobs run: the kept count, one row read. */
  runningCount(): number {
    return this.sql.exec<{ n: number }>(Q.RUNNING_COUNT_SQL).one().n;
  }

  /** Running jobs of the lane's own dispatcher whose cancellation was requested: id and the token that holds it. */
  laneCancels(): { id: string; token: string }[] {
    return this.sql.exec<{ id: string; lease_token: string }>(Q.LANE_CANCELS_SQL).toArray().map((r) => ({ id: r.id, token: r.lease_token }));
  }
}
