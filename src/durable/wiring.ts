/**
 * What a lane is made of, wired together: the store and every room beside it (checkpoints,
 * schedules, retention, queues, failure, events, waiters, outcomes), the dispatcher, the wake and
 * the belt, and the few things that join them (the computed wake, recovery, cancellation wind-ups,
 * lost attempts, registering with the registry). `lane.ts` keeps the RPC surface and the alarm; it
 * validates, calls a room here, and asks the wake for a flush.
 */
import { fail, ok, type Result } from "../shared/errors.js";
import { ABORT_GRACE_MS, DISPATCH_LEASE_MS, FAIL_LANE_BATCH, MAX_PAGE_BYTES, RECOVERY_BATCH } from "../shared/defaults.js";
import type { BatchAnswer, FailLaneAnswer } from "../shared/answers.js";
import type { Clock, Entropy } from "../shared/clock.js";
import type { ClaimedJob, Job, LaneInfo, PulledJob } from "../shared/job.js";
import { log, type LostCause, type LostEvent, type TransitionEvent } from "../shared/log.js";
import type { EnqueueRequest } from "../shared/schemas.js";
import { Belt, type WakeCheck } from "./wake/belt.js";
import { CheckpointStore } from "./steps/checkpoints.js";
import { Dispatcher } from "./attempts/dispatcher.js";
import type { EnqueueDone } from "./enqueue/enqueue-text.js";
import type { SwitchyardEnv } from "./env.js";
import { LaneEvents } from "./events/sockets.js";
import type { ExecutorRegistry } from "./attempts/executors.js";
import { withoutToken, type Inserted, type JobSpec } from "./store/job-row.js";
import { LaneFailure } from "./operator/fail-lane.js";
import { LaneSettingsStore } from "./store/settings.js";
import { LaneStore } from "./store/job-store.js";
import { migrate, type SchemaState, SCHEMA_VERSION } from "./store/migrations.js";
import { OutcomeDelivery } from "./attempts/outcomes.js";
import { QueueStore } from "./operator/queues.js";
import { REGISTRY_NAME } from "./registry.js";
import { parseEnqueue } from "./input.js";
import { RetentionStore } from "./operator/retention.js";
import { ScheduleStore } from "./schedules/schedules.js";
import { toSpec } from "./enqueue/spec.js";
import { TransitionLog } from "./events/transitions.js";
import { Waiters, type ClaimAsk } from "./attempts/waiters.js";
import { earliest, Wake, wakeTerms, type Pump } from "./wake/wake.js";

/** How a lane class is built (`defineLane`). */
export interface LaneOptions<E = SwitchyardEnv> {
  /** Kind → in-process executor. Kinds not listed here wait for pull consumers. */
  executors?: ExecutorRegistry<E>;
  /**
   * Receives every recorded outcome, at least once: the outcome is stored as `completing`, handed
   * here, then settled. A throw is logged and the job settles all the same.
   */
  onOutcome?: (job: Job, env: E) => void | Promise<void>;
  /** Receives every transition once durable (the same record as the log line). A throw is logged, never fatal. */
  onTransition?: (event: TransitionEvent) => void;
  /**
   * Receives every in-process attempt that lost its lease (its own outcome: neither completed nor
   * failed; its executor was aborted and wrote nothing), with the job as the attempt saw it.
   */
  onLost?: (event: LostEvent, job: Job) => void;
  /** One JSON log line per transition and per lost attempt on stdout; default true. */
  log?: boolean;
  /** How long an aborted executor that has not returned keeps its slot (default 30 s). */
  abortGraceMs?: number;
}

