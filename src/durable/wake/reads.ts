/**
 * What the wake reads of the jobs (terms.ts turns it into terms): outcomes to deliver, the earliest
 * lease, running jobs and their cancellations, a due in-process head, the earliest future head.
 * Reads only, each on an index.
 */
import type { Clock } from "../../shared/clock.js";
import { IS_QUEUE_HEAD } from "../attempts/claim-statements.js";
import type { LaneSettingsStore } from "../store/settings.js";

/** How many outcomes wait for delivery and how many jobs run (both kept counts), the earliest lease
 *  expiry and how many in-process cancellations wait, in one statement. */
export const WAKE_STATE_SQL = `SELECT
  (SELECT completing FROM lane_counts WHERE id = 1) AS completing,
  (SELECT MIN(lease_until) FROM jobs WHERE state = 'running') AS lease,
  (SELECT running FROM lane_counts WHERE id = 1) AS running,
  (SELECT COUNT(*) FROM jobs WHERE state = 'running' AND cancel_requested = 1 AND lease_holder = 'lane') AS cancels`;

/** Is a queue head of one in-process kind due now (asked once per kind, on `jobs_kind`). ?1 now, ?2 kind, ?3 job ids excluded (JSON array). */
export const DUE_EXECUTOR_HEAD_SQL = `SELECT 1 FROM jobs j WHERE j.state = 'queued' AND j.kind = ?2 AND j.run_at <= ?1
  AND j.id NOT IN (SELECT value FROM json_each(?3)) AND ${IS_QUEUE_HEAD} LIMIT 1`;

/** The earliest future runAt of a queue head. ?1 now. */
export const EARLIEST_FUTURE_HEAD_SQL = `SELECT j.run_at FROM jobs j WHERE j.state = 'queued' AND j.run_at > ?1 AND ${IS_QUEUE_HEAD}
  ORDER BY j.run_at LIMIT 1`;

/** The wake's statements, with bindings for a plan, for the query-plan test. */
export const WAKE_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the wake: outcomes, earliest lease, running count, cancellations at once", WAKE_STATE_SQL, () => []],
  ["the wake: a due in-process head", DUE_EXECUTOR_HEAD_SQL, (now) => [now, "a", "[]"]],
  ["the wake: earliest future head", EARLIEST_FUTURE_HEAD_SQL, (now) => [now]],
];

/** What the wake reads of the rows (terms.ts turns it into terms). */
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
    const state = this.sql.exec<{ completing: number; lease: number | null; running: number; cancels: number }>(WAKE_STATE_SQL).one();
    const { concurrency, paused } = this.settings.read();
    const rows: WakeRows = { ...state, dueExecutorHead: false, futureHead: null };
    if (paused || state.running + heldSlots >= concurrency) return rows;
    const excluded = JSON.stringify(excludeIds);
    rows.dueExecutorHead = executorKinds.some((kind) => this.sql.exec(DUE_EXECUTOR_HEAD_SQL, now, kind, excluded).toArray().length > 0);
    if (!rows.dueExecutorHead) rows.futureHead = this.sql.exec<{ run_at: number }>(EARLIEST_FUTURE_HEAD_SQL, now).toArray()[0]?.run_at ?? null;
    return rows;
  }
}
