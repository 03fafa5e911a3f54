/**
 * The second phase of outcomes: a `completing` job is handed to the lane's `onOutcome` hook, then
 * settled. Deliveries run side by side, so one slow hook holds up no other job; a job is in hand at
 * most once per process.
 */
import { COMPLETING_BATCH } from "../../shared/defaults.js";
import type { Job } from "../../shared/job.js";
import { log } from "../../shared/log.js";
import type { LaneStore } from "../store/job-store.js";

export interface OutcomeHost<E> {
  readonly store: LaneStore;
  readonly env: E;
  /** Keeps the object alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
  /** A job settled: flush. */
  changed(): void;
}

export class OutcomeDelivery<E> {
  private readonly delivering = new Set<string>();

  constructor(
    private readonly host: OutcomeHost<E>,
    private readonly onOutcome: ((job: Job, env: E) => void | Promise<void>) | undefined,
  ) {}

  /** How many deliveries are in hand (the wake waits for them rather than firing now). */
  get inHand(): number {
    return this.delivering.size;
  }

  /** Hands each `completing` job not already in hand to the hook. */
  deliverPending(): void {
    if (!this.onOutcome) return;
    for (const job of this.host.store.completingJobs(COMPLETING_BATCH)) {
      if (this.delivering.has(job.id)) continue;
      this.delivering.add(job.id);
      this.host.waitUntil(this.deliver(job, this.onOutcome));
    }
  }

  /**
   * Outcomes recorded for a hook that is gone (a deploy removed `onOutcome`): nothing to hand over,
   * so they settle. Runs at start-up and on the alarm (the wake is "now" while any wait).
   */
  settleUndeliverable(): void {
    if (this.onOutcome) return;
    for (const job of this.host.store.completingJobs(COMPLETING_BATCH)) this.host.store.markSettled(job.id);
  }

  private async deliver(job: Job, onOutcome: (job: Job, env: E) => void | Promise<void>): Promise<void> {
    try {
      await onOutcome(job, this.host.env);
    } catch (error) {
      log({ event: "lane.on_outcome_failed", lane: this.host.store.lane, jobId: job.id, message: String(error) });
    } finally {
      this.delivering.delete(job.id);
    }
    this.host.store.markSettled(job.id);
    this.host.changed();
  }
}
