/**
 * What a lane is made of, built and connected in one place: the store, the attempts' parts (claim,
 * fenced writes, cancellation, recovery, dispatcher, waiters, outcomes), steps, schedules, the
 * operator's parts, events, and the wake. Also the lane's life around them: its start, its alarm,
 * the belt's check, registering with the registry and the lost attempts' report. `lane.ts` keeps the
 * RPC surface: it validates, calls a part here, and asks the wake for a flush.
 */
import { fail, ok, type Result } from "../shared/errors.js";
import { ABORT_GRACE_MS, FAIL_LANE_BATCH, RECOVERY_BATCH } from "../shared/defaults.js";
import type { FailLaneAnswer } from "../shared/answers.js";
import type { Clock, Entropy } from "../shared/clock.js";
import { describeError } from "../shared/describe-error.js";
import type { ClaimedJob, Job, LaneInfo, PulledJob } from "../shared/job.js";
import { log, type LostCause, type LostEvent, type TransitionEvent } from "../shared/log.js";
import { Cancels } from "./attempts/cancel.js";
import { Claims } from "./attempts/claim.js";
import { Dispatcher } from "./attempts/dispatcher.js";
import type { ExecutorRegistry } from "./attempts/executors.js";
import { FencedWrites } from "./attempts/fenced-writes.js";
import { OutcomeDelivery } from "./attempts/outcomes.js";
import { Recovery } from "./attempts/recovery.js";
import { Waiters } from "./attempts/waiters.js";
import { Enqueue } from "./enqueue/enqueue.js";
import { Debouncer } from "./flow/debounce.js";
import { Dependencies } from "./deps/dependencies.js";
import { Outbox } from "./deps/outbox.js";
import { Expiry } from "./flow/expiry.js";
import { REGISTRY_NAME, type LanePeer, type RegistryPeer, type SwitchyardEnv } from "./env.js";
import { LaneEvents } from "./events/sockets.js";
import type { LaneReport } from "./metrics/exposition.js";
import { laneExposition } from "./metrics/merge.js";
import { startHistograms } from "./metrics/histograms.js";
import { readLaneReport } from "./metrics/lane-report.js";
import { MetricsReporter } from "./metrics/reporter.js";
import { TransitionLog } from "./events/transitions.js";
import { LaneFailure } from "./operator/fail-lane.js";
import { QueueStore } from "./operator/queues.js";
import { RetentionStore } from "./operator/retention.js";
import { ScheduleStore } from "./schedules/schedules.js";
import { selfShard } from "./schedules/shard-fires.js";
import { CheckpointStore } from "./steps/checkpoints.js";
import { withoutToken } from "./store/job-row.js";
import { JobStore } from "./store/job-store.js";
import { migrate, type SchemaState, SCHEMA_VERSION } from "./store/migrations.js";
import { ShardState } from "./shards/shard-state.js";
import { Watchers } from "./shards/watchers.js";
import { parseShardObjectName, shardObjectName } from "../shared/shards.js";
import { LaneSettingsStore } from "./store/settings.js";
import { AlarmSteps } from "./wake/alarm-steps.js";
import { KeyMoves, type KeyPeer } from "./shards/key-moves.js";
import { Belt, type WakeCheck } from "./wake/belt.js";
import { History } from "./history/history.js";
import { recordingOn } from "./history/recording.js";
import { WakeComputer } from "./wake/compute.js";
import { WakeReads } from "./wake/reads.js";
import { Wake, type Pump } from "./wake/wake.js";

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
  /**
   * Whether this lane class records its per-minute history and metrics; overrides the Worker's
   * `RECORDING` (history/recording.ts). Unset: as `RECORDING` says (on unless `"off"`).
   */
  recording?: boolean;
  /**
   * Whether the lane reports its metrics to the registry for `GET /v1/metrics` (metrics/reporter.ts)
   * while it records; default true. Off, a pending report is never a term of the lane's wake.
   */
  metricsReports?: boolean;
}

