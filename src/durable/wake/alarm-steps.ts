/**
 * The alarm's steps, each on its own (DESIGN.md "The alarm and the upkeep"): a step that throws is
 * logged and left out of the alarms that follow until its backoff has passed (from
 * `ALARM_STEP_BACKOFF_BASE_MS`, doubling per failure, capped), while every other step still runs. Its
 * retry instant is a wake term, so that the alarm comes back for it; and the terms of the work it
 * does wait for that instant too, or a term already due (a schedule's missed fire, say) would make
 * the alarm fire at once, again and again, for a step that is not run. Kept in memory: a new
 * instance tries every step at once.
 */
import { backoffCeilingMs } from "../../shared/backoff.js";
import { ALARM_STEP_BACKOFF_BASE_MS, ALARM_STEP_BACKOFF_MAX_MS } from "../../shared/defaults.js";
import type { Clock } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import { log, type AlarmStep } from "../../shared/log.js";
import type { WakeTerms } from "./terms.js";

/** The wake terms of the work each step does (a step with none is brought back by its retry term alone). */
const TERMS_OF: Record<AlarmStep, readonly (keyof WakeTerms)[]> = {
  fires: ["scheduleFire"],
  recovery: ["leaseExpiry"],
  reconcile: [],
  windUp: ["cancelWindUp"],
  expiry: ["expiry"],
  undeliverable: [],
  retention: ["retention"],
  outbox: ["outbox"],
  housekeeping: [],
  flush: ["claimableHead", "batch", "heldClaims", "queueToken", "undelivered", "metricsReport"],
  sent: [],
  keyMoves: ["keyMove"],
  waitpoints: ["waitpoints"],
  bulk: ["bulk"],
  deadLetters: ["deadLetters"],
};

type Failing = { failures: number; retryAt: number };

export class AlarmSteps {
  private readonly failing = new Map<AlarmStep, Failing>();

  constructor(
    private readonly lane: string,
    private readonly clock: Clock,
  ) {}

  /** Runs `work` unless its step waits out a backoff; a throw is logged and answered undefined. */
  run<T>(step: AlarmStep, work: () => T): T | undefined {
    if (this.waiting(step)) return undefined;
    try {
      const value = work();
      this.failing.delete(step);
      return value;
    } catch (error) {
      this.failed(step, error);
      return undefined;
    }
  }

  /** `run` for a step that awaits. */
  async runAsync<T>(step: AlarmStep, work: () => Promise<T>): Promise<T | undefined> {
    if (this.waiting(step)) return undefined;
    try {
      const value = await work();
      this.failing.delete(step);
      return value;
    } catch (error) {
      this.failed(step, error);
      return undefined;
    }
  }

  /** The earliest retry of a failed step (null: none failed); a wake term. */
  retryAt(): number | null {
    let at: number | null = null;
    for (const { retryAt } of this.failing.values()) if (at === null || retryAt < at) at = retryAt;
    return at;
  }

  /** The terms with those of steps waiting out a backoff moved to their retry. */
  defer(terms: WakeTerms): WakeTerms {
    if (this.failing.size === 0) return terms;
    const deferred = { ...terms };
    for (const [step, { retryAt }] of this.failing) {
      for (const term of TERMS_OF[step]) {
        const at = deferred[term];
        if (at !== null && at < retryAt) deferred[term] = retryAt;
      }
    }
    return deferred;
  }

  private waiting(step: AlarmStep): boolean {
    const failing = this.failing.get(step);
    return failing !== undefined && this.clock.now() < failing.retryAt;
  }

  private failed(step: AlarmStep, error: unknown): void {
    const failures = (this.failing.get(step)?.failures ?? 0) + 1;
    const backoff = backoffCeilingMs(failures, ALARM_STEP_BACKOFF_BASE_MS, ALARM_STEP_BACKOFF_MAX_MS);
    const retryAt = this.clock.now() + backoff;
    this.failing.set(step, { failures, retryAt });
    log({ event: "lane.alarm_step_failed", lane: this.lane, step, failures, retryAt, message: describeError(error) });
  }
}
