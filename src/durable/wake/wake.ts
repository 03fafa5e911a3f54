/**
 * The lane's one alarm: the coalesced flush that follows every transition, and the re-arm of the one
 * stored alarm to the computed wake (compute.ts, from the terms of terms.ts).
 *
 * The stored alarm is what the platform will fire (`armedAt` remembers it); the computed wake is
 * what the rows ask for now. Invariant (tested by a property test): whenever the lane holds work that
 * is due or will be, the stored alarm exists and is no later than the computed wake. The re-arm
 * keeps exactly that and no more: it writes the alarm only when the wake is earlier than the stored
 * alarm (or none is stored). An alarm earlier than needed is harmless — it fires, finds nothing due,
 * and the flush that ends it stores the wake of that moment — while moving it later on every claim
 * (each lease expires a little later than the last) would cost an alarm write per job.
 *
 * "Stored" must mean "will run": the platform can hold an alarm it never scheduled (a kill between
 * its commit and its hand-over to the scheduler), which then stays in the past forever. So an alarm
 * believed stored that is overdue by more than `ALARM_OVERDUE_GRACE_MS` (an alarm that runs is
 * consumed first) is taken for lost and written again, whether the belief came from storage (start-up,
 * the cron's check of lost alarms) or from the last write.
 */
import { ALARM_OVERDUE_GRACE_MS } from "../../shared/defaults.js";

export interface WakeHost {
  /** The computed wake, from the rows and the lane's memory; `pumped`: no due in-process head can have a free slot. */
  computeWake(pumped: boolean): number | null;
  /**
   * What a flush does before the re-arm: write the turn's completions, start due jobs (`pump`: "full"
   * reads again; "freed", only a slot came free: reads only if the last pump left jobs waiting), deliver outcomes.
   */
  flushSteps(pump: Pump): void;
  /** A transition may have made a job claimable: whatever the dispatcher knew of due jobs is stale. */
  lookAgain(): void;
  /**
   * After a flush of freed slots only: whether the stored alarm is still no later than the wake (no
   * re-arm). `leasesTaken`: jobs were also started at once since, whose leases are terms while they run.
   */
  freedKeepsWake(leasesTaken: boolean): boolean;
  setAlarm(at: number): Promise<void>;
  /** A flush or an alarm write failed. */
  failed(what: "flush" | "alarm", error: unknown): void;
  now(): number;
  /** The alarm believed stored was overdue (`ALARM_OVERDUE_GRACE_MS`) and had not run: lost, written again at `wakeAt`. */
  lost(alarmWas: number, wakeAt: number): void;
}

/** What a flush's pump does: nothing, read again ("full"), or read only if jobs were left waiting ("freed"). */
export type Pump = "none" | "freed" | "full";

/**
 * Transitions of one turn share one flush: the first `afterChange` queues it as a microtask, the rest
 * join it. The flush re-arms the alarm only when the computed wake differs from the stored alarm.
 */
export class Wake {
  /** The alarm as last written (undefined: unknown, read it again before trusting it). */
  private armedAt: number | null | undefined = undefined;
  /**
   * When this object wrote the alarm it believes stored (null: it learned it from storage). An alarm
   * written for an instant already past runs at once: it is overdue only a grace after its writing.
   */
  private armedWrittenAt: number | null = null;
  private flushPending = false;
  /** Whether the pending flush should look for jobs to start (not after enqueueing pull-only kinds). */
  private pumpWanted: Pump = "none";

  constructor(private readonly host: WakeHost) {}

  /** The stored alarm as this object knows it; undefined when unknown. */
  get storedAlarm(): number | null | undefined {
    return this.armedAt;
  }

  /**
   * The wake as the last re-arm computed it (undefined: none yet). Every transition re-arms before the
   * next event, so between events this is the wake of the rows as they are — but for jobs started at
   * once since, which only add leases. While a slot is free it is no later than the earliest future
   * head: when it is still ahead, no queued job has fallen due since.
   */
  get lastComputed(): number | null | undefined {
    return this.computed;
  }

  private computed: number | null | undefined = undefined;

  /** Learns the stored alarm (at start-up) or forgets it (a test swapped the clock). */
  know(alarm: number | null | undefined): void {
    if (alarm !== this.armedAt) this.armedWrittenAt = null; // the cron's check finds the alarm this object wrote: still its own
    this.armedAt = alarm;
  }

  /** An alarm that runs is consumed: nothing is stored until the flush writes the next one. */
  consumed(): void {
    this.armedAt = null;
  }

  /**
   * After a transition: flush once the current turn is over. `pump`: look for jobs to start; "freed":
   * the transition only freed a slot (a job outside any queue completed), so that the pump reads only
   * when the last one left jobs waiting.
   */
  afterChange(pump: boolean | "freed" = true): void {
    if (pump !== "freed") this.sinceRearm = "more";
    this.flushSoon(pump);
  }

