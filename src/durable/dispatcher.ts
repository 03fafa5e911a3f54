/**
 * The dispatcher: claims due jobs that have an in-process executor through the same fenced claim as
 * pull consumers, runs each with an AbortSignal, renews its lease while it runs, and settles it through
 * the fence. It never awaits an executor on the caller's path: it is driven by enqueue, settlement and
 * the alarm, so one long executor holds up nothing.
 */
import type { Clock } from "../shared/clock.js";
import { MAX_CLAIM } from "../shared/defaults.js";
import type { Result } from "../shared/errors.js";
import type { ClaimedJob, Job } from "../shared/job.js";
import { serializeJson } from "../shared/json.js";
import { NonRetryableError, RetryAfterError, type AbortCause, type ExecutorRegistry } from "./executors.js";
import type { SwitchyardEnv } from "./env.js";
import type { LaneStore } from "./lane-store.js";

/** Lease of an in-process attempt; renewed every third of it while the executor runs. */
export const DISPATCH_LEASE_MS = 30_000;
const RENEW_EVERY_MS = DISPATCH_LEASE_MS / 3;

type Ended = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Attempt {
  job: ClaimedJob;
  /** The current lease token; replaced on every renewal. */
  token: string;
  controller: AbortController;
  cause: AbortCause | null;
  /** Wound up (outcome written, or nothing if lost); whatever the executor does next is ignored. */
  ended: boolean;
  /** When `timeoutMs` runs out, on the platform clock (timers run on real time). */
  deadline: number;
}

export interface DispatcherHost {
  readonly store: LaneStore;
  readonly clock: Clock;
  readonly env: SwitchyardEnv;
  /** Rows changed: re-arm the alarm (and pump again). */
  changed(): void;
  /** An attempt ended without a write: it lost its lease. */
  lost(job: Job, reason: string): void;
  /** Keeps the object alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
}

export class Dispatcher {
  private readonly attempts = new Map<string, Attempt>();
  /** Attempts that completed this turn, to be written together. */
  private completions: { job: ClaimedJob; token: string; resultJson: string }[] = [];
  private renewer: ReturnType<typeof setInterval> | undefined;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private deadlineAt = Infinity;
  private settleBusy: (() => void) | undefined;
  readonly kinds: readonly string[];

  constructor(
    private readonly host: DispatcherHost,
    private readonly executors: ExecutorRegistry,
  ) {
    this.kinds = Object.keys(executors);
  }

  /** Claims every due job it may (pause, concurrency, queue heads) and starts it. */
  pump(): void {
    if (this.kinds.length === 0) return;
    for (;;) {
      const claimed = this.host.store.claimDue({
        kinds: this.kinds,
        excludeKinds: [],
        max: MAX_CLAIM,
        leaseMs: DISPATCH_LEASE_MS,
        holder: "lane",
      });
      for (const job of claimed) this.start(job);
      if (claimed.length < MAX_CLAIM) return;
    }
  }

  /** Aborts the in-process attempt of a job, if any. */
  abort(jobId: string, cause: AbortCause): boolean {
    const attempt = this.attempts.get(jobId);
    if (!attempt) return false;
    this.abortAttempt(attempt, cause);
    return true;
  }

  /** Aborts every in-process attempt whose lease is no longer its own (recovered, superseded, settled). */
  reconcile(): void {
    for (const attempt of this.attempts.values()) {
      const lease = this.host.store.leaseOf(attempt.job.id);
      if (!lease || lease.token !== attempt.token) this.abortAttempt(attempt, "lost");
      else if (lease.until <= this.host.clock.now()) this.abortAttempt(attempt, "lost");
    }
  }

  /** Fires the attempt's signal, then winds it up at once: the executor may run on, detached. */
  private abortAttempt(attempt: Attempt, cause: AbortCause): void {
    if (attempt.cause !== null || attempt.ended) return;
    attempt.cause = cause;
    attempt.controller.abort(new AbortError(cause, attempt.job));
    this.end(attempt, { ok: false, error: attempt.controller.signal.reason });
  }

  private start(job: ClaimedJob): void {
    const deadline = Date.now() + job.timeoutMs;
    const attempt: Attempt = { job, token: job.lease.token, controller: new AbortController(), cause: null, ended: false, deadline };
    if (this.attempts.size === 0) this.busy();
    this.attempts.set(job.id, attempt);
    if (this.deadlineTimer === undefined || deadline < this.deadlineAt) this.armDeadline(deadline);
    const { lease, ...view } = job;
    let running: unknown;
    try {
      running = this.executors[job.kind]!(job.payload, {
        signal: attempt.controller.signal,
        job: { ...view, lease: { generation: lease.generation, expiresAt: lease.expiresAt } },
        attempt: job.attempts,
        env: this.host.env,
      });
    } catch (error) {
      this.end(attempt, { ok: false, error });
      return;
    }
    Promise.resolve(running).then(
      (value) => this.end(attempt, { ok: true, value }),
      (error: unknown) => this.end(attempt, { ok: false, error }),
    );
  }

