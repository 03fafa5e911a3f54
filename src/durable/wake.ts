/**
 * The lane's wake, in one place (DESIGN.md "One alarm per lane"): the terms it is computed from, the
 * coalesced flush that follows every transition, and the re-arm of the one stored alarm.
 *
 * The stored alarm is what the platform will fire (`armedAt` remembers it); the computed wake is
 * what the rows ask for now. After every flush they are made equal. Invariant (tested by a property
 * test): whenever the lane holds work that is due or will be, the stored alarm exists and is no
 * later than the computed wake.
 */
import type { WakeRows } from "./lane-store.js";

/** Every term of the wake; each is an instant (now, or later) or null (nothing to do for it). */
export interface WakeTerms {
  /** An outcome recorded and not in hand for delivery: now. */
  undelivered: number | null;
  /** The earliest lease expiry of a running job: its recovery. */
  leaseExpiry: number | null;
  /** A cancellation of an in-process job whose attempt this process does not hold: now, to wind it up. */
  cancelWindUp: number | null;
  /**
   * A claimable queue head (not paused, a free slot): now when one is due for an in-process executor,
   * else the earliest future head's runAt.
   */
  claimableHead: number | null;
  /**
   * The next fire of an unpaused schedule (schedules.ts). Past when the lane missed it (it could not
   * run): the alarm then fires at once, and the missed fires collapse to the latest. A lane's own
   * pause does not stop its schedules: they enqueue, the lane starts nothing new.
   */
  scheduleFire: number | null;
}

/** What the rooms beside the jobs table say, each from one indexed query of its own store. */
export interface RoomRows {
  /** The earliest `next_run_at` of the schedules (`ScheduleStore.nextFire`). */
  nextScheduleFire: number | null;
}

/** What the lane itself holds in memory that the rows cannot say. */
export interface WakeMemory {
  /** Outcomes this process is delivering right now. */
  delivering: number;
  /** In-process cancellations whose attempts this process holds (their wind-up is under way). */
  heldCancels: number;
}

export function wakeTerms(rows: WakeRows & RoomRows, memory: WakeMemory, now: number): WakeTerms {
  return {
    undelivered: rows.completing > memory.delivering ? now : null,
    leaseExpiry: rows.lease,
    cancelWindUp: rows.cancels > memory.heldCancels ? now : null,
    claimableHead: rows.dueExecutorHead ? now : rows.futureHead,
    scheduleFire: rows.nextScheduleFire,
  };
}

/** The computed wake: the earliest term, or null when no term asks for one. */
export function earliest(terms: WakeTerms): number | null {
  let wake: number | null = null;
  for (const at of Object.values(terms) as (number | null)[]) if (at !== null && (wake === null || at < wake)) wake = at;
  return wake;
}

export interface WakeHost {
  /** The computed wake, from the rows and the lane's memory. */
  computeWake(): number | null;
  /** What a flush does before the re-arm: write the turn's completions, start due jobs (when `pump`), deliver outcomes. */
  flushSteps(pump: boolean): void;
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
  /** A flush or an alarm write failed. */
  failed(what: "flush" | "alarm", error: unknown): void;
}

/**
 * Transitions of one turn share one flush: the first `afterChange` queues it as a microtask, the rest
 * join it. The flush re-arms the alarm only when the computed wake differs from the stored alarm.
 */
export class Wake {
  /** The alarm as last written (undefined: unknown, read it again before trusting it). */
  private armedAt: number | null | undefined = undefined;
  private flushPending = false;
  /** Whether the pending flush should look for jobs to start (not after enqueueing pull-only kinds). */
  private pumpWanted = false;

  constructor(private readonly host: WakeHost) {}

  /** The stored alarm as this object knows it; undefined when unknown. */
  get storedAlarm(): number | null | undefined {
    return this.armedAt;
  }

  /** Learns the stored alarm (at start-up) or forgets it (a test swapped the clock). */
  know(alarm: number | null | undefined): void {
    this.armedAt = alarm;
  }

  /** An alarm that runs is consumed: nothing is stored until the flush writes the next one. */
  consumed(): void {
    this.armedAt = null;
  }

  /** After a transition: flush once the current turn is over. `pump`: look for jobs to start. */
  afterChange(pump = true): void {
    this.pumpWanted ||= pump;
    if (this.flushPending) return;
    this.flushPending = true;
    queueMicrotask(() => {
      if (!this.flushPending) return;
      try {
        this.flush();
      } catch (error) {
        this.flushPending = false;
        this.host.failed("flush", error);
      }
    });
  }

  /** Flushes now (start-up, the alarm: within the handler, or an alarm set after it could be taken for consumed). */
  flush(): void {
    this.flushPending = false;
    const pump = this.pumpWanted;
    this.pumpWanted = false;
    this.host.flushSteps(pump);
    this.rearm();
  }

  /** Makes the stored alarm the computed wake (a no-op when they agree). */
  rearm(): void {
    const wake = this.host.computeWake();
    if (wake === this.armedAt) return;
    this.armedAt = wake;
    const write = wake === null ? this.host.deleteAlarm() : this.host.setAlarm(wake);
    write.catch((error: unknown) => {
      this.armedAt = undefined; // unknown now: the next flush writes it again
      this.host.failed("alarm", error);
    });
  }
}
