/**
 * What the wake reads of the jobs (terms.ts turns it into terms): outcomes to deliver, the earliest
 * lease, running jobs and their cancellations, a due in-process head, the earliest future head, the
 * next expiry, and when a rate-limited queue with waiting jobs gets its next token (flow/queue-statements.ts).
 * The lane's own bucket is read from its settings. Reads only, each on an index. What may start now is
 * flow/may-start.ts's, as the claim's is: a due head named here is one the claim takes.
 */
import { nextTokenAt, tokensAt } from "../flow/bucket.js";
import type { Clock } from "../../shared/clock.js";
import { IS_CLAIMABLE, laneFreeSlots } from "../flow/may-start.js";
import { QUEUE_NEXT_TOKEN_SQL } from "../flow/queue-statements.js";
import { BLOCKED_RUN_AT } from "../../shared/defaults.js";
import type { LaneSettingsStore } from "../store/settings.js";

/** How many outcomes wait for delivery and how many jobs run (both kept counts), the earliest lease
 *  expiry and how many in-process cancellations wait, in one statement. */
export const WAKE_STATE_SQL = `SELECT
  (SELECT completing FROM lane_counts WHERE id = 1) AS completing,
  (SELECT MIN(lease_until) FROM jobs WHERE state = 'running') AS lease,
  (SELECT running FROM lane_counts WHERE id = 1) AS running,
  (SELECT COUNT(*) FROM jobs WHERE state = 'running' AND cancel_requested = 1 AND lease_holder = 'lane') AS cancels,
  (SELECT MIN(expires_at) FROM jobs WHERE state = 'queued' AND generation = 0 AND expires_at IS NOT NULL) AS expiry`;

/** Is a job of one in-process kind claimable now (asked once per kind, on `jobs_kind`). ?1 now, ?2 kind, ?3 job ids excluded (JSON array). */
export const DUE_EXECUTOR_HEAD_SQL = `SELECT 1 FROM jobs j WHERE j.state = 'queued' AND j.kind = ?2 AND j.run_at <= ?1
  AND j.id NOT IN (SELECT value FROM json_each(?3)) AND ${IS_CLAIMABLE} LIMIT 1`;

/** The earliest future runAt of a job that will be claimable then, as things stand (a blocked job has none). ?1 now. */
export const EARLIEST_FUTURE_HEAD_SQL = `SELECT j.run_at FROM jobs j WHERE j.state = 'queued' AND j.run_at > ?1 AND j.run_at < ${BLOCKED_RUN_AT}
  AND ${IS_CLAIMABLE} ORDER BY j.run_at LIMIT 1`;

/** The wake's statements, with bindings for a plan, for the query-plan test. */
export const WAKE_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the wake: outcomes, earliest lease, running count, cancellations, expiry at once", WAKE_STATE_SQL, () => []],
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
  /** The earliest expiry of a queued job not yet started. */
  expiry: number | null;
  /** When the lane's bucket, empty now, gains its next token (null: not rate limited, or tokens left). */
  laneToken: number | null;
  /** When the first rate-limited queue with waiting jobs and an empty bucket gains a token. */
  queueToken: number | null;
}

export class WakeReads {
  constructor(
    private readonly sql: SqlStorage,
    private readonly clock: Clock,
    private readonly settings: LaneSettingsStore,
    /** Whether any queue of the lane is rate limited (nothing to read for their tokens otherwise). */
    private readonly queuesLimited: () => boolean,
  ) {}

  /** What the wake reads of the rows; `excludeIds` are jobs no in-process executor may start yet. */
  rows(executorKinds: readonly string[], excludeIds: readonly string[], heldSlots: number): WakeRows {
    const now = this.clock.now();
    const state = this.sql.exec<{ completing: number; lease: number | null; running: number; cancels: number; expiry: number | null }>(WAKE_STATE_SQL).one();
    const { concurrency, paused, rateLimit, bucket } = this.settings.read();
    const rows: WakeRows = { ...state, dueExecutorHead: false, futureHead: null, laneToken: null, queueToken: null };
    if (laneFreeSlots({ concurrency, paused }, state.running, heldSlots) <= 0) return rows;
    if (rateLimit && tokensAt(rateLimit, bucket, now) < 1) rows.laneToken = nextTokenAt(rateLimit, bucket, now);
    if (this.queuesLimited()) rows.queueToken = this.sql.exec<{ at: number | null }>(QUEUE_NEXT_TOKEN_SQL, now).one().at;
    const excluded = JSON.stringify(excludeIds);
    rows.dueExecutorHead = executorKinds.some((kind) => this.sql.exec(DUE_EXECUTOR_HEAD_SQL, now, kind, excluded).toArray().length > 0);
    if (!rows.dueExecutorHead) rows.futureHead = this.sql.exec<{ run_at: number }>(EARLIEST_FUTURE_HEAD_SQL, now).toArray()[0]?.run_at ?? null;
    return rows;
  }
}
