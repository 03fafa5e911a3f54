/**
 * The dispatcher: claims due jobs that have an in-process executor through the same fenced claim as
 * pull consumers, runs each with an AbortSignal, renews its lease while it runs, and settles it through
 * the fence. It never awaits an executor on the caller's path: it is driven by enqueue, settlement and
 * the alarm, so one long executor holds up nothing.
 *
 * An aborted attempt (cancel, timeout, lost lease) is wound up at once — its outcome written, or
 * nothing when it lost its lease — but its executor may run on: until it returns, the attempt keeps
 * its concurrency slot and its job gets no second in-process executor. One that has not returned
 * `abortGraceMs` after its abort is logged `executor.stuck` and its slot is given back; its job still
 * waits for it (or for the object to restart).
 */
import { DISPATCH_IDLE_AFTER_MS, DISPATCH_LEASE_MS, MAX_CLAIM } from "../../shared/defaults.js";
import { QueueError, type Result } from "../../shared/errors.js";
import type { ClaimedJob } from "../../shared/job.js";
import { wholeForExecutor } from "../payloads/held-dependencies.js";
import { describeError } from "../../shared/describe-error.js";
import { log, type LostCause } from "../../shared/log.js";
import { AbortError, JobSnoozed, JobWaiting, LOST_CAUSES, type AbortCause, type ExecutorRegistry } from "./executors.js";
import { reasonOf, type Attempt, type Ended } from "./attempt.js";
import { RecordBatch } from "../steps/record-batch.js";
import { durableSteps, executorContext, type AttemptRecorder } from "../steps/steps.js";
import { withoutToken } from "../store/job-row.js";
import type { DispatcherHost } from "./dispatcher-host.js";
import { batchOptionsOf } from "./batch-executor.js";
import { BatchStarts } from "./batch-starts.js";
import { AttemptEndings } from "./attempt-endings.js";

const RENEW_EVERY_MS = DISPATCH_LEASE_MS / 3;

export type { AttemptStreams, DispatcherHost } from "./dispatcher-host.js";

export class Dispatcher<E = unknown> {
  /** Attempts whose executor has not returned, by job id: running, or aborted and running on. */
  private readonly attempts = new Map<string, Attempt>();
  /** Checkpoint records of this turn, written together. */
  private readonly records: RecordBatch;
  /** Starting claimed jobs: a record made now has company coming. */
  private pumping = false;
  /** Attempts that completed this turn, to be written together. */
  /** What an attempt's end writes through the fence, its completions gathered for the turn's one statement. */
  private readonly endings: AttemptEndings<E>;
  private renewer: ReturnType<typeof setInterval> | undefined;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private deadlineAt = Infinity;
  private settleBusy: (() => void) | undefined;
  private spells = 0;
  readonly kinds: readonly string[];
  /** Kinds whose executor runs one job at a time (the others are batch executors: attempts/batch-executor.ts). */
  readonly singleKinds: readonly string[];
  /** The batch executors' starts (null: the lane has none). */
  private readonly batchStarts: BatchStarts<E> | null;

  constructor(
    private readonly host: DispatcherHost<E>,
    private readonly executors: ExecutorRegistry<E>,
  ) {
    this.kinds = Object.keys(executors);
    const batches = Object.entries(executors).flatMap(([kind, executor]) => {
      const options = batchOptionsOf(executor);
      return options ? [[kind, options] as const] : [];
    });
    this.singleKinds = batches.length === 0 ? this.kinds : this.kinds.filter((kind) => !batches.some(([batch]) => batch === kind));
    this.batchStarts = batches.length === 0 ? null : new BatchStarts<E>(batches, {
      host,
      busyJobIds: () => this.busyJobIds(),
      heldSlots: () => this.heldSlots(),
      open: (job, seq) => this.open(job, seq),
      returned: (attempt, ended) => this.returned(attempt, ended),
      settleCompletions: () => this.settleCompletions(),
      dependenciesOf: (attempt) => this.dependenciesOf(attempt),
    });
    this.records = new RecordBatch(host.checkpoints);
    this.endings = new AttemptEndings(host);
  }

  /** How many times the dispatcher went from idle to busy (set up its renewal timer and keep-alive); for inspection and tests. */
  get busySpells(): number {
    return this.spells;
  }

  /** Whether it is idle now: no renewal timer, no keep-alive. */
  get idle(): boolean {
    return this.renewer === undefined;
  }

  /** Whether an attempt runs here, not yet wound up. */
  get running(): boolean {
    for (const attempt of this.attempts.values()) if (!attempt.ended) return true;
    return false;
  }

