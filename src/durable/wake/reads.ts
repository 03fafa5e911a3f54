/**
 * What the wake reads of the jobs (terms.ts turns it into terms): outcomes to deliver, the earliest
 * lease, running jobs and their cancellations, a due in-process head, the earliest future head, the
 * next expiry, and when a rate-limited queue with waiting jobs gets its next token (flow/queue-statements.ts).
 * The lane's own bucket is read from its settings. Reads only, each on an index. What may start now is
 * flow/may-start.ts's, as the claim's is: a due head named here is one the claim takes.
 */
import { nextTokenAt, tokensAt } from "../flow/bucket.js";
import type { Clock } from "../../shared/clock.js";
import { laneFreeSlots } from "../flow/may-start.js";
import { QUEUE_NEXT_TOKEN_SQL } from "../flow/queue-statements.js";
import type { LaneSettingsStore } from "../store/settings.js";
import { WAKE_STATE_SQL, DUE_EXECUTOR_HEAD_SQL, EARLIEST_FUTURE_HEAD_SQL } from "./wake-statements.js";


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
