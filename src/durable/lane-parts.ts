/**
 * What a lane is made of, built and connected in one place: the store, the attempts' parts (claim,
 * fenced writes, cancellation, recovery, dispatcher, waiters, outcomes), steps, schedules, the
 * operator's parts, events, and the wake. Construction only: the lane's life around them (its start,
 * its alarm, the wake check, registration, lost attempts) is lane-lifecycle.ts, and what it answers
 * is lane.ts with the bodies of rpc/.
 */
import { ABORT_GRACE_MS } from "../shared/defaults.js";
import type { Clock, Entropy } from "../shared/clock.js";
import { describeError } from "../shared/describe-error.js";
import type { ClaimedJob, Job, PulledJob } from "../shared/job.js";
import { log, type LostCause, type LostEvent, type TransitionEvent } from "../shared/log.js";
import { Cancels } from "./attempts/cancel.js";
import { Claims } from "./attempts/claim.js";
import { Dispatcher } from "./attempts/dispatcher.js";
import { LOST_CAUSES, type ExecutorRegistry } from "./attempts/executors.js";
import { FencedWrites } from "./attempts/fenced-writes.js";
import { OutcomeDelivery } from "./attempts/outcomes.js";
import { Recovery } from "./attempts/recovery.js";
import { Waiters } from "./attempts/waiters.js";
import { Enqueue } from "./enqueue/enqueue.js";
import { PayloadStore } from "./payloads/payload-store.js";
import { Debouncer } from "./flow/debounce.js";
import { Dependencies } from "./deps/dependencies.js";
import { Waits } from "./waits/waits.js";
import { RemoteWaits } from "./waits/remote-waits.js";
import { WaitpointOutbox } from "./waits/waitpoint-outbox.js";
import { Outbox } from "./deps/outbox.js";
import { DeadLetterOutbox } from "./deadletters/outbox.js";
import { DeadLetterIntake } from "./deadletters/intake.js";
import { DeadLetterRouting } from "../routing/dead-letter-routing.js";
import { Expiry } from "./flow/expiry.js";
import { REGISTRY_NAME, type LanePeer, type RegistryPeer, type SwitchyardEnv } from "./env.js";
import { LaneEvents } from "./events/sockets.js";
import type { LaneReport } from "./metrics/exposition.js";
import { readLaneReport } from "./metrics/lane-report.js";
import { MetricsReporter } from "./metrics/reporter.js";
import { TransitionLog } from "./events/transitions.js";
import { LaneFailure } from "./operator/fail-lane.js";
import { QueueStore } from "./operator/queues.js";
import { SingletonQueues } from "./enqueue/singleton.js";
import { RetentionStore } from "./operator/retention.js";
import { ScheduleStore } from "./schedules/schedules.js";
import type { SelfShard } from "./schedules/shard-fires.js";
import { CheckpointStore } from "./steps/checkpoints.js";
import { JobStore } from "./store/job-store.js";
import { migrate, type SchemaState } from "./store/migrations.js";
import { ShardState } from "./shards/shard-state.js";
import { Watchers } from "./shards/watchers.js";
import { parseShardObjectName, shardObjectName } from "../shared/shards.js";
import { LaneSettingsStore } from "./store/settings.js";
import { AlarmSteps } from "./wake/alarm-steps.js";
import { KeyMoves, type KeyPeer } from "./shards/key-moves.js";
import { AlarmWatch } from "./wake/alarm-watch.js";
import { History } from "./history/history.js";
import { recordingOn } from "./history/recording.js";
import { WakeComputer } from "./wake/compute.js";
import { BulkActions } from "./bulk/bulk-actions.js";
import { WakeReads } from "./wake/reads.js";
import { Wake, type Pump } from "./wake/wake.js";
import { Waitpoints } from "./waitpoints/waitpoints.js";
import { StreamLog } from "./results/stream-log.js";
import { StreamReaders } from "./results/stream-readers.js";
import { KindChecks } from "./kinds/kind-checks.js";
import type { KindSchemas } from "../shared/kinds.js";