/** How often, at most, the alarm drops the rows of kinds and queues left with nothing. */
const HOUSEKEEPING_EVERY_MS = 60_000;

/** The version a lane records on its leases when the Worker has no version metadata binding: every instance the same. */
export const UNVERSIONED = "unversioned";

export class LaneWiring {
  readonly schema: SchemaState;
  readonly lane: string;
  readonly store: JobStore;
  readonly claims: Claims;
  readonly fenced: FencedWrites;
  readonly cancels: Cancels;
  readonly recovery: Recovery;
  readonly enqueue: Enqueue;
  /** What attempts record for their jobs: checkpoints and progress. */
  readonly checkpoints: CheckpointStore;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  readonly schedules: ScheduleStore;
  readonly wake: Wake;
  readonly wakeComputer: WakeComputer;
  readonly belt: Belt;
  readonly transitions: TransitionLog;
  readonly events: LaneEvents;
  readonly outcomes: OutcomeDelivery<SwitchyardEnv>;
  readonly retention: RetentionStore;
  readonly queues: QueueStore;
  /** TTL: queued jobs not started by their expiry are settled (flow/expiry.ts). */
  readonly expiry: Expiry;
  readonly failure: LaneFailure;
  readonly waiters: Waiters<PulledJob>;
  /** Jobs that wait for jobs: registrations, notices applied, dependencies read (deps/). */
  readonly dependencies: Dependencies;
  /** The notices this lane owes other jobs' lanes (deps/outbox.ts). */
  readonly outbox: Outbox;
  /** The lane's metrics reports to the registry (metrics/reporter.ts). */
  readonly metrics: MetricsReporter;
  /** The per-minute history (history/history.ts), and whether this lane records it. */
  readonly history: History;
  readonly recording: boolean;
  /** This object's shard of its lane: index, count, ownership, reservations (shards/shard-state.ts). */
  readonly shard: ShardState;
  /** A sharded lane's held claims wait here without claiming (shards/watchers.ts). */
  readonly watchers: Watchers;
  /** The alarm's steps, each on its own, with its backoff after a throw (wake/alarm-steps.ts). */
  readonly alarmSteps: AlarmSteps;
  /** A debounce key's queued job moved between shards (shards/key-moves.ts). */
  readonly keyMoves: KeyMoves;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: SwitchyardEnv,
    private readonly options: LaneOptions,
    private readonly clock: Clock,
    entropy: Entropy,
  ) {
    // Synchronous SQL: done before any request can reach the object.
    this.schema = migrate(ctx.storage, clock.now());
    const storage = ctx.storage;
    const objectName = ctx.id.name ?? (this.schema.ok ? LaneSettingsStore.storedName(storage) : null) ?? ctx.id.toString();
    // An object woken by its alarm after a restart is not told its name: it reads the one stored here
    // by an instance that was (every shard's own, `L#i`, so that it still knows its lane and index).
    if (ctx.id.name !== undefined && this.schema.ok) LaneSettingsStore.storeName(storage, ctx.id.name);
    // Shard i of lane L is the object `L#i`; its jobs answer lane L (shards/shard-state.ts).
    const { lane: laneName, index } = parseShardObjectName(objectName);
    const lane = (this.lane = laneName);
    this.shard = new ShardState(storage, lane, index);
    const version = (env as Partial<SwitchyardEnv>).CF_VERSION_METADATA?.id ?? UNVERSIONED;
    this.alarmSteps = new AlarmSteps(objectName, clock);
    const deliverOutcomes = options.onOutcome !== undefined;
    const waitUntil = (promise: Promise<unknown>) => ctx.waitUntil(promise);
    this.recording = recordingOn(env as Partial<SwitchyardEnv>, options.recording);
    this.history = new History(storage, clock);
    this.transitions = new TransitionLog({ lane, log: options.log !== false, onTransition: options.onTransition, durable: () => storage.sync(), now: clock.now });
    const store = (this.store = new JobStore(storage, clock, entropy, { lane, deliverOutcomes, transitions: this.transitions }));
    this.cancels = new Cancels(storage, clock, store);
    this.fenced = new FencedWrites(storage, clock, entropy, store, this.cancels);
    this.recovery = new Recovery(storage, clock, store, this.cancels, version);
    this.checkpoints = new CheckpointStore(storage, clock, {
      lane,
      missed: (id, token, op) => this.fenced.missed(id, token, op),
      holds: (id, token) => this.fenced.holds(id, token),
    });
    this.queues = new QueueStore(storage);
    const peer = (name: string) => this.lanes().getByName(name);
    this.dependencies = new Dependencies(storage, clock, store, { lane, objectName, shard: this.shard, peer });
    this.outbox = new Outbox(storage, clock, entropy, { lane, objectName, apply: (notices) => this.dependencies.apply(notices), peer, waitUntil, changed: () => this.wake.afterChange(), mayNotify: () => this.dependencies.mayNotify });
    this.claims = new Claims(storage, clock, entropy, {
      lane, version, settings: store.settings, runningCount: () => store.laneCounts.running(), queuesMatter: () => this.queues.anyRateLimited(),
      checkpoints: this.checkpoints, dependencies: this.dependencies, transitions: this.transitions,
    });
    this.expiry = new Expiry(storage, clock, store);
    this.events = new LaneEvents(ctx, { listen: (listener) => this.transitions.listen(listener), counts: () => store.counts() });
    this.retention = new RetentionStore(storage, clock);
    this.failure = new LaneFailure(storage, clock, { deliverOutcomes, transitions: this.transitions });
    // The belt watches objects, not lanes: a shard's own name, so that the cron checks each shard's alarm.
    this.belt = new Belt(storage, { lane: objectName, registry: () => this.registry(), waitUntil });
    // Every shard reports, under its object's name and with its shard count: the registry merges a
    // sharded lane's reports into the lane's (docs/concepts.md "Sharded lanes").
    const reports = this.recording && options.metricsReports !== false && (env as Partial<SwitchyardEnv>).REGISTRY !== undefined;
    this.metrics = new MetricsReporter({
      object: objectName, clock, reports, registry: () => this.registry(), read: () => this.metricsReport(), waitUntil,
      changed: () => this.wake.afterChange(false),
      hasReported: () => store.settings.read().metricsReported,
      setReported: (on) => store.settings.markMetricsReported(on),
    });
    this.wake = new Wake({
      computeWake: (pumped) => this.wakeComputer.compute(pumped),
      flushSteps: (pump) => this.flushSteps(pump),
      lookAgain: () => this.dispatcher.lookAgain(),
      freedKeepsWake: (leasesTaken) => this.wakeComputer.freedKeepsWake(leasesTaken),
      setAlarm: (at) => storage.setAlarm(at),
      failed: (what, error) => log({ event: what === "flush" ? "lane.flush_failed" : "lane.alarm_write_failed", lane, message: describeError(error) }),
      now: () => clock.now(),
      lost: (alarmWas, wakeAt) => log({ event: "lane.alarm_lost", lane: objectName, alarmWas, wakeAt }),
    });
    this.dispatcher = new Dispatcher<SwitchyardEnv>(
      {
        lane,
        claims: this.claims,
        fenced: this.fenced,
        cancels: this.cancels,
        checkpoints: this.checkpoints,
        dependencies: this.dependencies,
        clock,
        env,
        changed: (onlyFreed) => this.wake.afterChange(onlyFreed ? "freed" : true),
        lost: (job, cause, message) => this.lost(job, cause, message),
        stuck: (job, abortedForMs) => log({ event: "executor.stuck", lane, jobId: job.id, kind: job.kind, generation: job.generation, abortedForMs }),
        waitUntil,
        abortGraceMs: options.abortGraceMs ?? ABORT_GRACE_MS,
      },
      options.executors ?? {},
    );
    this.waiters = new Waiters({ claim: (ask) => this.claims.forConsumer(ask, this.dispatcher), release: (id, token) => this.fenced.release(id, token).ok });
    const watchers = (this.watchers = new Watchers(() => store.laneCounts.oldestDueAt(clock.now()) !== null));
    const waiters = this.waiters;
    // Held claims and a sharded lane's watchers alike call for a flush when a job arrives.
    const held = { get size() { return waiters.size + watchers.size; } };
    this.outcomes = new OutcomeDelivery<SwitchyardEnv>(storage, { store, clock, env, waitUntil, changed: () => this.wake.afterChange() }, options.onOutcome);
    const debouncer = new Debouncer(storage, store);
    this.keyMoves = new KeyMoves(storage, clock, { store, shard: this.shard, debouncer, peer: (i) => peer(shardObjectName(lane, i)) as unknown as KeyPeer, changed: () => this.wake.afterChange(), dependentsArrived: () => this.dependencies.dependentsArrived() });
    this.enqueue = new Enqueue(clock, entropy, {
      store, debouncer, dependencies: this.dependencies, dispatcher: this.dispatcher, wake: this.wake, waiters: held, version, shard: this.shard,
      metrics: this.metrics,
    });
    // A sharded lane's fires go to the shards of their jobs, shard 0 answered in place (schedules/shard-fires.ts).
    this.schedules = new ScheduleStore(storage, clock, lane, this.enqueue, { shard: this.shard, lanes: () => this.lanes(), self: () => selfShard(this, clock), changed: () => this.wake.afterChange(false) });
    this.wakeComputer = new WakeComputer({
      clock, settings: store.settings, reads: new WakeReads(storage.sql, clock, store.settings, () => this.queues.anyRateLimited()), cancels: this.cancels,
      dispatcher: this.dispatcher, outcomes: this.outcomes, retention: this.retention, schedules: this.schedules, belt: this.belt, deliverOutcomes,
      heldClaims: () => held.size, outbox: this.outbox, mayNotify: () => this.dependencies.mayNotify,
      reportDueAt: () => this.metrics.dueAt(), alarmSteps: this.alarmSteps, keyMoveAt: () => (this.shard.count() > 1 ? this.keyMoves.nextAt() : null),
    });
  }

  /** Run once before any request reaches the object (`blockConcurrencyWhile`). */
  async start(): Promise<void> {
    if (!this.schema.ok) {
      log({ event: "lane.schema_too_new", lane: this.lane, stored: this.schema.stored, supported: SCHEMA_VERSION });
      return;
    }
    this.history.start(this.recording);
    startHistograms(this.ctx.storage, this.recording);
    this.metrics.withdraw();
    // An overdue stored alarm is taken for lost by the re-arm below, and written again.
    this.wake.know(await this.ctx.storage.getAlarm());
    // Jobs whose executors died with a previous instance are given back or recovered now, not at lease expiry.
    const { givenBack, expired } = this.recovery.afterRestart();
    if (givenBack + expired > 0) log({ event: "lane.leases_after_restart", lane: this.lane, version: this.recovery.version, givenBack, expired });
    if (expired > 0) this.recoverExpired();
    this.outcomes.settleUndeliverable();
    // Re-arm on start: a lost alarm write heals here, and due jobs start again after a restart.
    this.wake.afterChange();
    this.wake.flush();
  }

  /**
   * The alarm's work: fire due schedules, recover, reconcile, wind up, deliver, keep retention, flush.
   * Each step stands alone (wake/alarm-steps.ts): one that throws is logged and tried again after a
   * backoff, and the others still run.
   */
  async alarm(): Promise<void> {
    this.wake.consumed();
    const steps = this.alarmSteps;
    const fired = steps.run("fires", () => this.schedules.fireDue()) ?? 0;
    steps.run("recovery", () => this.recoverExpired());
    steps.run("reconcile", () => this.dispatcher.reconcile());
    steps.run("windUp", () => this.windUpCancels());
    steps.run("expiry", () => this.expiry.expireDue());
    steps.run("undeliverable", () => this.outcomes.settleUndeliverable());
    steps.run("retention", () => this.retention.pass(this.store.settings.read().retention));
    steps.run("outbox", () => this.outbox.deliver());
    steps.run("housekeeping", () => this.housekeeping());
    this.wake.afterChange();
    steps.run("flush", () => this.wake.flush()); // within the handler: an alarm set after it returns could be taken for consumed
    this.comeBackForFailedSteps();
    // A sharded lane's fires sent to other shards, answered (a crash meanwhile: the alarm runs again).
    await steps.runAsync("sent", () => this.schedules.sent());
    // Moves exist only on a lane of several shards (resharding waits for them): one shard reads nothing.
    if (this.shard.count() > 1) await steps.runAsync("keyMoves", () => this.keyMoves.deliverDue());
    this.comeBackForFailedSteps();
    if (fired > 0) await this.register();
  }

  /** Whatever step threw, the alarm comes back for it, even when the flush's own re-arm was what threw. */
  private comeBackForFailedSteps(): void {
    const retryAt = this.alarmSteps.retryAt();
    if (retryAt !== null) this.wake.armNoLaterThan(retryAt);
  }

  /** The belt's check (`Lane.checkWake`): the stored alarm becomes the computed wake; an idle lane lets the belt stop watching. */
  async checkWake(): Promise<WakeCheck> {
    const alarmWas = await this.ctx.storage.getAlarm();
    // A stored alarm overdue by more than the grace is lost (stored, never scheduled): the re-arm writes it again.
    this.wake.know(alarmWas);
    const rearmed = this.wake.rearm(false);
    const wakeAt = this.wake.lastComputed ?? null;
    if (rearmed && wakeAt !== null) log({ event: "lane.alarm_rearmed", lane: this.lane, alarmWas, wakeAt });
    if (wakeAt === null) this.belt.idle();
    return { wakeAt, alarmWas, rearmed, watch: wakeAt !== null };
  }

  /** Fails up to a batch (or `limit`) of queued and running jobs (running first) and aborts their in-process attempts. */
  failLane(reason: string, limit = FAIL_LANE_BATCH): FailLaneAnswer {
    const { failed, running } = this.failure.fail(reason, limit);
    // Its lease is gone with the job settled: the attempt is lost (a cancelled one, cancelled).
    for (const job of running) this.dispatcher.abort(job.id, job.outcome === "cancelled" ? "cancelled" : "lost", "settled");
    const { blocked, queued, running: stillRunning } = this.store.counts();
    return { failed, more: blocked + queued + stillRunning > 0 };
  }

  /**
   * Why this object's shard count may not change to `shards` now (null: it may): it holds jobs.
   * Schedules stay on shard 0 whatever the count, their fires routed by it (schedules/shard-fires.ts).
   */
  heldForResharding(_shards: number): string | null {
    const counts = this.store.counts();
    if (Object.values(counts).some((n) => n > 0)) return "holds jobs";
    // A debounce key's job on its way to another shard is a job of the lane too (shards/key-moves.ts).
    if (this.keyMoves.nextAt() !== null) return "moves a job to another shard";
    return null;
  }

  /** A write's answer about one job (`{job}`), after the flush it calls for: the fenced and operator rooms' writes. */
  jobChanged(answer: Result<Job>): Result<{ job: Job }> {
    this.wake.afterChange();
    return answer.ok ? ok({ job: answer.value }) : answer;
  }

  /** A lane of a newer schema refuses every call, changing nothing. */
  refusal<T>(): Result<T> | null {
    if (this.schema.ok) return null;
    return fail("lane_schema_too_new", `lane ${this.lane} was written by a newer Switchyard (schema ${this.schema.stored}; this one knows ${SCHEMA_VERSION})`);
  }

  laneInfo(): Result<LaneInfo> {
    const { concurrency, paused, retention, rateLimit, fairness } = this.store.settings.read();
    const { laneCounts } = this.store;
    return ok({
      lane: this.lane, counts: laneCounts.counts(), paused, concurrency, nextWakeAt: this.wakeComputer.compute(),
      retention, stats: laneCounts.stats(), oldestDueAt: laneCounts.oldestDueAt(this.clock.now()), kinds: laneCounts.kinds(),
      rateLimit, fairness,
      shards: this.shard.count(),
    });
  }

  /** The lane's metrics in the text exposition, read live (docs/api.md "Metrics"). */
  metricsText(): string {
    return laneExposition(this.lane, [this.metricsReport()], this.clock.now());
  }

  /** This object's metrics report as its rows say now, with the shard count it holds (metrics/lane-report.ts). */
  metricsReport(): LaneReport {
    const report = readLaneReport(this.ctx.storage.sql, this.store.laneCounts);
    return this.shard.count() > 1 ? { ...report, shards: this.shard.count() } : report;
  }

  /** This object's report and its clock's now: a sharded lane's route merges its shards' (metrics/merge.ts). */
  metricsReading(): { report: LaneReport; nowMs: number } {
    return { report: this.metricsReport(), nowMs: this.clock.now() };
  }

  /**
   * The registry learns a lane once, on its first job: not a call per enqueue. Null when there is
   * nothing to wait for (known already, or no registry), so that an enqueue can answer in its turn.
   */
  register(): Promise<void> | null {
    // The registry lists a sharded lane once, by its shard 0.
    if (this.shard.index !== 0 || this.store.settings.read().registered) return null;
    const registry = this.registry();
    return registry ? this.registerWith(registry) : null;
  }

  /** The lanes' namespace, as what a lane calls on another (dependencies). */
  private lanes(): { getByName(name: string): LanePeer } {
    return this.env.LANE;
  }

  /** The registry's stub, when the Worker binds one, as what the lane calls on it. */
  private registry(): RegistryPeer | undefined {
    return (this.env as Partial<SwitchyardEnv>).REGISTRY?.getByName(REGISTRY_NAME);
  }

  private async registerWith(registry: RegistryPeer): Promise<void> {
    try {
      await registry.register(this.lane, this.clock.now());
      this.store.settings.markRegistered();
    } catch (error) {
      log({ event: "lane.register_failed", lane: this.lane, message: describeError(error) });
    }
  }

  /** At most once a minute, on an alarm: the rows of kinds and queues with nothing left to count or keep go. */
  private housekeeping(): void {
    const now = this.clock.now();
    if (this.lastHousekeeping !== null && now - this.lastHousekeeping < HOUSEKEEPING_EVERY_MS) return;
    this.lastHousekeeping = now;
    this.store.laneCounts.pruneKinds();
    this.queues.prune();
  }

  private lastHousekeeping: number | null = null;

  private flushSteps(pump: Pump): void {
    this.dispatcher.settleCompletions();
    if (pump !== "none") this.dispatcher.pump(pump === "freed");
    this.waiters.answer();
    this.watchers.flushed();
    this.outcomes.deliverPending();
    this.metrics.noteChange();
  }

  private recoverExpired(): void {
    // A full batch: there may be more.
    while (this.recovery.recoverExpired() === RECOVERY_BATCH);
  }

  /** Cancellations of in-process jobs whose attempt no executor here holds (it died with a bug): settled now. */
  private windUpCancels(): void {
    for (const { id, token } of this.cancels.inProcess()) if (!this.dispatcher.holds(id)) this.cancels.settleAttempt(id, token);
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
