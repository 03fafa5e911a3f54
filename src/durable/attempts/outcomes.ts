/**
 * The second phase of outcomes: a `completing` job is handed to the lane's `onOutcome` hook, then
 * settled. Deliveries run side by side, so one slow hook holds up no other job; a job is in hand at
 * most once per process, and at most `MAX_OUTCOMES_IN_HAND` are in hand at once. Every completing
 * job not in hand is found, a bounded page at a time, by each flush until that many are; the wake
 * asks for "now" only while some wait that the lane can still take in hand.
 */
import { COMPLETING_BATCH, MAX_OUTCOMES_IN_HAND } from "../../shared/defaults.js";
import { describeError } from "../../shared/describe-error.js";
import type { Job } from "../../shared/job.js";
import { log } from "../../shared/log.js";
import { firstJobRow, jobRows, toJob } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import * as L from "./lease-statements.js";
import { keepUpkeep } from "../store/upkeep.js";

export interface OutcomeHost<E> {
  readonly store: JobStore;
  readonly clock: { now(): number };
  readonly env: E;
  /** Keeps the object alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
  /** A job settled: flush. */
  changed(): void;
}

export class OutcomeDelivery<E> {
  private readonly delivering = new Set<string>();
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly host: OutcomeHost<E>,
    private readonly onOutcome: ((job: Job, env: E) => void | Promise<void>) | undefined,
  ) {
    this.sql = storage.sql;
  }

  /** How many deliveries are in hand. */
  get inHand(): number {
    return this.delivering.size;
  }

  /** Whether `completing` jobs wait that this process could take in hand now (the wake's "now" term). */
  waiting(completing: number): boolean {
    return completing > this.delivering.size && this.delivering.size < MAX_OUTCOMES_IN_HAND;
  }

  /** Hands every `completing` job not already in hand to the hook, a page at a time, up to the cap. */
  deliverPending(): void {
    if (!this.onOutcome) return;
    let afterSeq = 0;
    while (this.delivering.size < MAX_OUTCOMES_IN_HAND) {
      const rows = jobRows(this.sql.exec(L.COMPLETING_SQL, afterSeq, COMPLETING_BATCH));
      for (const row of rows) {
        afterSeq = row.seq;
        if (this.delivering.has(row.id)) continue;
        if (this.delivering.size >= MAX_OUTCOMES_IN_HAND) return;
        this.delivering.add(row.id);
        this.host.waitUntil(this.deliver(toJob(row, this.host.store.lane), this.onOutcome));
      }
      if (rows.length < COMPLETING_BATCH) return;
    }
  }

  /**
   * Outcomes recorded for a hook that is gone (a deploy removed `onOutcome`): nothing to hand over,
   * so they settle, a batch at a time. Runs at start-up and on the alarm (the wake is "now" while any wait).
   */
  settleUndeliverable(): void {
    if (this.onOutcome) return;
    for (const row of jobRows(this.sql.exec(L.COMPLETING_SQL, 0, COMPLETING_BATCH))) this.markSettled(row.id);
  }

  /** Second phase of an outcome: delivered, now settled. Idempotent. */
  private markSettled(id: string): Job | null {
    const now = this.host.clock.now();
    const row = firstJobRow(this.sql.exec(L.MARK_SETTLED_SQL, id, now));
    if (!row) return null;
    keepUpkeep(this.sql, [{ old: { ...row, state: "completing" }, new: row }], now);
    this.host.store.emit(row, "completing", null);
    return toJob(row, this.host.store.lane);
  }

  private async deliver(job: Job, onOutcome: (job: Job, env: E) => void | Promise<void>): Promise<void> {
    try {
      await onOutcome(job, this.host.env);
    } catch (error) {
      log({ event: "lane.on_outcome_failed", lane: this.host.store.lane, jobId: job.id, message: describeError(error) });
    } finally {
      this.delivering.delete(job.id);
    }
    this.markSettled(job.id);
    this.host.changed();
  }
}