/** How a lane class is built (`defineLane`). */
export interface LaneOptions<E = SwitchyardEnv> {
  /** Kind → in-process executor. Kinds not listed here wait for pull consumers. */
  executors?: ExecutorRegistry<E>;
  /**
   * Kind → the Standard Schema of its payload and maybe of its result (docs/api.md "Typed kinds"): a
   * payload is checked at every enqueue, a result before completion (`invalid_payload`). Kinds not
   * listed take any JSON.
   */
  kinds?: KindSchemas;
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

/** The version a lane records on its leases when the Worker has no version metadata binding: every instance the same. */
export const UNVERSIONED = "unversioned";

/** What the parts call back into the lane's life and its RPC surface for. */
export interface LaneHooks {
  /** An in-process attempt lost its lease (lane-lifecycle.ts `lost`). */
  lost(job: ClaimedJob, cause: LostCause, message: string): void;
  /** Shard 0 as its own fires' routing calls it (rpc/self-shard.ts). */
  self(): SelfShard;
}

export class LaneParts {
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
  /** Whether the registry watches this lane for the cron's check of lost alarms (wake/alarm-watch.ts). */
  readonly alarmWatch: AlarmWatch;
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
  /** Jobs that wait on waitpoints: `dependsOn` items, attempts' waits, settlements heard (waits/). */
  readonly waits: Waits;
  /** Waits on waitpoints of other objects, both sides (waits/remote-waits.ts). */
  readonly remoteWaits: RemoteWaits;
  /** The notices this object's waitpoints owe waiters elsewhere (waits/waitpoint-outbox.ts). */
  readonly waitpointOutbox: WaitpointOutbox;
  /** The notices this lane owes other jobs' lanes (deps/outbox.ts). */
  readonly outbox: Outbox;
  /** The copies this lane owes its dead-letter lanes (deadletters/outbox.ts). */
  readonly deadLetters: DeadLetterOutbox;
  /** The copies other lanes' outboxes send this lane as their dead-letter lane, written once each (deadletters/intake.ts). */
  readonly deadLetterIntake: DeadLetterIntake;
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
  /** The lane's waitpoints: made, settled once, timed out and kept (waitpoints/waitpoints.ts). */
  readonly waitpoints: Waitpoints;
  /** Bulk requeue, cancel and delete by filter, a chunk a turn of the alarm (bulk/bulk-actions.ts). */
  readonly bulk: BulkActions;
  /** Jobs' event logs: their chunk writes and pages (results/stream-log.ts). */
  readonly streamLog: StreamLog;
  /** Stream readers held until their job has something new (results/stream-readers.ts). */
  readonly streamReaders: StreamReaders;
  /** Big payloads and results in the `PAYLOADS` bucket, and the objects the lane owes it (payloads/payload-store.ts). */
  readonly payloads: PayloadStore;

  /** The declared kinds' checks of payloads and results (kinds/kind-checks.ts). */
  readonly kinds: KindChecks;

  /** The Durable Object's state and its Worker's env, as the lane was given them. */
  readonly ctx: DurableObjectState;
  readonly env: SwitchyardEnv;

