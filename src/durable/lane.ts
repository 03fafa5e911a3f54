/**
 * The lane: one Durable Object, one SQLite database, one alarm. A thin class: it validates RPC input,
 * calls the store, and after every transition re-arms its single wake and lets the dispatcher start
 * what is due. Expected refusals come back as `Result` data, never as thrown coded errors.
 */
import { DurableObject } from "cloudflare:workers";
import type { ZodType } from "zod";
import { systemClock, systemEntropy, type Clock, type Entropy } from "../shared/clock.js";
import {
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_MAX_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_RECOVERIES,
  DEFAULT_RECOVERY_WINDOW_MS,
  DEFAULT_TIMEOUT_MS,
} from "../shared/defaults.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { ClaimedJob, EnqueueStatus, Job, LaneInfo, Lease } from "../shared/job.js";
import { serializeJson } from "../shared/json.js";
import {
  BatchEnqueueRequest,
  CancelRequest,
  ClaimRequest,
  CompleteRequest,
  EnqueueRequest,
  FailRequest,
  LanePatch,
  ListQuery,
  Name,
  ReleaseRequest,
  RenewRequest,
  SweepRequest,
  toIssues,
} from "../shared/schemas.js";
import { Dispatcher } from "./dispatcher.js";
import type { SwitchyardEnv } from "./env.js";
import type { ExecutorRegistry } from "./executors.js";
import { LaneStore, type JobSpec, type Transition } from "./lane-store.js";
import { migrate } from "./migrations.js";
import { REGISTRY_NAME } from "./registry.js";

/** One line of the transition log: every change of a job's state. */
export interface TransitionEvent {
  event: "job.transition";
  lane: string;
  jobId: string;
  kind: string;
  from: Job["state"];
  to: Job["state"];
  outcome: Job["outcome"];
  attempt: number;
  generation: number;
  durationMs: number | null;
}

/** How a lane class is built (`defineLane`). */
export interface LaneOptions<E = SwitchyardEnv> {
  /** Kind → in-process executor. Kinds not listed here wait for pull consumers. */
  executors?: ExecutorRegistry<E>;
  /**
   * Receives every recorded outcome, at least once: the outcome is stored as `completing`, handed
   * here, then settled. A throw is logged and the job settles all the same.
   */
  onOutcome?: (job: Job, env: E) => void | Promise<void>;
  /** Receives every transition (the same record as the log line). A throw is logged, never fatal. */
  onTransition?: (event: TransitionEvent) => void;
  /** One JSON log line per transition on stdout; default true. */
  log?: boolean;
}

export type EnqueueAnswer = { status: EnqueueStatus; job: Job };
export type CancelAnswer = { status: "cancelled" | "cancelling"; job: Job };

const CURSOR_PREFIX = "c1.";

export class Lane extends DurableObject<SwitchyardEnv> {
  /** Set by `defineLane`; a plain `Lane` has no executors. */
  static options: LaneOptions = {};

