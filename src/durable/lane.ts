/**
 * The lane: one Durable Object, one SQLite database, one alarm. A thin class: each RPC method
 * validates its input (input.ts), calls a part of the lane (wiring.ts builds and connects them), and
 * asks the wake (wake/) for a flush, most of them in a body of their idea's `*Calls` (shards/lane-shards.ts,
 * attempts/lane-fence.ts, …) that the method delegates to; `alarm()` fires schedules, recovers, winds up and flushes.
 * Expected refusals come back as `Result` data, never as thrown coded errors.
 */
import { DurableObject } from "cloudflare:workers";
import type { AcksAnswer, BatchAnswer, CancelAnswer, EnqueueAnswer, FailLaneAnswer, JobPage, PurgeAnswer, QueueInfo } from "../shared/answers.js";
import { systemClock, systemEntropy, type Clock, type Entropy } from "../shared/clock.js";
import { ok, type Result } from "../shared/errors.js";
import type { Checkpoint, CheckpointInfo, Counts, Job, LaneInfo, Lease, PulledJob } from "../shared/job.js";
import type { HistoryAnswer } from "../shared/history.js";
import { tokenPrefix } from "../shared/shards.js";
import type { LostEvent, TransitionEvent } from "../shared/log.js";
import type { Schedule, SchedulePage, SchedulePut } from "../shared/schedule.js";
import * as S from "../shared/schemas.js";
import type { Claims } from "./attempts/claim.js";
import type { Dispatcher } from "./attempts/dispatcher.js";
import type { FencedWrites } from "./attempts/fenced-writes.js";
import { enqueueAnswer, enqueueAnswerText, type EnqueueDone } from "./enqueue/enqueue-text.js";
import type { NoticeAnswer, RegistrationAnswer } from "./deps/notices.js";
import type { SwitchyardEnv } from "./env.js";
import { parse, parseBatchEnqueue, parseJsonText } from "./input.js";
import type { ScheduleStore } from "./schedules/schedules.js";
import type { CheckpointStore } from "./steps/checkpoints.js";
import type { JobStore } from "./store/job-store.js";
import type { MetricsReporter } from "./metrics/reporter.js";
import type { LaneReport } from "./metrics/exposition.js";
import type { Belt, WakeCheck } from "./wake/belt.js";
import type { Outbox } from "./deps/outbox.js";
import type { WakeReads } from "./wake/reads.js";
import type { Wake } from "./wake/wake.js";
import { LaneWiring, type LaneOptions } from "./wiring.js";
import { ShardCalls } from "./shards/lane-shards.js";
import { KeyCalls } from "./shards/key-calls.js";
import type { HandOver } from "./shards/key-moves.js";
import type { KeyReservation } from "./shards/key-state.js";
import { FenceCalls } from "./attempts/lane-fence.js";
import { DependencyCalls } from "./deps/lane-deps.js";
import { OperatorCalls } from "./operator/lane-operator.js";
import { ScheduleCalls } from "./schedules/lane-schedules.js";
import { StepCalls } from "./steps/lane-steps.js";
import { ReaderCalls } from "./store/lane-readers.js";
import type { Located, Refusal, Reservation } from "./shards/shard-state.js";
import type { Watched } from "./shards/watchers.js";

export type { LaneOptions, LostEvent, TransitionEvent };

export class Lane extends DurableObject<SwitchyardEnv> {
  /** Set by `defineLane`; a plain `Lane` has no executors. */
  static options: LaneOptions = {};

