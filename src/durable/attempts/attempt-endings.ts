/**
 * The end of an in-process attempt, written through the fence (dispatcher.ts calls it once per
 * attempt): its outcome — a completion, a failure, a snooze, a wait, a cancel's settlement — or
 * nothing when it lost its lease (counted lost). Completions of one turn are written together in one
 * statement by `settleCompletions`; a big result goes to R2 first, as a complete's.
 */
import { MAX_ERROR_MESSAGE_CHARS, MAX_SNOOZE_MS } from "../../shared/defaults.js";
import type { Result } from "../../shared/errors.js";
import type { ClaimedJob } from "../../shared/job.js";
import { serializeJson } from "../../shared/json.js";
import { describeError } from "../../shared/describe-error.js";
import type { LostCause } from "../../shared/log.js";
import { isBig } from "../payloads/held.js";
import { completeHeld } from "../payloads/held-results.js";
import { LOST_CAUSES } from "./executors.js";
import { retryOf, type Attempt, type Ended } from "./attempt.js";
import type { DispatcherHost } from "./dispatcher-host.js";

export class AttemptEndings<E> {
  /** This turn's completions, written together by `settleCompletions`. */
  private completions: { job: ClaimedJob; token: string; resultJson: string; checkpoints: boolean }[] = [];

  constructor(private readonly host: DispatcherHost<E>) {}

  /** Records the one outcome of an attempt through the fence, or nothing if it lost its lease. */
  windUp(attempt: Attempt, ended: Ended, lostCause: LostCause): void {
    const { job } = attempt;
    const { fenced, cancels } = this.host;
    let onlyFreed = false;
    if (attempt.cause === "lost") {
      this.host.lost(job, lostCause, "lease lost while the executor ran");
      return;
    }
    try {
      let written: Result<unknown> | null;
      if (attempt.cause === "cancelled") {
        const settled = cancels.settleAttempt(job.id, attempt.token);
        written = settled ? { ok: true, value: settled } : null;
      } else if (attempt.cause === "timeout") {
        written = fenced.fail(job.id, attempt.token, `timed out after ${job.timeoutMs} ms`, true, null);
      } else if (attempt.waitOn !== null) {
        // A durable wait ends the attempt, whatever the executor answered after it.
        written = this.host.waits.wait(job.id, attempt.token, attempt.waitOn.waitpoint, attempt.waitOn.timeoutMs);
      } else if (attempt.snoozeUntil !== null) {
        // A durable sleep ends the attempt, whatever the executor answered after it.
        const delayMs = Math.min(MAX_SNOOZE_MS, Math.max(0, attempt.snoozeUntil - this.host.clock.now()));
        written = fenced.snooze(job.id, attempt.token, delayMs);
      } else if (ended.ok) {
        const result = serializeJson(ended.value, "result", this.host.payloads.heldLimit);
        if (result.ok && isBig(result.value, this.host.payloads.heldLimit)) {
          // Over 128 KiB, kept in R2: uploaded, then written through the fence, as a complete's (payloads/held-results.ts).
          written = null;
          const token = attempt.token;
          this.host.waitUntil(completeHeld(this.host.payloads, job.id, result.value, (json) => fenced.complete(job.id, token, json)).then(
            (done) => this.reportIfLost(job, done),
            (error: unknown) => this.reportIfLost(job, { ok: false, error: { code: "internal", message: describeError(error) } }),
          ).finally(() => this.host.changed()));
        } else if (result.ok) {
          // Written with the others of this turn by `settleCompletions`, in one statement.
          // Checkpoints only come from an earlier attempt, or from this one's steps.
          const checkpoints = job.lease.generation > 1 || attempt.recorded;
          this.completions.push({ job, token: attempt.token, resultJson: result.value, checkpoints });
          written = null;
          onlyFreed = job.queue === null; // a queue's next job becomes its head: that one may be claimed
        } else {
          written = fenced.fail(job.id, attempt.token, `executor result refused: ${result.error.message}`, false, null);
        }
      } else {
        // Whatever was thrown (an Error or not, printable or not) fails the attempt with a readable message.
        const { retry, retryAfterMs } = retryOf(ended.error);
        // Capped like a pull consumer's message: it is kept in `error` and in each of `errors`.
        const message = describeError(ended.error).slice(0, MAX_ERROR_MESSAGE_CHARS);
        written = fenced.fail(job.id, attempt.token, message, retry, retryAfterMs);
      }
      if (written) this.reportIfLost(job, written);
    } finally {
      this.host.changed(onlyFreed);
    }
  }

  /**
   * Writes the completions of this turn: one statement for all; each one the fence refused goes
   * again alone, to learn why (an attempt that lost its lease writes nothing: it is counted lost).
   */
  settleCompletions(): void {
    if (this.completions.length === 0) return;
    const batch = this.completions;
    this.completions = [];
    const settled = this.host.fenced.completeBatch(batch.map(({ job, token, resultJson, checkpoints }) => ({ id: job.id, token, resultJson, checkpoints })));
    for (const { job, token, resultJson } of batch) {
      if (!settled.has(job.id)) this.reportIfLost(job, this.host.fenced.complete(job.id, token, resultJson));
    }
  }

  /** A write the fence refused because the lease is no longer this attempt's: the attempt is lost. */
  private reportIfLost(job: ClaimedJob, written: Result<unknown>): void {
    if (written.ok) return;
    const cause = LOST_CAUSES[written.error.code];
    if (cause) this.host.lost(job, cause, written.error.message);
  }
}