  /** The one end of an attempt, whichever comes first: the executor's answer, or an abort. */
  private end(attempt: Attempt, ended: Ended): void {
    if (attempt.ended) return; // a detached executor's late answer is nobody's business
    attempt.ended = true;
    this.attempts.delete(attempt.job.id);
    try {
      this.windUp(attempt, ended);
    } catch (error) {
      // A bug, not an outcome: the lease runs out and the alarm recovers the job.
      console.error(JSON.stringify({ event: "dispatcher.wind_up_failed", jobId: attempt.job.id, message: String(error) }));
    }
    if (this.attempts.size === 0) this.idle();
  }

  /**
   * Timeouts share one timer, set for the earliest deadline and moved only when an earlier one
   * arrives; when it fires it aborts what is overdue and sets itself for the next deadline.
   */
  private armDeadline(at: number): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineAt = at;
    this.deadlineTimer = setTimeout(() => this.expireDeadlines(), Math.max(0, at - Date.now()));
  }

  private expireDeadlines(): void {
    this.deadlineTimer = undefined;
    const now = Date.now();
    let next = Infinity;
    for (const attempt of [...this.attempts.values()]) {
      if (attempt.deadline <= now) this.abortAttempt(attempt, "timeout");
      else next = Math.min(next, attempt.deadline);
    }
    if (next !== Infinity) this.armDeadline(next);
  }

  /**
   * While anything runs in process: one renewal timer, and one promise handed to `waitUntil`, which
   * keeps the object in memory until the last attempt winds up (not one per attempt: they are cheap
   * to hold but not free to register).
   */
  private busy(): void {
    this.renewer = setInterval(() => this.renewAll(), RENEW_EVERY_MS);
    this.host.waitUntil(new Promise<void>((resolve) => (this.settleBusy = resolve)));
  }

  private idle(): void {
    clearInterval(this.renewer);
    clearTimeout(this.deadlineTimer);
    this.renewer = undefined;
    this.deadlineTimer = undefined;
    this.settleBusy?.();
    this.settleBusy = undefined;
  }

  /** Records the one outcome of an attempt through the fence, or nothing if it lost its lease. */
  private windUp(attempt: Attempt, ended: Ended): void {
    const { job } = attempt;
    const { store } = this.host;
    if (attempt.cause === "lost") {
      this.host.lost(job, "lease lost while the executor ran");
      return;
    }
    try {
      let written: Result<unknown> | null;
      if (attempt.cause === "cancelled") {
        const settled = store.settleCancelledAttempt(job.id, attempt.token);
        written = settled ? { ok: true, value: settled } : null;
      } else if (attempt.cause === "timeout") {
        written = store.failAttempt(job.id, attempt.token, `timed out after ${job.timeoutMs} ms`, true, null);
      } else if (ended.ok) {
        const result = serializeJson(ended.value, "result");
        if (result.ok) {
          // Written with the others of this turn by `settleCompletions`, in one statement.
          this.completions.push({ job, token: attempt.token, resultJson: result.value });
          written = null;
        } else {
          written = store.failAttempt(job.id, attempt.token, `executor result refused: ${result.error.message}`, false, null);
        }
      } else {
        const error = ended.error instanceof Error ? ended.error : new Error(String(ended.error));
        const retry = !(error instanceof NonRetryableError);
        const retryAfterMs = error instanceof RetryAfterError ? Math.max(0, Math.floor(error.retryAfterMs)) : null;
        written = store.failAttempt(job.id, attempt.token, error.message || error.name, retry, retryAfterMs);
      }
      if (written) this.reportIfLost(job, written);
    } finally {
      this.host.changed();
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
    const settled = this.host.store.completeAttempts(batch.map(({ job, token, resultJson }) => ({ id: job.id, token, resultJson })));
    for (const { job, token, resultJson } of batch) {
      if (!settled.has(job.id)) this.reportIfLost(job, this.host.store.completeAttempt(job.id, token, resultJson));
    }
  }

  /** A write the fence refused because the lease is no longer this attempt's: the attempt is lost. */
  private reportIfLost(job: ClaimedJob, written: Result<unknown>): void {
    if (!written.ok && (written.error.code === "lease_superseded" || written.error.code === "lease_expired")) {
      this.host.lost(job, written.error.message);
    }
  }

  /**
   * Renews the lease of every attempt in process (one statement each, each a new token). An attempt
   * whose renewal is refused has lost its lease, or its job was cancelled: its signal fires.
   */
  renewAll(): void {
    for (const attempt of this.attempts.values()) {
      if (attempt.cause !== null) continue;
      const renewed = this.host.store.renew(attempt.job.id, attempt.token, DISPATCH_LEASE_MS);
      if (renewed.ok) attempt.token = renewed.value.token;
      else this.abortAttempt(attempt, renewed.error.code === "job_cancelled" ? "cancelled" : "lost");
    }
    this.host.changed();
  }
}

/** The reason an attempt's signal carries. */
export class AbortError extends Error {
  override name = "AbortError";
  constructor(
    readonly abortCause: AbortCause,
    job: Job | ClaimedJob,
  ) {
    super(`attempt of job ${job.id} aborted: ${abortCause}`);
  }
}
