/**
 * The computed wake: what the rows (reads.ts) and this process's memory ask for now, as the earliest
 * of the terms of terms.ts. The alarm watch (alarm-watch.ts) follows it. Also what a flush of freed slots alone may take
 * for granted about it (`freedKeepsWake`), so that a completion costs no wake computation when it
 * cannot move the wake earlier.
 */
import type { Clock } from "../../shared/clock.js";
import type { Cancels } from "../attempts/cancel.js";
import type { SwitchyardEnv } from "../env.js";
import type { Dispatcher } from "../attempts/dispatcher.js";
import type { OutcomeDelivery } from "../attempts/outcomes.js";
import type { Outbox } from "../deps/outbox.js";
import type { RetentionStore } from "../operator/retention.js";
import type { ScheduleStore } from "../schedules/schedules.js";
import type { LaneSettingsStore } from "../store/settings.js";
import type { AlarmSteps } from "./alarm-steps.js";
import type { AlarmWatch } from "./alarm-watch.js";
import type { WakeReads, WakeRows } from "./reads.js";
import { laneFreeSlots } from "../flow/may-start.js";
import { earliest, wakeTerms } from "./terms.js";

export interface WakeSources {
  readonly clock: Clock;
  readonly settings: LaneSettingsStore;
  readonly reads: WakeReads;
  readonly cancels: Cancels;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  readonly outcomes: OutcomeDelivery<SwitchyardEnv>;
  readonly retention: RetentionStore;
  readonly schedules: ScheduleStore;
  readonly alarmWatch: AlarmWatch;
  /** Claims of pull consumers held in the lane now. */
  heldClaims(): number;
  /** Outcomes are recorded `completing` and delivered to a hook before they settle. */
  readonly deliverOutcomes: boolean;
  /** The notices this lane owes (their next due instant is a term, read from the outbox's own rows). */
  readonly outbox: Outbox;
  /** Whether a settlement here may write notices (a job of the lane has dependents): a freed slot may then move the wake. */
  mayNotify(): boolean;
  /** When the metrics report that waits may go (metrics/reporter.ts; null: none waits). */
  reportDueAt(): number | null;
  /** The alarm's steps that threw: their retry is a term, and their work's terms wait for it. */
  readonly alarmSteps: AlarmSteps;
  /** When the next move of a debounce key's job owed to another shard is due (null: none). */
  keyMoveAt?(): number | null;
  /** The waitpoints' term: a pending one's timeout, a settled one's horizon (null: none; kept in memory, no statement per wake). */
  waitpointAt?(): number | null;
  /** The bulk actions' term: now while one runs, else the removal of the oldest finished one (bulk/bulk-actions.ts; kept in memory). */
  bulkAt?(): number | null;
  /** The dead-letter outbox's term: its earliest due copy (null: none owed; no statement while the lane has no dead-letter lane and owes none). */
  deadLetterAt?(): number | null;
}

export class WakeComputer {
  /** What the last computed wake saw that a freed slot could change: a full lane (no head term), the retention term, a metrics report waiting. */
  private lastSaw: { full: boolean; retention: number | null; report: boolean } = { full: true, retention: null, report: false };

  constructor(private readonly sources: WakeSources) {}

  /** What it reads of the rows. */
  get reads(): WakeReads {
    return this.sources.reads;
  }

  /** The computed wake; `pumped`: right after a pump, every due in-process head with a free slot was claimed, none to look for. */
  compute(pumped = false): number | null {
    const { clock, settings, reads, cancels, dispatcher, outcomes, retention, schedules, alarmWatch } = this.sources;
    const held = dispatcher.heldSlots();
    // Right after a pump no due in-process head was left with a free slot, unless the lane's bucket ran
    // dry first: then due heads wait for its next token, and are looked for.
    const looked = pumped && settings.read().rateLimit === null;
    // Batch kinds have their own term (`batchAt`): a due job of one waits for company, not for now.
    const rows = reads.rows(looked ? [] : dispatcher.singleKinds, dispatcher.busyJobIds(), held);
    const heldCancels = rows.cancels > 0 ? cancels.inProcess().filter((c) => dispatcher.holds(c.id)).length : 0;
    const { concurrency, paused, retention: horizons } = settings.read();
    // The outbox's rows, never whether the lane has registrations: a purge deletes the last of those
    // while the notices it wrote are still owed, and a restarted instance would forget them.
    const partTerms = { retentionPass: retention.nextPass(horizons), nextScheduleFire: schedules.nextFire(), nextNotice: this.sources.outbox.nextAt(), nextKeyMove: this.sources.keyMoveAt?.() ?? null, nextWaitpoint: this.sources.waitpointAt?.() ?? null, nextBulk: this.sources.bulkAt?.() ?? null, nextDeadLetter: this.sources.deadLetterAt?.() ?? null, nextBatch: this.batchAt(rows) };
    const reportDueAt = this.sources.reportDueAt();
    this.lastSaw = { full: !paused && rows.running + held >= concurrency, retention: partTerms.retentionPass, report: reportDueAt !== null };
    const { alarmSteps } = this.sources;
    const memory = { outcomesWaiting: outcomes.waiting(rows.completing), heldCancels, heldClaims: this.sources.heldClaims(), reportDueAt, stepRetryAt: alarmSteps.retryAt() };
    const wake = earliest(alarmSteps.defer(wakeTerms({ ...rows, ...partTerms }, memory, clock.now())));
    alarmWatch.noteWake(wake);
    return wake;
  }

  /**
   * When a batch kind's due jobs start (attempts/dispatcher.ts `batchWakeAt`: `size` due, or the oldest
   * has waited `waitMs`), while the lane has a free slot (terms.ts gates it on the bucket's next token).
   */
  private batchAt(rows: WakeRows): number | null {
    const { dispatcher, settings } = this.sources;
    if (laneFreeSlots(settings.read(), rows.running, dispatcher.heldSlots()) <= 0) return null;
    return dispatcher.batchWakeAt();
  }

  /**
   * Whether a flush after nothing but completions outside any queue (a freed slot) may leave the wake
   * as the last re-arm stored it. Such a completion ends a lease (a later wake) and adds a settled
   * job; it makes the wake earlier only by freeing a slot in a lane that was full (the earliest future
   * head becomes a term), by settling the first job retention keeps an eye on (the retention term
   * appears), by an outcome to deliver (a lane with an outcome hook), or by a metrics report that comes to wait. `leasesTaken`: jobs started
   * at once since the last re-arm, whose leases are earlier terms while any attempt here runs.
   */
  freedKeepsWake(leasesTaken: boolean): boolean {
    const saw = this.lastSaw;
    if (leasesTaken && this.sources.dispatcher.running) return false;
    if (this.sources.mayNotify()) return false;
    // A metrics report came to wait since: its term is new (a report's due instant never moves earlier while it waits).
    if (!saw.report && this.sources.reportDueAt() !== null) return false;
    return !this.sources.deliverOutcomes && !saw.full && (saw.retention !== null || this.sources.settings.read().retention.completedMs === null);
  }
}