export class LaneRooms {
  readonly schema: SchemaState;
  readonly lane: string;
  readonly store: LaneStore;
  /** What attempts record for their jobs: checkpoints and progress. */
  readonly checkpoints: CheckpointStore;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  readonly schedules: ScheduleStore;
  readonly wake: Wake;
  /** Outcomes are recorded `completing` and delivered to the lane's hook, then settled. */
  private readonly deliverOutcomes: boolean;
  readonly belt: Belt;
  readonly transitions: TransitionLog;
  readonly events: LaneEvents;
  readonly outcomes: OutcomeDelivery<SwitchyardEnv>;
  readonly retention: RetentionStore;
  readonly queues: QueueStore;
  readonly failure: LaneFailure;
  readonly waiters: Waiters<PulledJob>;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: SwitchyardEnv,
    private readonly options: LaneOptions,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
  ) {
    // Synchronous SQL: done before any request can reach the object.
    this.schema = migrate(ctx.storage, clock.now());
    const lane = (this.lane = ctx.id.name ?? (this.schema.ok ? LaneSettingsStore.storedName(ctx.storage) : null) ?? ctx.id.toString());
    const deliverOutcomes = options.onOutcome !== undefined;
    this.deliverOutcomes = deliverOutcomes;
    this.transitions = new TransitionLog({ lane, log: options.log !== false, onTransition: options.onTransition, durable: () => ctx.storage.sync(), now: clock.now });
    this.store = new LaneStore(ctx.storage, clock, entropy, { lane, deliverOutcomes, transitions: this.transitions });
    this.events = new LaneEvents(ctx, { listen: (listener) => this.transitions.listen(listener), counts: () => this.store.counts() });
    this.retention = new RetentionStore(ctx.storage, clock);
    this.queues = new QueueStore(ctx.storage);
    this.failure = new LaneFailure(ctx.storage, clock, { deliverOutcomes, transitions: this.transitions });
    this.schedules = new ScheduleStore(ctx.storage, clock, lane, this);
    const registry = () => (env as Partial<SwitchyardEnv>).REGISTRY?.getByName(REGISTRY_NAME);
    this.belt = new Belt(ctx.storage, { lane, registry, waitUntil: (p) => ctx.waitUntil(p) });
    this.checkpoints = new CheckpointStore(ctx.storage, clock, { lane, missed: (id, token, op) => this.store.missed(id, token, op) });
    this.wake = new Wake({
      computeWake: (pumped) => this.computeWake(pumped),
      flushSteps: (pump) => this.flushSteps(pump),
      lookAgain: () => this.dispatcher.lookAgain(),
      freedKeepsWake: (leasesTaken) => this.freedKeepsWake(leasesTaken),
      setAlarm: (at) => ctx.storage.setAlarm(at),
      failed: (what, error) => log({ event: what === "flush" ? "lane.flush_failed" : "lane.alarm_write_failed", lane, message: String(error) }),
    });
    this.dispatcher = new Dispatcher<SwitchyardEnv>(
      {
        store: this.store,
        checkpoints: this.checkpoints,
        clock,
        env,
        changed: (onlyFreed) => this.wake.afterChange(onlyFreed ? "freed" : true),
        lost: (job, cause, message) => this.lost(job, cause, message),
        stuck: (job, abortedForMs) => log({ event: "executor.stuck", lane, jobId: job.id, kind: job.kind, generation: job.generation, abortedForMs }),
        waitUntil: (promise) => ctx.waitUntil(promise),
        abortGraceMs: options.abortGraceMs ?? ABORT_GRACE_MS,
      },
      options.executors ?? {},
    );
    this.waiters = new Waiters({ claim: (ask) => this.claimFor(ask), release: (id, token) => void this.store.release(id, token) });
    this.outcomes = new OutcomeDelivery<SwitchyardEnv>({ store: this.store, env, waitUntil: (p) => ctx.waitUntil(p), changed: () => this.wake.afterChange() }, options.onOutcome);
  }

  /** Run once before any request reaches the object (`blockConcurrencyWhile`). */
  async start(): Promise<void> {
    if (!this.schema.ok) {
      log({ event: "lane.schema_too_new", lane: this.lane, stored: this.schema.stored, supported: SCHEMA_VERSION });
      return;
    }
    this.wake.know(await this.ctx.storage.getAlarm());
    // Jobs whose executors died with a previous instance are recovered now, not at lease expiry.
    if (this.store.expireLaneLeases() > 0) this.recoverExpired();
    this.outcomes.settleUndeliverable();
    // Re-arm on start: a lost alarm write heals here, and due jobs start again after a restart.
    this.wake.afterChange();
    this.wake.flush();
  }

  /** The alarm's work: fire due schedules, recover, reconcile, wind up, deliver, keep retention, flush. */
  async alarm(): Promise<void> {
    this.wake.consumed();
    const fired = this.schedules.fireDue();
    this.recoverExpired();
    this.dispatcher.reconcile();
    this.windUpCancels();
    this.outcomes.settleUndeliverable();
    this.retention.pass(this.store.settings.read().retention);
    this.wake.afterChange();
    this.wake.flush(); // within the handler: an alarm set after it returns could be taken for consumed
    if (fired > 0) await this.register();
  }

  /** The belt's check (`Lane.checkWake`): the stored alarm becomes the computed wake; an idle lane lets the belt stop watching. */
  async checkWake(): Promise<WakeCheck> {
    const alarmWas = await this.ctx.storage.getAlarm();
    this.wake.know(alarmWas);
    const wakeAt = this.computeWake();
    const rearmed = wakeAt !== null && (alarmWas === null || alarmWas > wakeAt);
    if (rearmed) log({ event: "lane.alarm_rearmed", lane: this.lane, alarmWas, wakeAt });
    this.wake.rearm(false);
    if (wakeAt === null) this.belt.idle();
    return { wakeAt, alarmWas, rearmed, watch: wakeAt !== null };
  }

  /** Fails up to a batch of queued and running jobs (running first) and aborts their in-process attempts. */
  failLane(reason: string): FailLaneAnswer {
    const { failed, running } = this.failure.fail(reason, FAIL_LANE_BATCH);
    // Its lease is gone with the job settled: the attempt is lost (a cancelled one, cancelled).
    for (const job of running) this.dispatcher.abort(job.id, job.outcome === "cancelled" ? "cancelled" : "lost", "settled");
    const { queued, running: stillRunning } = this.store.counts();
    return { failed, more: queued + stillRunning > 0 };
  }

  /** A lane of a newer schema refuses every call, changing nothing. */
  refusal<T>(): Result<T> | null {
    if (this.schema.ok) return null;
    return fail("lane_schema_too_new", `lane ${this.lane} was written by a newer Switchyard (schema ${this.schema.stored}; this one knows ${SCHEMA_VERSION})`);
  }

  /** A claim for a pull consumer: kinds without an in-process executor, with their checkpoints, at most 4 MiB of jobs. */
  claimFor(ask: ClaimAsk): PulledJob[] {
    return this.checkpoints.attach(this.store.claimDue({
      kinds: ask.kinds,
      excludeKinds: this.dispatcher.kinds,
      excludeIds: [],
      heldSlots: this.dispatcher.heldSlots(),
      max: ask.max,
      leaseMs: ask.leaseMs,
      maxBytes: MAX_PAGE_BYTES,
      holder: "consumer",
    }));
  }

  laneInfo(): Result<LaneInfo> {
    const { concurrency, paused, retention } = this.store.settings.read();
    const { laneCounts } = this.store;
    return ok({
      lane: this.lane, counts: laneCounts.counts(), paused, concurrency, nextWakeAt: this.computeWake(),
      retention, stats: laneCounts.stats(), oldestDueAt: laneCounts.oldestDueAt(this.clock.now()),
    });
  }

  /** The computed wake: what the rows and this process's memory ask for now (wake.ts). The belt follows it. */
  computeWake(pumped = false): number | null {
    // Right after a pump, every due in-process head with a free slot was claimed: none to look for.
    const held = this.dispatcher.heldSlots();
    const rows = this.store.wakeReads.rows(pumped ? [] : this.dispatcher.kinds, this.dispatcher.busyJobIds(), held);
    const heldCancels = rows.cancels > 0 ? this.store.wakeReads.laneCancels().filter((c) => this.dispatcher.holds(c.id)).length : 0;
    const { concurrency, paused, retention } = this.store.settings.read();
    const rooms = { retentionPass: this.retention.nextPass(retention), nextScheduleFire: this.schedules.nextFire() };
    this.lastWakeSaw = { full: !paused && rows.running + held >= concurrency, retention: rooms.retentionPass };
    const wake = earliest(wakeTerms({ ...rows, ...rooms }, { delivering: this.outcomes.inHand, heldCancels }, this.clock.now()));
    this.belt.noteWake(wake);
    return wake;
  }

  /** What the last computed wake saw that a freed slot could change: a full lane (no head term), the retention term. */
  private lastWakeSaw: { full: boolean; retention: number | null } = { full: true, retention: null };

  /**
   * Whether a flush after nothing but completions outside any queue (a freed slot) may leave the wake
   * as the last re-arm stored it (issue 10). Such a completion ends a lease (a later wake) and adds a
   * settled job; it makes the wake earlier only by freeing a slot in a lane that was full (the earliest
   * future head becomes a term), by settling the first job retention keeps an eye on (the retention
   * term appears), or by an outcome to deliver (a lane with an outcome hook). `leasesTaken`: jobs
   * started at once since the last re-arm, whose leases are earlier terms while any attempt here runs.
   */
  freedKeepsWake(leasesTaken: boolean): boolean {
    const saw = this.lastWakeSaw;
    if (leasesTaken && this.dispatcher.running) return false;
    return !this.deliverOutcomes && !saw.full && (saw.retention !== null || this.store.settings.read().retention.completedMs === null);
  }

  /**
   * The registry learns a lane once, on its first job: not a call per enqueue. Null when there is
   * nothing to wait for (known already, or no registry), so that an enqueue can answer in its turn.
   */
  register(): Promise<void> | null {
    if (this.store.settings.read().registered) return null;
    const registry = (this.env as Partial<SwitchyardEnv>).REGISTRY;
    if (!registry) return null;
    return this.registerWith(registry);
  }

  private async registerWith(registry: SwitchyardEnv["REGISTRY"]): Promise<void> {
    try {
      await registry.getByName(REGISTRY_NAME).register(this.lane, this.clock.now());
      this.store.settings.markRegistered();
    } catch (error) {
      log({ event: "lane.register_failed", lane: this.lane, message: String(error) });
    }
  }

  /**
   * Starts a new job in its enqueue's turn when nothing can pass it (issue 10): a due job of an
   * in-process kind outside any queue, the lane not paused, a slot free, the dispatcher caught up (no
   * due job waits) and no queued job due since its last look (the last computed wake, never later than
   * the earliest future head while a slot is free, is still ahead). Inserted running in one statement and started before the
   * write commits: the output gate holds back the enqueue's answer and whatever the executor sends
   * until it does (README, "Starting a job in its enqueue's turn"). Null: enqueue it queued.
   */
  startAtOnce(spec: JobSpec, now: number): Result<Inserted> | null {
    if (spec.queue !== null || !this.dispatcher.caughtUp || !this.dispatcher.kinds.includes(spec.kind)) return null;
    const wake = this.wake.lastComputed;
    if (spec.runAt > now || wake === undefined || (wake !== null && wake <= now)) return null;
    const { concurrency, paused } = this.store.settings.read();
    if (paused) return null; // a full lane: the insert's own condition refuses it
    const started = this.store.insertStarted(spec, DISPATCH_LEASE_MS, this.dispatcher.heldSlots(), concurrency, now);
    if (!started) return null;
    this.dispatcher.start(started.job, started.seq);
    this.wake.leaseTaken(started.job.lease.expiresAt);
    return ok({ status: "queued", at: started.at });
  }

  /** One enqueue, all but registering the lane: its spec and what the insert did, or the refusal. */
  enqueue(input: unknown): Result<EnqueueDone> {
    const refused = this.refusal<EnqueueDone>();
    if (refused) return refused;
    const request = parseEnqueue(input);
    if (!request.ok) return request;
    // One reading of the clock: a job due now has `runAt` = `createdAt`, and the client rebuilds both from it (enqueue-text.ts).
    const now = this.clock.now();
    const spec = this.toSpec(request.value, now);
    if (!spec.ok) return spec;
    const started = this.startAtOnce(spec.value, now); // its wake is seen to
    const inserted = started ?? this.store.insertJob(spec.value, now);
    if (!inserted.ok) return inserted;
    if (!started) this.enqueued(spec.value, inserted.value.status, now);
    return ok({ spec: spec.value, inserted: inserted.value });
  }

  /** A job enqueued queued (not started at once): the flush it calls for, if any. */
  enqueued(job: JobSpec, status: "queued" | "duplicate", now: number): void {
    if (status !== "queued") return; // a duplicate changes nothing
    const inProcess = this.dispatcher.kinds.includes(job.kind);
    // A due job of a pull-only kind outside any queue changes no wake term (none counts due pull jobs,
    // and it heads no queue): the alarm stays as it is, unless held claims wait for it (the flush answers them).
    const quiet = job.queue === null && job.runAt <= now && !inProcess && this.waiters.size === 0;
    if (!(quiet && this.wake.storedAlarm !== undefined)) this.wake.afterChange(inProcess);
  }

  /**
   * A batch enqueue (1..1000 jobs, all or nothing), all but registering the lane: the specs at one
   * reading of the clock, one insert, one flush if any job is of an in-process kind.
   */
  enqueueBatch(requests: readonly EnqueueRequest[]): Result<BatchAnswer["results"]> {
    const now = this.clock.now();
    const specs = this.toSpecs(requests, now);
    if (!specs.ok) return specs;
    const inserted = this.store.insertJobs(specs.value, now);
    if (inserted.ok) this.wake.afterChange(specs.value.some((spec) => this.dispatcher.kinds.includes(spec.kind)));
    return inserted;
  }

  /** `now`: the enqueue's one reading of the clock, which its insert writes as `createdAt` too. */
  toSpec(request: EnqueueRequest, now: number): Result<JobSpec> {
    return toSpec(request, now, () => this.entropy.id());
  }

  /** The specs of many requests at one reading of the clock, or the first refusal, its place said (`jobs[i]: …`). */
  toSpecs(requests: readonly EnqueueRequest[], now: number): Result<JobSpec[]> {
    const specs: JobSpec[] = [];
    for (const [index, request] of requests.entries()) {
      const spec = this.toSpec(request, now);
      if (!spec.ok) return fail(spec.error.code, `jobs[${index}]: ${spec.error.message}`, { index });
      specs.push(spec.value);
    }
    return ok(specs);
  }

  private flushSteps(pump: Pump): void {
    this.dispatcher.settleCompletions();
    if (pump !== "none") this.dispatcher.pump(pump === "freed");
    this.waiters.answer();
    this.outcomes.deliverPending();
  }

  private recoverExpired(): void {
    // A full batch: there may be more.
    while (this.store.recoverExpired() === RECOVERY_BATCH);
  }

  /** Cancellations of in-process jobs whose attempt no executor here holds (it died with a bug): settled now. */
  private windUpCancels(): void {
    for (const { id, token } of this.store.wakeReads.laneCancels()) if (!this.dispatcher.holds(id)) this.store.settleCancelledAttempt(id, token);
  }

  /** An in-process attempt lost its lease: its own outcome, logged and told to `onLost`. */
  private lost(job: ClaimedJob, cause: LostCause, message: string): void {
    this.store.laneCounts.countLost();
    const event: LostEvent = { event: "job.lost", lane: this.lane, jobId: job.id, kind: job.kind, attempt: job.attempts, generation: job.lease.generation, cause, message };
    if (this.options.log !== false) log(event);
    const seen = withoutToken(job);
    const onLost = this.options.onLost;
    this.transitions.tell("onLost", onLost && ((e: LostEvent) => onLost(e, seen)), event);
  }
}