  /** Queues the turn's one flush (see `afterChange`). */
  private flushSoon(pump: boolean | "freed"): void {
    if (pump === true) {
      this.pumpWanted = "full";
      this.host.lookAgain();
    } else if (pump === "freed" && this.pumpWanted === "none") this.pumpWanted = "freed";
    if (this.flushPending) return;
    this.flushPending = true;
    queueMicrotask(() => {
      if (!this.flushPending) return;
      try {
        // Since the last re-arm, freed slots only (and leases taken at once, which the host weighs), the
        // alarm known, and the host knows they move the wake no earlier: nothing to re-arm. Any other
        // change since (a flush whose re-arm gave way to this one: a batch's) re-arms.
        const pump = this.flushSteps();
        if (pump === "freed" && this.sinceRearm !== "more" && this.armedAt !== undefined && !this.lostBelief() && this.host.freedKeepsWake(this.sinceRearm === "leases")) {
          this.pumped = false; // kept for a re-arm right after a pump only
          return;
        }
        // The re-arm waits one more microtask: an executor that answers at once (its promise already
        // settled) reports in between, and its flush re-arms for both — one wake computation, not two.
        queueMicrotask(() => {
          if (this.flushPending) return;
          try {
            this.rearm(true);
          } catch (error) {
            this.host.failed("flush", error);
          }
        });
      } catch (error) {
        this.flushPending = false;
        this.host.failed("flush", error);
      }
    });
  }

  /** Flushes now (start-up, the alarm: within the handler, or an alarm set after it could be taken for consumed). */
  flush(): void {
    this.flushSteps();
    this.rearm(false);
  }

  private flushSteps(): Pump {
    this.flushPending = false;
    const pump = this.pumpWanted;
    this.pumpWanted = "none";
    this.host.flushSteps(pump);
    // A "freed" pump that did not read found the dispatcher caught up: no due head waits either way.
    this.pumped ||= pump !== "none";
    return pump;
  }

  /**
   * A job started at once, its lease running until `until` (lane.ts): the only term it adds
   * is that lease's expiry, so the stored alarm needs no change when it comes no later; otherwise (no
   * alarm, or unknown) a flush re-arms as after any transition.
   */
  leaseTaken(until: number): void {
    if (this.armedAt !== undefined && this.armedAt !== null && this.armedAt <= until && !this.overdue(this.armedAt)) return;
    if (this.sinceRearm === "nothing") this.sinceRearm = "leases";
    this.flushSoon(false);
  }

  /** Whether a pump ran since the last re-arm: then no due in-process head has a free slot left. */
  private pumped = false;

  /**
   * What changed since the last re-arm besides freed slots: nothing, leases taken by jobs started at
   * once (a term only while their attempt lives), or more — then the next flush re-arms, whatever it flushes.
   */
  private sinceRearm: "nothing" | "leases" | "more" = "more";

  /**
   * Makes the stored alarm no later than the computed wake (a no-op when it already is, and is not
   * overdue); true when it wrote. `afterPump`: a flush just started every due in-process job it could,
   * so the wake need not look for one.
   */
  rearm(afterPump: boolean): boolean {
    const wake = this.host.computeWake(afterPump && this.pumped);
    this.computed = wake;
    this.pumped = false;
    this.sinceRearm = "nothing";
    const armed = this.armedAt;
    if (wake === null || (armed !== null && armed !== undefined && armed <= wake && !this.overdue(armed))) return false;
    if (armed !== null && armed !== undefined && armed <= wake) this.host.lost(armed, wake);
    this.write(wake);
    return true;
  }

  /**
   * Makes the stored alarm no later than `at`, without computing the wake: what the alarm falls back on
   * when its flush threw, so that it comes back for the step that failed.
   */
  armNoLaterThan(at: number): void {
    const armed = this.armedAt;
    if (armed !== null && armed !== undefined && armed <= at && !this.overdue(armed)) return;
    this.write(at);
  }

  /** Whether the alarm believed stored is overdue (then a flush re-arms, whatever changed). */
  private lostBelief(): boolean {
    return this.armedAt !== null && this.armedAt !== undefined && this.overdue(this.armedAt);
  }

  /** Whether the alarm believed stored, for `at`, should have run by now: past by more than the grace (since its writing, when written here). */
  private overdue(at: number): boolean {
    return Math.max(at, this.armedWrittenAt ?? at) < this.host.now() - ALARM_OVERDUE_GRACE_MS;
  }

  private write(at: number): void {
    this.armedAt = at;
    this.armedWrittenAt = this.host.now();
    const write = this.host.setAlarm(at);
    write.catch((error: unknown) => {
      this.armedAt = undefined; // unknown now: the next flush writes it again
      this.host.failed("alarm", error);
    });
  }
}