  /** Where time and randomness come from: the platform's. A test-only subclass swaps them. */
  protected readonly time: { clock: Clock; entropy: Entropy } = { clock: systemClock, entropy: systemEntropy };
  /** Everything the lane is made of, built and connected (wiring.ts). */
  private readonly rooms: LaneWiring;
  readonly store: JobStore;
  /** The claim, for pull consumers and the dispatcher alike. */
  readonly claims: Claims;
  /** The writes an attempt's holder makes through the fence. */
  readonly fenced: FencedWrites;
  /** What attempts record for their jobs: checkpoints and progress. */
  readonly checkpointStore: CheckpointStore;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  readonly schedules: ScheduleStore;
  protected readonly wake: Wake;
  /** What the wake reads of the rows (for the benchmark's probes). */
  protected readonly wakeReads: WakeReads;
  /** The notices this lane owes, and how many calls it has sent them in (for the benchmark). */
  protected readonly outbox: Outbox;
  protected readonly belt: Belt;
  /** The lane's metrics reports to the registry (for tests and the benchmark's counts). */
  protected readonly reporter: MetricsReporter;
  /** The RPC methods' bodies, by idea: each method below validates nothing itself and delegates to one. */
  private readonly shards: ShardCalls;
  private readonly keys: KeyCalls;
  private readonly fence: FenceCalls;
  private readonly deps: DependencyCalls;
  private readonly operator: OperatorCalls;
  private readonly schedulesCalls: ScheduleCalls;
  private readonly steps: StepCalls;
  private readonly readers: ReaderCalls;

  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    const clock: Clock = { now: () => this.time.clock.now() };
    // A shard i >= 1 of a sharded lane marks the lease tokens it mints with its index, so that a
    // fenced write finds its shard from the token alone (docs/concepts.md "Sharded lanes").
    // (Its index as its wiring knows it: from its name, or the name it stored when an instance was told it.)
    const entropy: Entropy = { id: () => this.time.entropy.id(), token: () => tokenPrefix(this.rooms.shard.index) + this.time.entropy.token(), random: () => this.time.entropy.random() };
    const rooms = (this.rooms = new LaneWiring(ctx, env, (new.target as typeof Lane).options, clock, entropy));
    ({ store: this.store, claims: this.claims, fenced: this.fenced, checkpoints: this.checkpointStore, dispatcher: this.dispatcher, schedules: this.schedules, wake: this.wake, belt: this.belt } = rooms);
    this.wakeReads = rooms.wakeComputer.reads;
    this.outbox = rooms.outbox;
    this.reporter = rooms.metrics;
    this.shards = new ShardCalls(rooms, clock);
    this.keys = new KeyCalls(rooms);
    this.fence = new FenceCalls(rooms);
    this.deps = new DependencyCalls(rooms);
    this.operator = new OperatorCalls(rooms);
    this.schedulesCalls = new ScheduleCalls(rooms);
    this.steps = new StepCalls(rooms);
    this.readers = new ReaderCalls(rooms);
    void ctx.blockConcurrencyWhile(() => rooms.start());
  }

  // ---- producers ----

  /** Enqueues one job (idempotent by id). */
  async enqueue(input: unknown): Promise<Result<EnqueueAnswer>> {
    const done = this.rooms.refusal<never>() ?? (await this.rooms.enqueue.one(input));
    if (!done.ok) return done;
    await this.rooms.register();
    return ok(enqueueAnswer(done.value, this.store.lane));
  }

  /**
   * `enqueue` in JSON text both ways, for the RPC client (enqueue-text.ts: a new job is answered by its
   * id and creation time, the client builds the rest). Answers in its own turn once the lane is registered.
   */
  enqueueText(request: string): string | Promise<string> {
    const input = parseJsonText(request);
    const done = this.rooms.refusal<never>() ?? (input.ok ? this.rooms.enqueue.one(input.value) : input);
    const answer = (done: Result<EnqueueDone>) => {
      const text = enqueueAnswerText(done, this.store.lane);
      const registering = done.ok ? this.rooms.register() : null;
      return registering ? registering.then(() => text) : text;
    };
    return done instanceof Promise ? done.then(answer) : answer(done);
  }

  /**
   * Group commit (client/group-commit.ts): the single enqueues of many callers, each in JSON text as
   * `enqueueText` takes it, written in one transaction (one durable commit) and answered each as its
   * own `enqueueText` would have answered it: one caller's refusal or conflict is its own. A job with
   * dependencies registers with other lanes first, so it goes on its own after the others.
   */
  enqueueGroup(requests: unknown): Result<string[]> | Promise<Result<string[]>> {
    const refused = this.rooms.refusal<string[]>();
    if (refused) return refused;
    const texts = parse(S.EnqueueGroup, requests);
    if (!texts.ok) return texts;
    const lane = this.store.lane;
    const inputs = texts.value.map((text) => parseJsonText(text));
    const written = this.rooms.enqueue.group(inputs.map((input) => (input.ok ? input.value : undefined)));
    const answers: (string | null)[] = written.map((done, i) => (!inputs[i]!.ok ? JSON.stringify(inputs[i]) : done === null ? null : enqueueAnswerText(done, lane)));
    const finish = () => {
      const registering = this.rooms.register();
      const all = ok(answers as string[]);
      return registering ? registering.then(() => all) : all;
    };
    const later = answers.flatMap((a, i) => (a === null ? [i] : []));
    if (later.length === 0) return finish();
    return (async () => {
      for (const i of later) answers[i] = enqueueAnswerText(await this.rooms.enqueue.groupAlone((inputs[i] as { value: unknown }).value), lane);
      return finish();
    })();
  }

  /** Enqueues 1..1000 jobs in one transaction, all or nothing. */
  async enqueueBatch(input: unknown): Promise<Result<BatchAnswer>> {
    return this.answer(async () => {
      const request = parseBatchEnqueue(input);
      if (!request.ok) return request;
      const inserted = await this.rooms.enqueue.batch(request.value.jobs, request.value.traceparent, request.value.shards);
      if (!inserted.ok) return inserted;
      await this.rooms.register();
      return ok({ results: inserted.value });
    });
  }

  // ---- readers ----

  async getJob(id: unknown): Promise<Result<Job>> { return this.answer(() => this.readers.getJob(id)); }

  /** A page of jobs in enqueue order: at most `limit` and at most 4 MiB of JSON; the cursor continues. */
  async listJobs(input: unknown): Promise<Result<JobPage>> { return this.answer(() => this.readers.listJobs(input)); }

  async info(): Promise<Result<LaneInfo>> {
    return this.answer(() => this.rooms.laneInfo());
  }

  /** The per-minute buckets of the last `windowMs` (default an hour), oldest first (docs/api.md, "Metrics"). */
  async history(input?: unknown): Promise<Result<HistoryAnswer>> { return this.answer(() => this.readers.history(input)); }

  /** The instant the lane's alarm is stored for (null: none), as the platform has it. For inspection and tests. */
  async storedAlarm(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }

  // ---- admin ----

  /**
   * Sets the lane's settings on this object. `shards` sets this object's stored shard count (the
   * router tells every shard: docs/concepts.md "Sharded lanes"), only while it holds no job (its
   * schedules stay on shard 0): else 409 `lane_not_empty` and nothing changes.
   */
  async configure(input: unknown): Promise<Result<LaneInfo>> { return this.answer(() => this.shards.configure(input)); }

  async cancel(id: unknown, input?: unknown): Promise<Result<CancelAnswer>> { return this.answer(() => this.operator.cancel(id, input)); }

  async requeue(id: unknown): Promise<Result<{ job: Job }>> { return this.answer(() => this.operator.requeue(id)); }

  async sweep(input: unknown): Promise<Result<{ removed: number }>> { return this.answer(() => this.operator.sweep(input)); }

  // ---- pull consumers: the fence ----

  /**
   * Claims due jobs for a pull consumer, each with its lease token and what its earlier attempts
   * recorded. With `waitMs` and nothing claimable, the claim is held until a flush finds it a job or
   * `waitMs` passes (waiters.ts). `hold` is the front worker's name for a held claim, so that it can
   * `abandonClaim` it when its client leaves.
   */
  async claim(input?: unknown, hold?: unknown): Promise<Result<{ jobs: PulledJob[] }>> { return this.answer(() => this.fence.claim(input, hold)); }

  async renew(id: unknown, input: unknown): Promise<Result<{ lease: Lease }>> { return this.answer(() => this.fence.renew(id, input)); }

  async complete(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.answer(() => this.fence.complete(id, input)); }

  async fail(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.answer(() => this.fence.fail(id, input)); }

  /** Ends the attempt and queues its job again after `delayMs`, giving back the attempt (fenced like complete). */
  async snooze(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.answer(() => this.fence.snooze(id, input)); }

  async release(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.answer(() => this.fence.release(id, input)); }

  // ---- sharded lanes (docs/concepts.md "Sharded lanes"; shards/shard-state.ts) ----

  /** The lane's shard count as this object stores it, and whether it holds no job (`empty`: its count may change). */
  async shardState(): Promise<Result<{ shards: number; index: number; empty: boolean }>> { return this.answer(() => this.shards.shardState()); }

  /** On the id's own shard: reserves `id` for the shard `target` that owns its job's routing key. */
  async reserve(id: unknown, target: unknown, queue: unknown, replacing?: unknown): Promise<Result<Reservation>> { return this.answer(() => this.shards.reserve(id, target, queue, replacing)); }

  /**
   * A sharded lane's batch, checked before any shard writes its part: what `enqueueBatch` would refuse
   * here (bad input, a job this shard does not own, an id used here with another spec), writing nothing.
   */
  async checkBatch(input: unknown): Promise<Result<null>> { return this.answer(() => this.shards.checkBatch(input)); }

  /** On the id's own shard: where its job is (this shard, the one it is reserved for, or nowhere: null). */
  async locate(id: unknown): Promise<Result<Located>> { return this.answer(() => this.shards.locate(id)); }

  /** Whether job `id` is stored here (a reservation elsewhere naming this shard is then live). */
  async hasJob(id: unknown): Promise<Result<boolean>> { return this.answer(() => this.shards.hasJob(id)); }

  /** Where each of `ids` is as this shard knows (here, reserved here for another shard, or null): a sharded batch's dependencies, looked up before it writes. */
  async knownIds(ids: unknown): Promise<Result<(number | null)[]>> { return this.answer(() => this.shards.knownIds(ids)); }

  /** On a debounce key's own shard: where a write of the key for shard `target` goes (shards/key-state.ts). */
  async reserveKey(key: unknown, target: unknown, replacing?: unknown): Promise<Result<KeyReservation>> { return this.answer(() => this.keys.reserveKey(key, target, replacing)); }

  /** On the shard a key's reservation names: its queued job replaced by `request` and moved to `target`, or the nonce given up (shards/key-moves.ts). */
  async handOverKey(key: unknown, nonce: unknown, target: unknown, request: unknown): Promise<Result<HandOver>> { return this.answer(() => this.keys.handOverKey(key, nonce, target, request)); }

  /** On the shard a key's job moves to: the job taken once. */
  async acceptKeyMove(nonce: unknown, key: unknown, row: unknown, dependents: unknown, from: unknown): Promise<Result<Job | null>> { return this.answer(() => this.keys.acceptKeyMove(nonce, key, row, dependents, from)); }

  /** On a debounce key's own shard: its job now on another shard. */
  async advanceKey(key: unknown, from: unknown, to: unknown, nonce: unknown): Promise<Result<null>> { return this.answer(() => this.keys.advanceKey(key, from, to, nonce)); }

  /** On a job id's own shard: its reservation follows its job's move. */
  async repointId(id: unknown, from: unknown, to: unknown): Promise<Result<null>> { return this.answer(() => this.keys.repointId(id, from, to)); }

  /** On a shard a reservation names: its job is here, or the reservation (its `nonce`) is refused for good, so that its id's own shard may hand the id to another. */
  async refuseReservation(id: unknown, nonce: unknown): Promise<Result<Refusal>> { return this.answer(() => this.shards.refuseReservation(id, nonce)); }

  /**
   * The runAt of the longest-waiting due queued job here (null: none) and the flush epoch: a sharded
   * claim's look before it claims, and what its watch names (shards/watchers.ts).
   */
  async due(): Promise<Result<{ oldestDueAt: number | null; epoch: number }>> { return this.answer(() => this.shards.due()); }

  /** A sharded lane's held claim: waits, claiming nothing, until a job is due here or `waitMs` passes. */
  async awaitWork(epoch: unknown, waitMs: unknown, hold: unknown): Promise<Result<Watched>> { return this.answer(() => this.shards.awaitWork(epoch, waitMs, hold)); }

  /** The router of a held claim stops watching here (it claimed elsewhere, or its client left). */
  async stopWatching(hold: unknown): Promise<Result<{ stopped: number }>> { return this.answer(() => this.shards.stopWatching(hold)); }

  /** A page of jobs with each one's seq: what a sharded lane's merged list is made of. */
  async listShardPage(input: unknown, afterSeq: unknown): Promise<Result<{ jobs: Job[]; seqs: number[]; more: boolean }>> { return this.answer(() => this.shards.listShardPage(input, afterSeq)); }

  // ---- the alarm ----

  override async alarm(): Promise<void> {
    if (this.rooms.refusal()) return; // a newer version's lane: touch nothing
    await this.rooms.alarm();
  }

  // ---- events sockets (events.ts); the front worker has checked the ticket ----

  override async fetch(request: Request): Promise<Response> {
    return this.rooms.events.open(request, await this.info());
  }

  override webSocketMessage(): void {} // the sockets only listen

  override webSocketClose(ws: WebSocket, code: number): void {
    this.rooms.events.closed(ws, code);
  }

  override webSocketError(ws: WebSocket): void {
    this.rooms.events.closed(ws);
  }

  // ---- long-poll claims and batch acks ----

  /**
   * The client of a held claim went away (the front worker saw its request aborted): a claim still
   * held is dropped, and the jobs of one answered a moment ago are released. Answers how many.
   */
  async abandonClaim(hold: unknown): Promise<Result<{ released: number }>> { return this.answer(() => this.fence.abandonClaim(hold)); }

  /** Up to 100 complete, fail, release and progress items, each fenced on its own (acks.ts). */
  async acks(input: unknown): Promise<Result<AcksAnswer>> { return this.answer(() => this.fence.acks(input)); }

  // ---- dependencies (between lanes: deps/) ----

  /** The jobs registered to wait for job `id`, by lane then id. */
  async dependents(id: unknown): Promise<Result<{ dependents: { lane: string; id: string }[] }>> { return this.answer(() => this.deps.dependents(id)); }

  /**
   * Another lane's enqueue registers its dependents with jobs of this lane: answers, per item, whether
   * the job exists and how it settled, if it has (its settlement tells the dependent otherwise).
   */
  async registerDependents(input: unknown, hop?: unknown, token?: unknown): Promise<Result<RegistrationAnswer[]>> { return this.answer(() => this.deps.registerDependents(input, hop, token)); }

  /** Another lane's enqueue, refused, withdraws the registrations it made here (those of its `token` alone). */
  async unregisterDependents(input: unknown, hop?: unknown, token?: unknown): Promise<Result<{ removed: number }>> { return this.answer(() => this.deps.unregisterDependents(input, hop, token)); }

  /** Another lane's outbox tells this one of settled dependencies: each applied at most once; answers per notice. */
  async notifyDependencies(input: unknown): Promise<Result<NoticeAnswer[]>> { return this.answer(() => this.deps.notifyDependencies(input)); }

  // ---- the operator's lane ----

  /** The lane's metrics in the Prometheus text exposition, read live (docs/api.md "Metrics"). */
  async metrics(): Promise<Result<string>> {
    return this.answer(() => ok(this.rooms.metricsText()));
  }

  /** This shard's metrics report and its clock's now, which a sharded lane's route merges (docs/api.md "Metrics"). */
  async metricsReport(): Promise<Result<{ report: LaneReport; nowMs: number }>> {
    return this.answer(() => ok(this.rooms.metricsReading()));
  }

  /** The kept counts and the shard count: what `GET /v1/lanes` reads of each lane's shard 0. */
  async countsAndShards(): Promise<Result<{ counts: Counts; shards: number }>> { return this.answer(() => this.shards.countsAndShards()); }

  /** The kept counts alone: what `GET /v1/lanes` shows of each lane, one row read. */
  async counts(): Promise<Result<Counts>> {
    return this.answer(() => ok(this.store.counts()));
  }

  /**
   * Settles up to 500 queued and running jobs `failed` (running first, then queued in enqueue order)
   * and aborts their in-process attempts; `more`: whether any queued or running job is left.
   */
  async failLane(input: unknown): Promise<Result<FailLaneAnswer>> { return this.answer(() => this.operator.failLane(input)); }

  /** Who holds a queue (a completing job reports `running`), else its next job, and how many are queued. */
  async queueInfo(queue: unknown): Promise<Result<QueueInfo>> { return this.answer(() => this.operator.queueInfo(queue)); }

  /** Sets a queue's concurrency and rate limit (they outlive its jobs); answers the queue. */
  async putQueue(queue: unknown, input: unknown): Promise<Result<QueueInfo>> { return this.answer(() => this.operator.putQueue(queue, input)); }

  /** Deletes the queue's queued jobs enqueued before the call (a running or completing head runs on). */
  async purgeQueue(queue: unknown): Promise<Result<PurgeAnswer>> { return this.answer(() => this.operator.purgeQueue(queue)); }

  // ---- schedules ----

  /** Creates or replaces a schedule (`created` says which); its next fire is a wake term. */
  async putSchedule(name: unknown, input: unknown): Promise<Result<SchedulePut>> { return this.answer(() => this.schedulesCalls.putSchedule(name, input)); }

  async getSchedule(name: unknown): Promise<Result<Schedule>> { return this.answer(() => this.schedulesCalls.getSchedule(name)); }

  /** Schedules by name, a page at a time: `cursor` continues after the page (null: the end). */
  async listSchedules(input?: unknown): Promise<Result<SchedulePage>> { return this.answer(() => this.schedulesCalls.listSchedules(input)); }

  /** Deletes a schedule; the jobs it enqueued stay. */
  async deleteSchedule(name: unknown): Promise<Result<{ deleted: true }>> { return this.answer(() => this.schedulesCalls.deleteSchedule(name)); }

  /** On a shard of a sharded lane: a fire of its shard 0 whose job belongs here, `<name>@<T>` (schedules/shard-fires.ts). */
  async enqueueFire(input: unknown): Promise<Result<EnqueueAnswer>> { return this.answer(() => this.schedulesCalls.enqueueFire(input)); }

  // ---- the belt ----

  /**
   * The belt's check (the front worker's cron, worker/belt.ts), idempotent: the stored alarm becomes
   * the computed wake, so an alarm the platform lost, or holds later than the wake, is set again. A
   * lane with nothing to wake for tells the belt that it may stop watching it (belt.ts).
   */
  async checkWake(): Promise<Result<WakeCheck>> {
    return this.answer(async () => ok(await this.rooms.checkWake()));
  }

  // ---- checkpoints and progress (durable steps) ----

  /** Records a checkpoint for the attempt holding the token: fenced like complete; within the job's limits. */
  async saveCheckpoint(id: unknown, name: unknown, input: unknown): Promise<Result<{ checkpoint: CheckpointInfo }>> { return this.answer(() => this.steps.saveCheckpoint(id, name, input)); }

  /** Every checkpoint of a job, in name order (the operator's view). */
  async listCheckpoints(id: unknown): Promise<Result<{ checkpoints: Checkpoint[] }>> { return this.answer(() => this.steps.listCheckpoints(id)); }

  /** Records the job's progress for the attempt holding the token: fenced like complete; the token is kept. */
  async progress(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.answer(() => this.steps.progress(id, input)); }

  // ---- helpers ----

  /** Every RPC answer goes through here: a lane of a newer schema refuses all of them, changing nothing. */
  private async answer<T>(body: () => Result<T> | Promise<Result<T>>): Promise<Result<T>> {
    return this.rooms.refusal<T>() ?? body();
  }
}

/** Builds a lane class with executors and hooks, to export from a Worker under its binding's class name. */
export function defineLane<E = SwitchyardEnv>(options: LaneOptions<E>): typeof Lane {
  return class extends Lane {
    static override options = options as LaneOptions; // the runtime hands the lane the Worker's env: E
  };
}