  constructor(ctx: DurableObjectState, env: SwitchyardEnv, options: LaneOptions, clock: Clock, entropy: Entropy, hooks: LaneHooks) {
    this.ctx = ctx;
    this.env = env;
    const kinds = (this.kinds = new KindChecks(options.kinds));
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
    this.payloads = new PayloadStore(storage, clock, entropy, objectName, (env as Partial<SwitchyardEnv>).PAYLOADS, (at) => this.wake.armNoLaterThan(at));
    this.cancels = new Cancels(storage, clock, store);
    this.waitpoints = new Waitpoints(storage, clock, entropy, lane, this.shard);
    this.fenced = new FencedWrites(storage, clock, entropy, store, this.cancels);
    this.recovery = new Recovery(storage, clock, store, this.cancels, version);
    this.checkpoints = new CheckpointStore(storage, clock, {
      lane,
      missed: (id, token, op) => this.fenced.missed(id, token, op),
      holds: (id, token) => this.fenced.holds(id, token),
    });
    const streamReaders = (this.streamReaders = new StreamReaders((seq, after) => this.streamLog.ready(seq, after)));
    this.streamLog = new StreamLog(storage, clock, { lane, missed: (id, token, op) => this.fenced.missed(id, token, op), job: (id) => store.getJob(id), written: () => streamReaders.poke() });
    this.queues = new QueueStore(storage, store.settings);
    const peer = (name: string) => this.lanes().getByName(name);
    this.dependencies = new Dependencies(storage, clock, store, { lane, objectName, shard: this.shard, peer });
    this.waits = new Waits(storage, clock, { lane, shard: this.shard, store, waitpoints: this.waitpoints, dependencies: this.dependencies, missed: (id, token, op) => this.fenced.missed(id, token, op) });
    this.waitpoints.waiters = this.dependencies.waits = this.waits;
    const remoteWaits = (this.waits.remote = this.remoteWaits = new RemoteWaits(storage, clock, {
      lane, objectName, shard: this.shard, waitpoints: this.waitpoints, peer,
      row: (id) => store.row(id), isPending: (id) => this.dependencies.isPending(id), heard: (row, failure, now) => this.dependencies.heard(row, failure, now),
      owed: () => this.waitpointOutbox.noticesOwed(),
    }));
    this.waitpointOutbox = new WaitpointOutbox(storage, clock, entropy, { lane, objectName, waitpoints: this.waitpoints, apply: (notices) => remoteWaits.apply(notices), peer, withdraw: (to, registrations, token) => remoteWaits.unregisterWith(to, registrations, token), waitUntil, changed: () => this.wake.afterChange() });
    this.outbox = new Outbox(storage, clock, entropy, { lane, objectName, apply: (notices) => this.dependencies.apply(notices), peer, waitUntil, changed: () => this.wake.afterChange(), mayNotify: () => this.dependencies.mayNotify });
    const deadLetterRouting = new DeadLetterRouting(this.lanes());
    this.deadLetters = new DeadLetterOutbox(storage, clock, entropy, {
      lane, deadLetter: () => store.settings.read().deadLetter, send: (to, copies) => deadLetterRouting.send(to, copies), waitUntil, changed: () => this.wake.afterChange(),
      payloadText: (key) => this.payloads.text(key), released: (keys) => this.payloads.releasedByCopies(keys),
    });
    this.deadLetterIntake = new DeadLetterIntake(clock, { store, shard: this.shard, payloads: this.payloads });
    this.claims = new Claims(storage, clock, entropy, {
      lane, version, settings: store.settings, runningCount: () => store.laneCounts.running(), queuesMatter: () => this.queues.anyRateLimited(),
      checkpoints: this.checkpoints, dependencies: this.dependencies, transitions: this.transitions,
    });
    this.expiry = new Expiry(storage, clock, store);
    this.events = new LaneEvents(ctx, { listen: (listener) => this.transitions.listen(listener), counts: () => store.counts() });
    this.retention = new RetentionStore(storage, clock);
    this.failure = new LaneFailure(storage, clock, { deliverOutcomes, transitions: this.transitions });
    // The watch is of objects, not lanes: a shard's own name, so that the cron checks each shard's alarm.
    this.alarmWatch = new AlarmWatch(storage, { lane: objectName, registry: () => this.registry(), waitUntil });
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
        payloads: this.payloads,
        claims: this.claims,
        fenced: this.fenced,
        cancels: this.cancels,
        checkpoints: this.checkpoints,
        streams: { write: (id, token, chunks) => this.streamLog.write(id, token, chunks), progressed: () => streamReaders.poke() },
        dependencies: this.dependencies,
        // An in-process wait on a waitpoint of another shard is written once that shard answers.
        waits: { wait: (id, token, waitpoint, timeoutMs) => this.waits.waitSoon(id, token, waitpoint, timeoutMs, (written) => waitUntil(written.then((answer) => {
          if (!answer.ok) log({ event: "dispatcher.wind_up_failed", lane, jobId: id, message: `wait on ${waitpoint}: ${answer.error.code}: ${answer.error.message}` });
          // Refused otherwise than by the fence (its shard could not register it): no wait, so the
          // attempt fails and is retried as any failure, rather than run on until its lease expires.
          if (!answer.ok && !(answer.error.code in LOST_CAUSES) && answer.error.code !== "job_not_found") this.fenced.fail(id, token, `wait on ${waitpoint}: ${answer.error.message}`, true, null);
        }, (error: unknown) => {
          // Thrown after its write or before: the fence refuses a failure of an attempt that waits.
          log({ event: "dispatcher.wind_up_failed", lane, jobId: id, message: `wait on ${waitpoint}: ${describeError(error)}` });
          this.fenced.fail(id, token, `wait on ${waitpoint}: ${describeError(error)}`, true, null);
        }).finally(() => this.wake.afterChange(true)))) },
        clock,
        env,
        changed: (onlyFreed) => this.wake.afterChange(onlyFreed ? "freed" : true),
        lost: (job, cause, message) => hooks.lost(job, cause, message),
        stuck: (job, abortedForMs) => log({ event: "executor.stuck", lane, jobId: job.id, kind: job.kind, generation: job.generation, abortedForMs }),
        waitUntil,
        abortGraceMs: options.abortGraceMs ?? ABORT_GRACE_MS,
        together: (fn) => storage.transactionSync(fn),
      },
      kinds.executors(options.executors ?? {}),
    );
    this.waiters = new Waiters({
      claim: (ask) => this.claims.forConsumer(ask, this.dispatcher), release: (id, token) => this.fenced.release(id, token).ok,
      count: (ask, upTo) => this.claims.claimableCount(ask, this.dispatcher, upTo), claimed: () => this.wake.afterChange(),
    });
    const watchers = (this.watchers = new Watchers(() => store.laneCounts.oldestDueAt(clock.now()) !== null));
    const waiters = this.waiters;
    // Held claims and a sharded lane's watchers alike call for a flush when a job arrives.
    const held = { get size() { return waiters.size + watchers.size; } };
    this.outcomes = new OutcomeDelivery<SwitchyardEnv>(storage, { store, clock, env, waitUntil, changed: () => this.wake.afterChange() }, options.onOutcome);
    const debouncer = new Debouncer(storage, store);
    this.keyMoves = new KeyMoves(storage, clock, { store, shard: this.shard, debouncer, peer: (i) => peer(shardObjectName(lane, i)) as unknown as KeyPeer, changed: () => this.wake.afterChange(), dependentsArrived: () => this.dependencies.dependentsArrived() });
    this.enqueue = new Enqueue(clock, entropy, {
      store, debouncer, dependencies: this.dependencies, dispatcher: this.dispatcher, wake: this.wake, waiters: held, version, shard: this.shard,
      metrics: this.metrics, payloads: this.payloads, kinds, singleton: new SingletonQueues(storage, { store, cancels: this.cancels, dispatcher: this.dispatcher }),
    });
    // A sharded lane's fires go to the shards of their jobs, shard 0 answered in place (schedules/shard-fires.ts).
    this.schedules = new ScheduleStore(storage, clock, lane, this.enqueue, { shard: this.shard, lanes: () => this.lanes(), self: () => hooks.self(), changed: () => this.wake.afterChange(false) });
    this.bulk = new BulkActions(storage, clock, entropy, { store, cancels: this.cancels, dispatcher: this.dispatcher });
    this.wakeComputer = new WakeComputer({
      clock, settings: store.settings, reads: new WakeReads(storage.sql, clock, store.settings, () => this.queues.anyRateLimited()), cancels: this.cancels,
      dispatcher: this.dispatcher, outcomes: this.outcomes, retention: this.retention, schedules: this.schedules, alarmWatch: this.alarmWatch, deliverOutcomes,
      heldClaims: () => held.size, outbox: this.outbox, mayNotify: () => this.dependencies.mayNotify,
      reportDueAt: () => this.metrics.dueAt(), alarmSteps: this.alarmSteps, keyMoveAt: () => (this.shard.count() > 1 ? this.keyMoves.nextAt() : null),
      waitpointAt: () => earliestOf(this.waitpoints.nextAt(store.settings.read().retention.completedMs), this.waitpointOutbox.nextAt()),
      deadLetterAt: () => this.deadLetters.nextAt(),
      bulkAt: () => this.bulk.nextAt(),
    });
  }

  /** The lanes' namespace, as what a lane calls on another (dependencies). */
  private lanes(): { getByName(name: string): LanePeer } {
    return this.env.LANE;
  }

  /** The registry's stub, when the Worker binds one, as what the lane calls on it. */
  registry(): RegistryPeer | undefined {
    return (this.env as Partial<SwitchyardEnv>).REGISTRY?.getByName(REGISTRY_NAME);
  }

  /** This object's metrics report as its rows say now, with the shard count it holds (metrics/lane-report.ts). */
  metricsReport(): LaneReport {
    const report = readLaneReport(this.ctx.storage.sql, this.store.laneCounts);
    return this.shard.count() > 1 ? { ...report, shards: this.shard.count() } : report;
  }

  /** What a flush does before its re-arm (wake/wake.ts `flushSteps`). */
  private flushSteps(pump: Pump): void {
    this.dispatcher.settleCompletions();
    if (pump !== "none") this.dispatcher.pump(pump === "freed");
    this.waiters.answer();
    this.streamReaders.poke();
    this.watchers.flushed();
    this.outcomes.deliverPending();
    this.metrics.noteChange();
  }
}

/** The earlier of two terms (null: none). */
const earliestOf = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));
