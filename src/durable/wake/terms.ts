/**
 * The terms of a lane's one wake, each an instant or nothing: what the alarm must wake for. The
 * computed wake is the earliest of them (compute.ts reads them; wake.ts keeps the stored alarm no
 * later than it).
 */
import type { WakeRows } from "./reads.js";

/** Every term of the wake; each is an instant (now, or later) or null (nothing to do for it). */
export interface WakeTerms {
  /** An outcome recorded that the lane can take in hand for delivery: now. */
  undelivered: number | null;
  /** The earliest lease expiry of a running job: its recovery. */
  leaseExpiry: number | null;
  /** A cancellation of an in-process job whose attempt this process does not hold: now, to wind it up. */
  cancelWindUp: number | null;
  /**
   * A claimable queue head (not paused, a free slot): now when one is due for an in-process executor,
   * else the earliest future head's runAt; never before the lane's bucket has a token again.
   */
  claimableHead: number | null;
  /** The lane's bucket gains a token while claims wait for one (held claims of pull consumers). */
  heldClaims: number | null;
  /**
   * A batch kind's due jobs start (attempts/batch-starts.ts): now once `size` are due, else when the
   * oldest due one has waited `waitMs`; while the lane has a free slot, and never before its bucket
   * has a token again.
   */
  batch: number | null;
  /** A rate-limited queue with waiting jobs gains its next token. */
  queueToken: number | null;
  /** The earliest expiry of a queued job not yet started: now once due (a bounded batch per alarm). */
  expiry: number | null;
  /**
   * The next retention pass (operator/retention.ts): now while settled jobs past their horizon remain (one
   * bounded batch per alarm), else the next horizon plus a little slack.
   */
  retention: number | null;
  /** The next notice the outbox owes another job (deps/outbox.ts): now once due. */
  outbox: number | null;
  /**
   * The next fire of an unpaused schedule (schedules/schedules.ts). Past when the lane missed it (it could not
   * run): the alarm then fires at once, and the missed fires collapse to the latest. A lane's own
   * pause does not stop its schedules: they enqueue, the lane starts nothing new.
   */
  scheduleFire: number | null;
  /**
   * The lane's next metrics report to the registry (metrics/reporter.ts): while a change waits to be
   * reported, a second after the last report (later while reports fail). Never while none waits.
   */
  metricsReport: number | null;
  /** The next move of a debounce key's job that this shard owes another (shards/key-moves.ts): now once due. */
  keyMove: number | null;
  /** A step of the alarm that threw is tried again (wake/alarm-steps.ts): its backoff's end. */
  stepRetry: number | null;
  /** The earliest timeout of a pending waitpoint, or a settled one past its horizon (waitpoints/waitpoints.ts): now once due. */
  waitpoints: number | null;
  /** A bulk action's next chunk (now while one runs), or the removal of a finished one past its keeping (bulk/bulk-actions.ts). */
  bulk: number | null;
  /** The next copy the lane owes a dead-letter lane (deadletters/outbox.ts): now once due. */
  deadLetters: number | null;
}

/**
 * What the terms are computed from: the jobs' rows (reads.ts), the next retention pass
 * (operator/retention.ts) and the next schedule fire (`ScheduleStore.nextFire`), each from one indexed query.
 */
export type WakeInputs = WakeRows & { retentionPass: number | null; nextScheduleFire: number | null; nextNotice: number | null; nextKeyMove?: number | null; nextWaitpoint?: number | null; nextBulk?: number | null; nextDeadLetter?: number | null; nextBatch?: number | null };

/** What the lane itself holds in memory that the rows cannot say. */
export interface WakeMemory {
  /** Whether recorded outcomes wait that this process can take in hand now (attempts/outcomes.ts). */
  outcomesWaiting: boolean;
  /** In-process cancellations whose attempts this process holds (their wind-up is under way). */
  heldCancels: number;
  /** Claims of pull consumers held in the lane (waiting for a job they may take). */
  heldClaims: number;
  /** When the metrics report that waits may go (null: none waits). */
  reportDueAt: number | null;
  /** When the first alarm step that threw is tried again (null: none threw). */
  stepRetryAt: number | null;
}

export function wakeTerms(rows: WakeInputs, memory: WakeMemory, now: number): WakeTerms {
  return {
    undelivered: memory.outcomesWaiting ? now : null,
    leaseExpiry: rows.lease,
    cancelWindUp: rows.cancels > memory.heldCancels ? now : null,
    claimableHead: rows.dueExecutorHead ? (rows.laneToken ?? now) : later(rows.futureHead, rows.laneToken),
    heldClaims: memory.heldClaims > 0 ? rows.laneToken : null,
    batch: later(rows.nextBatch ?? null, rows.laneToken),
    queueToken: rows.queueToken,
    expiry: rows.expiry === null ? null : Math.max(now, rows.expiry),
    retention: rows.retentionPass,
    outbox: rows.nextNotice === null ? null : Math.max(now, rows.nextNotice),
    scheduleFire: rows.nextScheduleFire,
    metricsReport: memory.reportDueAt === null ? null : Math.max(now, memory.reportDueAt),
    keyMove: rows.nextKeyMove == null ? null : Math.max(now, rows.nextKeyMove),
    stepRetry: memory.stepRetryAt === null ? null : Math.max(now, memory.stepRetryAt),
    waitpoints: rows.nextWaitpoint == null ? null : Math.max(now, rows.nextWaitpoint),
    bulk: rows.nextBulk == null ? null : Math.max(now, rows.nextBulk),
    deadLetters: rows.nextDeadLetter == null ? null : Math.max(now, rows.nextDeadLetter),
  };
}

/** The later of an instant and a gate on it (null gate: none); null when there is no instant. */
function later(at: number | null, gate: number | null): number | null {
  return at === null ? null : gate === null ? at : Math.max(at, gate);
}

/** The computed wake: the earliest term, or null when no term asks for one. */
export function earliest(terms: WakeTerms): number | null {
  let wake: number | null = null;
  for (const at of Object.values(terms) as (number | null)[]) if (at !== null && (wake === null || at < wake)) wake = at;
  return wake;
}