  /** Where time and randomness come from; tests swap them with `useClock`. */
  private clock: Clock = systemClock;
  private entropy: Entropy = systemEntropy;
  readonly store: LaneStore;
  readonly dispatcher: Dispatcher;
  private readonly options: LaneOptions;
  /** The alarm as last written (undefined: unknown, read it again). */
  private armedAt: number | null | undefined = undefined;
  private readonly delivering = new Set<string>();
  private flushPending = false;
  /** Transitions written but not yet known durable, so not yet logged. */
  private unannounced: TransitionEvent[] = [];
  /** Whether the pending flush should look for jobs to start (not after enqueueing pull-only kinds). */
  private pumpWanted = false;

  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    this.options = (new.target as typeof Lane).options;
    const clock: Clock = { now: () => this.clock.now() };
    const entropy: Entropy = { id: () => this.entropy.id(), token: () => this.entropy.token(), random: () => this.entropy.random() };
    this.store = new LaneStore(ctx.storage, clock, entropy, {
      deliverOutcomes: this.options.onOutcome !== undefined,
      onTransition: (t) => this.transitioned(t),
    });
    this.dispatcher = new Dispatcher(
      {
        store: this.store,
        clock,
        env,
        changed: () => this.afterChange(),
        lost: (job, reason) => this.logLine({ event: "job.lost", lane: this.store.laneName, jobId: job.id, kind: job.kind, generation: job.generation, reason }),
        waitUntil: (promise) => ctx.waitUntil(promise),
      },
      this.options.executors ?? {},
    );
    void ctx.blockConcurrencyWhile(async () => {
      migrate(ctx.storage, this.clock.now());
      this.store.laneName = ctx.id.name ?? this.store.settings().name ?? ctx.id.toString();
      this.armedAt = await ctx.storage.getAlarm();
      // Jobs whose executors died with a previous instance are recovered now, not at lease expiry.
      if (this.store.expireOrphanedLeases() > 0) this.recoverExpired();
      this.settleUndeliverable();
      // Re-arm on start: a lost alarm write heals here, and due jobs start again after a restart.
      this.pumpWanted = true;
      this.flush();
    });
  }

  /** Test hook: replace the clock and entropy (a manual clock; deterministic tokens). Not for production. */
  useClock(clock: Clock, entropy?: Entropy): void {
    this.clock = clock;
    if (entropy) this.entropy = entropy;
    this.armedAt = undefined;
  }

  // ---- producers ----

  /** Enqueues one job (idempotent by id). */
  async enqueue(input: unknown): Promise<Result<EnqueueAnswer>> {
    const request = parse(EnqueueRequest, input);
    if (!request.ok) return request;
    const spec = this.toSpec(request.value);
    if (!spec.ok) return spec;
    const inserted = this.store.insertJob(spec.value);
    if (!inserted.ok) return inserted;
    const job = spec.value;
    const inProcess = this.dispatcher.kinds.includes(job.kind);
    // A duplicate changes nothing. A due job of a pull-only kind outside any queue changes no wake
    // term (none counts due pull jobs, and it heads no queue): the alarm stays as it is.
    const quiet = job.queue === null && job.runAt <= this.clock.now() && !inProcess;
    if (inserted.value.status === "queued" && !(quiet && this.armedAt !== undefined)) this.afterChange(inProcess);
    await this.register();
    return ok(inserted.value);
  }

  /** Enqueues 1..1000 jobs in one transaction, all or nothing. */
  async enqueueBatch(input: unknown): Promise<Result<{ results: { id: string; status: EnqueueStatus }[] }>> {
    const request = parse(BatchEnqueueRequest, input);
    if (!request.ok) return request;
    const specs: JobSpec[] = [];
    for (const [index, item] of request.value.jobs.entries()) {
      const spec = this.toSpec(item);
      if (!spec.ok) return fail(spec.error.code, `jobs[${index}]: ${spec.error.message}`, { index });
      specs.push(spec.value);
    }
    const inserted = this.store.insertJobs(specs);
    if (!inserted.ok) return inserted;
    this.afterChange(specs.some((spec) => this.dispatcher.kinds.includes(spec.kind)));
    await this.register();
    return ok({ results: inserted.value });
  }

  // ---- readers ----

  async getJob(id: unknown): Promise<Result<Job>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const job = this.store.getJob(name.value);
    return job ? ok(job) : fail("job_not_found", `no job ${name.value} in lane ${this.store.laneName}`);
  }

  async listJobs(input: unknown): Promise<Result<{ jobs: Job[]; cursor: string | null }>> {
    const query = parse(ListQuery, input ?? {});
    if (!query.ok) return query;
    let afterSeq = 0;
    if (query.value.cursor !== undefined) {
      const seq = decodeCursor(query.value.cursor);
      if (seq === null) return fail("invalid_request", "cursor is not one this API gave", [{ path: ["cursor"], message: "unknown cursor" }]);
      afterSeq = seq;
    }
    const { jobs, lastSeq, more } = this.store.listJobs({ ...query.value, afterSeq });
    return ok({ jobs, cursor: more && lastSeq !== null ? CURSOR_PREFIX + lastSeq.toString(36) : null });
  }

  async info(): Promise<Result<LaneInfo>> {
    const { concurrency, paused } = this.store.settings();
    return ok({
      lane: this.store.laneName,
      counts: this.store.counts(),
      paused,
      concurrency,
      nextWakeAt: this.store.nextWakeAt(this.dispatcher.kinds),
    });
  }

  /** The instant the lane's alarm is set for (null: none). For inspection and tests. */
  async nextWakeAt(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }

  // ---- admin ----

  async configure(input: unknown): Promise<Result<LaneInfo>> {
    const patch = parse(LanePatch, input ?? {});
    if (!patch.ok) return patch;
    this.store.configure(patch.value);
    this.afterChange();
    return this.info();
  }

  async cancel(id: unknown, input?: unknown): Promise<Result<CancelAnswer>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const request = parse(CancelRequest, input ?? {});
    if (!request.ok) return request;
    const answer = this.store.cancel(name.value, request.value.reason ?? null);
    if (answer.ok && answer.value.status === "cancelling") this.dispatcher.abort(name.value, "cancelled");
    this.afterChange();
    return answer;
  }

  async requeue(id: unknown): Promise<Result<{ job: Job }>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const job = this.store.requeue(name.value);
    if (!job.ok) return job;
    this.afterChange();
    return ok({ job: job.value });
  }

  async sweep(input: unknown): Promise<Result<{ removed: number }>> {
    const request = parse(SweepRequest, input);
    if (!request.ok) return request;
    const removed = this.store.sweep(request.value.settledBefore, request.value.limit ?? 10_000);
    this.afterChange();
    return ok({ removed });
  }

  // ---- pull consumers: the fence ----

  async claim(input?: unknown): Promise<Result<{ jobs: ClaimedJob[] }>> {
    const request = parse(ClaimRequest, input ?? {});
    if (!request.ok) return request;
    const jobs = this.store.claimDue({
      kinds: request.value.kinds ?? null,
      excludeKinds: this.dispatcher.kinds,
      max: request.value.max ?? 1,
      leaseMs: request.value.leaseMs ?? DEFAULT_LEASE_MS,
      holder: "consumer",
    });
    if (jobs.length > 0) this.afterChange();
    return ok({ jobs });
  }

  async renew(id: unknown, input: unknown): Promise<Result<{ lease: Lease }>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const request = parse(RenewRequest, input);
    if (!request.ok) return request;
    const lease = this.store.renew(name.value, request.value.token, request.value.leaseMs ?? DEFAULT_LEASE_MS);
    this.afterChange();
    return lease.ok ? ok({ lease: lease.value }) : lease;
  }

  async complete(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const request = parse(CompleteRequest, input);
    if (!request.ok) return request;
    const result = serializeJson(request.value.result, "result");
    if (!result.ok) return result;
    return this.settled(this.store.complete(name.value, request.value.token, result.value));
  }

  async fail(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const request = parse(FailRequest, input);
    if (!request.ok) return request;
    const { token, error, retry, retryAfterMs } = request.value;
    return this.settled(this.store.failAttempt(name.value, token, error, retry !== false, retryAfterMs ?? null));
  }

  async release(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const request = parse(ReleaseRequest, input);
    if (!request.ok) return request;
    return this.settled(this.store.release(name.value, request.value.token));
  }

  // ---- the alarm ----

  override async alarm(): Promise<void> {
    this.armedAt = null; // an alarm that runs is consumed
    this.recoverExpired();
    this.dispatcher.reconcile();
    this.settleUndeliverable();
    this.pumpWanted = true;
    this.flush(); // within the handler: an alarm set after it returns could be taken for consumed
  }

  // ---- internals ----

  /**
   * Outcomes recorded for a hook that is gone (a deploy removed `onOutcome`): nothing to hand over,
   * so they settle. Runs at start-up and on the alarm (the wake is "now" while any wait).
   */
  private settleUndeliverable(): void {
    if (this.options.onOutcome) return;
    for (const job of this.store.completingJobs()) this.store.markSettled(job.id);
  }

  private recoverExpired(): void {
    for (;;) {
      const { recovered, interrupted, cancelled } = this.store.recoverExpired();
      if (recovered + interrupted + cancelled < 500) return;
    }
  }

  private settled(answer: Result<Job>): Result<{ job: Job }> {
    this.afterChange();
    return answer.ok ? ok({ job: answer.value }) : answer;
  }

  /**
   * After a transition: settle what follows from it once the current turn is over. Transitions that
   * come together (executors finishing in the same turn, a batch) share one pump and one re-arm.
   */
  private afterChange(dispatch = true): void {
    this.pumpWanted ||= dispatch;
    if (this.flushPending) return;
    this.flushPending = true;
    queueMicrotask(() => {
      if (!this.flushPending) return;
      try {
        this.flush();
      } catch (error) {
        this.flushPending = false;
        this.logLine({ event: "lane.flush_failed", lane: this.store.laneName, message: String(error) });
      }
    });
  }

  /** Start what is due, deliver recorded outcomes, and re-arm the one alarm. */
  private flush(): void {
    this.flushPending = false;
    this.dispatcher.settleCompletions();
    const dispatch = this.pumpWanted;
    this.pumpWanted = false;
    if (dispatch) this.dispatcher.pump();
    this.deliverPending();
    this.rearm();
  }

  private rearm(): void {
    const wake = this.store.nextWakeAt(this.dispatcher.kinds, this.delivering.size);
    if (wake === this.armedAt) return;
    this.armedAt = wake;
    const write = wake === null ? this.ctx.storage.deleteAlarm() : this.ctx.storage.setAlarm(wake);
    write.catch((error: unknown) => {
      this.armedAt = undefined; // unknown now: the next transition writes it again
      this.logLine({ event: "lane.alarm_write_failed", lane: this.store.laneName, message: String(error) });
    });
  }

  /**
   * Second phase of outcomes: hand each `completing` job not already in hand to `onOutcome`, then
   * settle it. Deliveries run side by side, so one slow hook holds up no other job.
   */
  private deliverPending(): void {
    if (!this.options.onOutcome) return;
    for (const job of this.store.completingJobs()) {
      if (this.delivering.has(job.id)) continue;
      this.delivering.add(job.id);
      this.ctx.waitUntil(this.deliver(job));
    }
  }

  private async deliver(job: Job): Promise<void> {
    try {
      await this.options.onOutcome!(job, this.env);
    } catch (error) {
      this.logLine({ event: "lane.on_outcome_failed", lane: this.store.laneName, jobId: job.id, message: String(error) });
    } finally {
      this.delivering.delete(job.id);
    }
    this.store.markSettled(job.id);
    this.afterChange();
  }

  private transitioned(t: Transition): void {
    if (this.options.log === false && !this.options.onTransition) return;
    const event: TransitionEvent = {
      event: "job.transition",
      lane: this.store.laneName,
      jobId: t.job.id,
      kind: t.job.kind,
      from: t.from,
      to: t.to,
      outcome: t.job.outcome,
      attempt: t.job.attempts,
      generation: t.job.generation,
      durationMs: t.durationMs,
    };
    // Told only once the write is durable: a crash before the commit must not leave a line (or a
    // hook call) for a transition that never happened. The price: a crash right after the commit
    // can lose the line instead.
    this.unannounced.push(event);
    if (this.unannounced.length === 1) void this.ctx.storage.sync().then(() => this.announce());
  }

  private announce(): void {
    const events = this.unannounced;
    this.unannounced = [];
    for (const event of events) {
      if (this.options.log !== false) this.logLine(event);
      if (!this.options.onTransition) continue;
      try {
        this.options.onTransition(event);
      } catch (error) {
        this.logLine({ event: "lane.on_transition_failed", lane: event.lane, jobId: event.jobId, message: String(error) });
      }
    }
  }

  private logLine(record: object): void {
    console.log(JSON.stringify(record));
  }

  /** The registry learns a lane once, on its first job: not a call per enqueue. */
  private async register(): Promise<void> {
    if (this.store.settings().registered) return;
    const registry = (this.env as Partial<SwitchyardEnv>).REGISTRY;
    if (!registry) return;
    try {
      await registry.getByName(REGISTRY_NAME).register(this.store.laneName, this.clock.now());
      this.store.setName(this.store.laneName);
      this.store.markRegistered();
    } catch (error) {
      this.logLine({ event: "lane.register_failed", lane: this.store.laneName, message: String(error) });
    }
  }

  private toSpec(request: EnqueueRequest): Result<JobSpec> {
    const payload = serializeJson(request.payload, "payload");
    if (!payload.ok) return payload;
    const now = this.clock.now();
    return ok({
      id: request.id ?? this.entropy.id(),
      kind: request.kind,
      payload: payload.value,
      queue: request.queue ?? null,
      priority: request.priority ?? 0,
      runAt: request.runAt ?? now + (request.delayMs ?? 0),
      maxAttempts: request.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      backoffBaseMs: request.backoff?.baseMs ?? DEFAULT_BACKOFF_BASE_MS,
      backoffMaxMs: request.backoff?.maxMs ?? DEFAULT_BACKOFF_MAX_MS,
      timeoutMs: request.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxRecoveries: request.recovery?.maxRecoveries ?? DEFAULT_MAX_RECOVERIES,
      recoveryWindowMs: request.recovery?.windowMs ?? DEFAULT_RECOVERY_WINDOW_MS,
    });
  }
}

/** Builds a lane class with executors and hooks, to export from a Worker under its binding's class name. */
export function defineLane<E = SwitchyardEnv>(options: LaneOptions<E>): typeof Lane {
  return class extends Lane {
    static override options = options as LaneOptions; // the runtime hands the lane the Worker's env: E
  };
}

function parse<T>(schema: ZodType<T>, input: unknown): Result<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return ok(parsed.data);
  const details = toIssues(parsed.error);
  return fail("invalid_request", `invalid request: ${details.map((d) => `${d.path.join(".") || "(body)"}: ${d.message}`).join("; ")}`, details);
}

function parseId(id: unknown): Result<string> {
  const parsed = Name.safeParse(id);
  return parsed.success ? ok(parsed.data) : fail("invalid_request", "invalid job id", toIssues(parsed.error, ["id"]));
}

function decodeCursor(cursor: string): number | null {
  if (!cursor.startsWith(CURSOR_PREFIX)) return null;
  const seq = Number.parseInt(cursor.slice(CURSOR_PREFIX.length), 36);
  return Number.isSafeInteger(seq) && seq >= 0 && cursor === CURSOR_PREFIX + seq.toString(36) ? seq : null;
}