  /** Slots held by aborted attempts whose executor runs on (not yet stuck). */
  heldSlots(): number {
    let held = 0;
    for (const attempt of this.attempts.values()) if (attempt.ended && !attempt.stuck) held++;
    return held;
  }

  /** Jobs whose aborted executor runs on: none of them may get a second in-process executor. */
  busyJobIds(): string[] {
    const ids: string[] = [];
    for (const attempt of this.attempts.values()) if (attempt.ended) ids.push(attempt.job.id);
    return ids;
  }

  /** Whether this process holds a live (not wound-up) attempt of the job. */
  holds(jobId: string): boolean {
    const attempt = this.attempts.get(jobId);
    return attempt !== undefined && !attempt.ended;
  }

  /**
   * Whether the last pump left no due job of its kinds waiting, and nothing since could have added one
   * (`lookAgain`): a job enqueued now may start at once without passing one that waits, and a slot
   * freed by a completion has nobody to take it.
   */
  get caughtUp(): boolean {
    return this.allSeen;
  }

  private allSeen = false;
  /** Whether the last count of the batch kinds left no ready batch waiting for room (`allSeen`'s batch half). */
  private batchesSeen = false;

  /** Something may have made a job claimable (an enqueue, a retry, a queue's next head): the next pump reads. */
  lookAgain(): void {
    this.allSeen = this.batchesSeen = false;
  }

  /**
   * Claims every due job it may (pause, concurrency, queue heads) and starts it. `onlyIfBehind`: only a
   * slot came free since the last pump, which need not read again when it left nothing waiting.
   */
  pump(onlyIfBehind = false): void {
    if (this.kinds.length === 0 || (onlyIfBehind && this.allSeen)) return;
    this.pumping = true;
    try {
      this.pumpClaims(onlyIfBehind);
    } finally {
      this.pumping = false;
    }
  }

  /** Whether a job of `kind` may start alone, in its enqueue's turn: a single-job executor's (a batch waits for company). */
  startsAlone(kind: string): boolean {
    return this.singleKinds.includes(kind);
  }

  /**
   * Single-job kinds are read by every pump (a head that fell due while the lane was full has no term
   * of the wake: only a pump finds it). Batch kinds are counted again on a freed slot
   * (`onlyIfBehind`) only when a ready batch waited for room: a freed slot makes no batch ready. Its
   * size does (an enqueue, which pumps in full), or its `waitMs` (the alarm, in full; one that passed
   * while the lane was full is found by the wake the freed slot recomputes).
   */
  private pumpClaims(onlyIfBehind: boolean): void {
    const singlesSeen = this.singleKinds.length === 0 || this.pumpSingles();
    if (!onlyIfBehind || !this.batchesSeen) this.batchesSeen = this.batchStarts === null || this.batchStarts.pump();
    this.allSeen = singlesSeen && this.batchesSeen;
  }

  /** Claims and starts due jobs of single-job kinds; answers whether it left none it may start. */
  private pumpSingles(): boolean {
    for (;;) {
      const seqs = new Map<string, number>();
      const seen = { all: false };
      const claimed = this.host.claims.take({
        kinds: this.singleKinds,
        excludeKinds: [],
        excludeIds: this.busyJobIds(),
        heldSlots: this.heldSlots(),
        max: MAX_CLAIM,
        leaseMs: DISPATCH_LEASE_MS,
        maxBytes: Infinity,
        holder: "lane",
      }, seqs, seen);
      for (const job of claimed) this.start(job, seqs.get(job.id)!);
      if (claimed.length < MAX_CLAIM) return seen.all;
    }
  }

  /**
   * When a batch kind's due jobs start (its term of the wake, batch-starts.ts): now when a batch is
   * ready, else when its oldest due job will have waited `waitMs`; null without due jobs of a batch kind.
   */
  batchWakeAt(): number | null {
    return this.batchStarts?.wakeAt() ?? null;
  }

  /** Aborts the in-process attempt of a job, if any (`lostCause`: why, when the attempt lost its lease). */
  abort(jobId: string, cause: AbortCause, lostCause: LostCause = "expired"): boolean {
    const attempt = this.attempts.get(jobId);
    if (!attempt || attempt.ended) return false;
    this.abortAttempt(attempt, cause, lostCause);
    return true;
  }

  /** Aborts every in-process attempt whose lease is no longer its own (recovered, superseded, settled). */
  reconcile(): void {
    for (const attempt of this.attempts.values()) {
      if (attempt.ended) continue;
      const lease = this.host.fenced.leaseOf(attempt.job.id);
      if (!lease) this.abortAttempt(attempt, "lost", "recovered");
      else if (lease.token !== attempt.token) this.abortAttempt(attempt, "lost", "superseded");
      else if (lease.until <= this.host.clock.now()) this.abortAttempt(attempt, "lost", "expired");
    }
  }

  /** Fires the attempt's signal, then winds it up at once; the executor keeps its slot until it returns. */
  private abortAttempt(attempt: Attempt, cause: AbortCause, lostCause: LostCause = "expired"): void {
    if (attempt.cause !== null || attempt.ended) return;
    attempt.cause = cause;
    attempt.controller.abort(new AbortError(cause, attempt.job));
    this.end(attempt, { ok: false, error: attempt.controller.signal.reason }, lostCause);
    if (!attempt.returned) {
      const abortedAt = Date.now();
      setTimeout(() => {
        if (attempt.returned) return;
        attempt.stuck = true;
        this.host.stuck(attempt.job, Date.now() - abortedAt);
        this.host.changed();
        this.idleIfDone();
      }, this.host.abortGraceMs);
    }
  }

  /** Starts a claimed job: by a pump, or one its lane has just inserted running (`LaneStore.insertStarted`). */
  start(job: ClaimedJob, seq: number): void {
    const attempt = this.open(job, seq);
    let running: unknown;
    try {
      // A payload or dependency's result held in R2 is read back first: the executor gets it whole, and
      // its dependencies are read once for both (payloads/held-dependencies.ts). A read that throws fails the attempt.
      const held = wholeForExecutor(this.host.payloads, job, () => this.dependenciesOf(attempt));
      const context = executorContext<E>(
        { signal: attempt.controller.signal, job: withoutToken(job), attempt: job.attempts, env: this.host.env },
        () => (attempt.steps ??= durableSteps(this.recorder(attempt))),
        held.dependencies,
      );
      const executor = this.executors[job.kind]!;
      running = held.payload === null ? executor(job.payload, context) : held.payload.then((payload) => {
        Object.assign(context.job, { payload, payloadRef: null }); // ctx.job is this attempt's own copy
        return executor(payload, context);
      });
    } catch (error) {
      this.returned(attempt, { ok: false, error });
      return;
    }
    Promise.resolve(running).then(
      (value) => this.returned(attempt, { ok: true, value }),
      (error: unknown) => this.returned(attempt, { ok: false, error }),
    );
  }

  /** An attempt of a claimed job, kept until its executor returns: its deadline armed, the dispatcher busy. */
  private open(job: ClaimedJob, seq: number): Attempt {
    const deadline = Date.now() + job.timeoutMs;
    const attempt: Attempt = {
      job, seq, token: job.lease.token, controller: new AbortController(), cause: null, ended: false, returned: false, deadline, stuck: false, recorded: false, steps: null,
      snoozeUntil: null,
      waitOn: null,
    };
    if (this.renewer === undefined) this.busy();
    this.attempts.set(job.id, attempt);
    if (this.deadlineTimer === undefined || deadline < this.deadlineAt) this.armDeadline(deadline);
    return attempt;
  }

  /** What an attempt's job was told of its dependencies and of its earlier attempts' waits (a first claim, generation 1, follows no wait). */
  private dependenciesOf({ job, seq }: Attempt) {
    return job.dependsOn.length === 0 && job.lease.generation === 1 ? [] : this.host.dependencies.of(seq);
  }

  /**
   * What an attempt's steps write through: the fence with its current token. A refusal of the fence
   * aborts the attempt (as lost, or cancelled), so it writes nothing more.
   */
  private recorder(attempt: Attempt): AttemptRecorder {
    const { checkpoints } = this.host;
    const { id, lease } = attempt.job;
    const landed = (result: Result<null>) => {
      if (result.ok) attempt.recorded = true;
      return result;
    };
    return {
      // A job's first claim (generation 1) follows no attempt: nothing can have been recorded yet.
      recorded: () => (lease.generation === 1 ? new Map() : checkpoints.recorded(id, lease.generation)),
      save: (name, json) => {
        const record = { id, seq: attempt.seq, token: attempt.token, name, json };
        // Alone, an attempt writes at once; among others (or those a pump is starting), its record joins
        // theirs at the end of the turn, and so, when their executors return together, do their completions.
        return this.attempts.size === 1 && !this.pumping ? landed(checkpoints.record(record)) : this.records.add(record).then(landed);
      },
      progress: (progressJson) => {
        const recorded = checkpoints.progress(id, attempt.token, progressJson);
        this.host.streams.progressed();
        return recorded;
      },
      stream: (chunkJson) => this.host.streams.write(id, attempt.token, [chunkJson]),
      over: () => (attempt.ended ? reasonOf(attempt) : null),
      now: () => this.host.clock.now(),
      snooze: (wakeAt) => {
        attempt.snoozeUntil = wakeAt;
        return new JobSnoozed(id, wakeAt);
      },
      jobId: id,
      lane: this.host.lane,
      dependencies: () => this.dependenciesOf(attempt),
      wait: (waitpoint, timeoutMs) => {
        attempt.waitOn = { waitpoint, timeoutMs };
        return new JobWaiting(id, waitpoint);
      },
      refused: (error) => {
        if (error.code === "job_cancelled") this.abortAttempt(attempt, "cancelled");
        else if (error.code in LOST_CAUSES || error.code === "job_not_found") this.abortAttempt(attempt, "lost", LOST_CAUSES[error.code] ?? "settled");
        else return QueueError.from(error);
        return reasonOf(attempt);
      },
    };
  }

  /** The executor returned: its answer ends the attempt unless an abort already did; its slot is free. */
  private returned(attempt: Attempt, ended: Ended): void {
    attempt.returned = true;
    const wasAborted = attempt.ended;
    this.end(attempt, ended);
    if (this.attempts.get(attempt.job.id) === attempt) this.attempts.delete(attempt.job.id);
    if (wasAborted) this.host.changed(); // its slot, and its job, are free again
    this.idleIfDone();
  }

  /** The one end of an attempt, whichever comes first: the executor's answer, or an abort. */
  private end(attempt: Attempt, ended: Ended, lostCause: LostCause = "expired"): void {
    if (attempt.ended) return; // a late answer after an abort is nobody's business
    attempt.ended = true;
    try {
      this.endings.windUp(attempt, ended, lostCause);
    } catch (error) {
      // A bug, not an outcome: the lease runs out and the alarm recovers the job.
      log({ event: "dispatcher.wind_up_failed", lane: this.host.lane, jobId: attempt.job.id, message: describeError(error) });
    }
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
      if (attempt.ended) continue;
      if (attempt.deadline <= now) this.abortAttempt(attempt, "timeout");
      else next = Math.min(next, attempt.deadline);
    }
    if (next !== Infinity) this.armDeadline(next);
  }

  /**
   * While anything runs in process: one renewal timer, and one promise handed to `waitUntil`, which
   * keeps the object in memory until the last executor returns (not one per attempt: they are cheap
   * to hold but not free to register).
   */
  private busy(): void {
    this.spells++;
    this.renewer = setInterval(() => this.renewAll(), RENEW_EVERY_MS);
    this.host.waitUntil(new Promise<void>((resolve) => (this.settleBusy = resolve)));
  }

  /**
   * Idle once no executor but stuck ones has run for `DISPATCH_IDLE_AFTER_MS`: the renewal timer and
   * the keep-alive outlive the last attempt a little, so that jobs coming one after another (a serial
   * queue; an edge app posting one job per request, each started at once) share one busy spell
   * instead of setting both up per job. One timer per quiet spell, moved on while jobs keep coming.
   */
  private idleIfDone(): void {
    this.lastEnd = Date.now();
    if (this.idleTimer === undefined && this.renewer !== undefined) this.idleIn(DISPATCH_IDLE_AFTER_MS);
  }

  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private lastEnd = 0;

  private idleIn(ms: number): void {
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      for (const attempt of this.attempts.values()) if (!attempt.stuck) return; // its return sets the timer again
      const quiet = Date.now() - this.lastEnd;
      if (quiet < DISPATCH_IDLE_AFTER_MS) return this.idleIn(DISPATCH_IDLE_AFTER_MS - quiet);
      clearInterval(this.renewer);
      clearTimeout(this.deadlineTimer);
      this.renewer = undefined;
      this.deadlineTimer = undefined;
      this.settleBusy?.();
      this.settleBusy = undefined;
    }, ms);
  }

  /**
   * Writes the completions of this turn: one statement for all; each one the fence refused goes
   * again alone, to learn why (attempt-endings.ts).
   */
  settleCompletions(): void {
    this.endings.settleCompletions();
  }

  /**
   * Renews the lease of every attempt in process (one statement each, each a new token). An attempt
   * whose renewal is refused has lost its lease, or its job was cancelled: its signal fires.
   */
  renewAll(): void {
    for (const attempt of this.attempts.values()) {
      if (attempt.ended) continue;
      const renewed = this.host.fenced.renew(attempt.job.id, attempt.token, DISPATCH_LEASE_MS);
      if (renewed.ok) attempt.token = renewed.value.token;
      else if (renewed.error.code === "job_cancelled") this.abortAttempt(attempt, "cancelled");
      else this.abortAttempt(attempt, "lost", LOST_CAUSES[renewed.error.code] ?? "expired");
    }
    this.host.changed();
  }
}
