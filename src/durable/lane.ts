/**
 * The lane: one Durable Object, one SQLite database, one alarm. What it answers, one method per RPC,
 * each declared a `read` or a `change` (rpc/gate.ts): the gate refuses every call of a lane whose
 * schema is newer, and follows every change with the wake's flush, so no body calls for it by hand
 * (the few exceptions name their flush rule and why). Each body validates its input (input.ts) and
 * calls the lane's parts (lane-parts.ts builds them); the bodies live in rpc/, by what they answer.
 * The lane's life (start, alarm, the wake check) is lane-lifecycle.ts. Expected refusals come back as
 * `Result` data, never as thrown coded errors.
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
import type { Claims } from "./attempts/claim.js";
import type { Dispatcher } from "./attempts/dispatcher.js";
import type { FencedWrites } from "./attempts/fenced-writes.js";
import type { NoticeAnswer, RegistrationAnswer } from "./deps/notices.js";
import type { DeadLetterShardAnswer } from "../routing/dead-letter-routing.js";
import type { SwitchyardEnv } from "./env.js";
import { LaneLifecycle } from "./lane-lifecycle.js";
import { LaneParts, type LaneOptions } from "./lane-parts.js";
import { LaneRpcBodies } from "./lane-rpc-bodies.js";
import type { KindSchemas } from "../shared/kinds.js";
import type { ScheduleStore } from "./schedules/schedules.js";
import type { CheckpointStore } from "./steps/checkpoints.js";
import type { JobStore } from "./store/job-store.js";
import type { MetricsReporter } from "./metrics/reporter.js";
import type { LaneReport } from "./metrics/exposition.js";
import type { AlarmWatch, WakeCheck } from "./wake/alarm-watch.js";
import type { Outbox } from "./deps/outbox.js";
import type { WakeReads } from "./wake/reads.js";
import type { Wake } from "./wake/wake.js";
import type { HandOver } from "./shards/key-moves.js";
import type { KeyReservation } from "./shards/key-state.js";
import type { Located, Refusal, Reservation } from "./shards/shard-state.js";
import type { Watched } from "./shards/watchers.js";
import type { HeldJob } from "../routing/job-waits.js";
import { flush, RpcGate } from "./rpc/gate.js";
import type { WaitpointShardPage } from "../shared/waitpoint-list.js";
import { selfShard } from "./rpc/self-shard.js";
import type { WaitpointCompleted } from "./waitpoints/waitpoints.js";
import type { WaitAnswer } from "./waits/waits.js";
import type { Waitpoint, WaitpointCreated } from "../shared/waitpoint.js";
import { wholeAnswer } from "./payloads/whole-answers.js";
import type { PayloadSource } from "./payloads/payload-store.js";
import type { WaitpointNoticeAnswer, WaitpointRegistrationAnswer } from "./waits/waitpoint-notices.js";
import type { StreamPage, StreamWritten } from "../shared/stream.js";
import type { Bulk } from "../shared/bulk.js";

export type { LaneOptions, LostEvent, TransitionEvent };
/** Batch executors, for a Worker that defines its lane here (the front worker may import this file alone of the lane). */
export { batchExecutor } from "./attempts/batch-executor.js";

export class Lane extends DurableObject<SwitchyardEnv> {
  /** Set by `defineLane`; a plain `Lane` has no executors. */
  static options: LaneOptions = {};

  /** Where time and randomness come from: the platform's. A test-only subclass swaps them. */
  protected readonly time: { clock: Clock; entropy: Entropy } = { clock: systemClock, entropy: systemEntropy };
  /** Everything the lane is made of, built and connected (lane-parts.ts). */
  private readonly parts: LaneParts;
  /** Its start, alarm, wake check, info and registration (lane-lifecycle.ts). */
  private readonly life: LaneLifecycle;
  /** Every RPC method passes it: a read, or a change that the flush follows (rpc/gate.ts). */
  private readonly gate: RpcGate;
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
  /** Whether the registry watches this lane for the cron's check of lost alarms (for tests). */
  protected readonly alarmWatch: AlarmWatch;
  /** The lane's metrics reports to the registry (for tests and the benchmark's counts). */
  protected readonly reporter: MetricsReporter;
  /** The RPC methods' bodies, by what they answer (rpc/): each method below validates nothing itself and delegates to one. */
  private readonly rpc: LaneRpcBodies;

  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    const clock: Clock = { now: () => this.time.clock.now() };
    // A shard i >= 1 of a sharded lane marks the lease tokens it mints with its index, so that a
    // fenced write finds its shard from the token alone (docs/concepts.md "Sharded lanes").
    // (Its index as its parts know it: from its name, or the name it stored when an instance was told it.)
    const entropy: Entropy = { id: () => this.time.entropy.id(), token: () => tokenPrefix(this.parts.shard.index) + this.time.entropy.token(), random: () => this.time.entropy.random() };
    const options = (new.target as typeof Lane).options;
    const parts: LaneParts = (this.parts = new LaneParts(ctx, env, options, clock, entropy, {
      lost: (job, cause, message) => life.lost(job, cause, message),
      self: () => selfShard(parts, life, clock),
    }));
    const life = (this.life = new LaneLifecycle(parts, options, clock));
    this.gate = new RpcGate(life, parts.wake);
    ({ store: this.store, claims: this.claims, fenced: this.fenced, checkpoints: this.checkpointStore, dispatcher: this.dispatcher, schedules: this.schedules, wake: this.wake, alarmWatch: this.alarmWatch } = parts);
    this.wakeReads = parts.wakeComputer.reads;
    this.outbox = parts.outbox;
    this.reporter = parts.metrics;
    this.rpc = new LaneRpcBodies(parts, life, clock);
    void ctx.blockConcurrencyWhile(() => life.start());
  }

  // ---- producers (rpc/enqueue.ts: the enqueue path flushes in its own write, and answers in its own turn) ----

  /** Enqueues one job (idempotent by id). */
  async enqueue(input: unknown): Promise<Result<EnqueueAnswer>> { return this.rpc.producers.enqueue(input); }

  /** `enqueue` in JSON text both ways, for the RPC client (enqueue-text.ts). Answers in its own turn once the lane is registered. */
  enqueueText(request: string): string | Promise<string> { return this.rpc.producers.enqueueText(request); }

  /** Group commit (client/group-commit.ts): many callers' single enqueues in one transaction, each answered as `enqueueText` would. */
  enqueueGroup(requests: unknown): Result<string[]> | Promise<Result<string[]>> { return this.rpc.producers.enqueueGroup(requests); }

  /** Enqueues 1..1000 jobs in one transaction, all or nothing. */
  async enqueueBatch(input: unknown): Promise<Result<BatchAnswer>> { return this.gate.change(() => this.rpc.producers.enqueueBatch(input), flush.inBody); }

  // ---- readers ----

  async getJob(id: unknown): Promise<Result<Job>> { return this.whole(await this.gate.read(() => this.rpc.readers.getJob(id))); }

  /** The job once it is settled, or as it stands once `waitMs` (0..30000) has passed: held without CPU meanwhile (results/held-reads.ts). */
  async awaitJob(id: unknown, waitMs: unknown): Promise<Result<HeldJob>> { return this.whole(await this.gate.read(() => this.rpc.jobWaits.awaitJob(id, waitMs))); }

  /** Where a job's payload or result is, for the routes that stream it: its JSON text, or the key of its object in `PAYLOADS` (docs/api.md "Big payloads"). */
  async jobValue(id: unknown, which: unknown): Promise<Result<PayloadSource>> { return this.gate.read(() => this.rpc.readers.jobValue(id, which)); }

  /** A page of jobs in enqueue order: at most `limit` and at most 4 MiB of JSON; the cursor continues. */
  async listJobs(input: unknown): Promise<Result<JobPage>> { return this.gate.read(() => this.rpc.readers.listJobs(input)); }

  /** This object's waitpoints after a cursor, in id order (the router merges a sharded lane's: routing/waitpoint-list-routing.ts). */
  async listWaitpoints(input: unknown): Promise<Result<WaitpointShardPage>> { return this.gate.read(() => this.rpc.waitpointList.listWaitpoints(input)); }

  async info(): Promise<Result<LaneInfo>> { return this.gate.read(() => this.life.laneInfo()); }

  /** The per-minute buckets of the last `windowMs` (default an hour), oldest first (docs/api.md, "Metrics"). */
  async history(input?: unknown): Promise<Result<HistoryAnswer>> { return this.gate.read(() => this.rpc.readers.history(input)); }

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
  async configure(input: unknown): Promise<Result<LaneInfo>> { return this.gate.change(() => this.rpc.shards.configure(input)); }

  async cancel(id: unknown, input?: unknown): Promise<Result<CancelAnswer>> { return this.whole(await this.withdrawn(() => this.rpc.operator.cancel(id, input))); }

  async requeue(id: unknown): Promise<Result<{ job: Job }>> { return this.whole(await this.gate.change(() => this.rpc.operator.requeue(id))); }

  async sweep(input: unknown): Promise<Result<{ removed: number }>> { return this.gate.change(() => this.rpc.operator.sweep(input)); }

  /** Accepts a bulk action, applied a chunk a turn by the alarm (bulk/); `id`: a sharded lane's router's, the same on every shard. Its term is now: the flush re-arms, no job became startable; a refusal changed nothing. */
  async startBulk(input: unknown, id?: unknown): Promise<Result<Bulk>> { return this.gate.change(() => this.rpc.bulk.startBulk(input, id), (answer) => (answer.ok ? false : null)); }

  async getBulk(id: unknown): Promise<Result<Bulk>> { return this.gate.read(() => this.rpc.bulk.getBulk(id)); }

  /** The bulk action that runs here (null: none), which a sharded lane's router asks of every shard before it starts one. */
  async runningBulk(): Promise<Result<Bulk | null>> { return this.gate.read(() => this.rpc.bulk.runningBulk()); }

  // ---- pull consumers: the fence ----

  /**
   * Claims due jobs for a pull consumer, each with its lease token and what its earlier attempts
   * recorded. With `waitMs` and nothing claimable, the claim is held until a flush finds it a job or
   * `waitMs` passes (waiters.ts). `hold` is the front worker's name for a held claim, so that it can
   * `abandonClaim` it when its client leaves.
   * Flushes in its body: when it took jobs, and before a held claim waits (an empty poll changes nothing).
   */
  async claim(input?: unknown, hold?: unknown): Promise<Result<{ jobs: PulledJob[] }>> { return this.gate.change(() => this.rpc.consumers.claim(input, hold), flush.inBody); }

  async renew(id: unknown, input: unknown): Promise<Result<{ lease: Lease }>> { return this.gate.change(() => this.rpc.consumers.renew(id, input)); }

  async complete(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.whole(await this.gate.change(() => this.rpc.consumers.complete(id, input))); }

  async fail(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.whole(await this.gate.change(() => this.rpc.consumers.fail(id, input))); }

  /** Ends the attempt and queues its job again after `delayMs`, giving back the attempt (fenced like complete). */
  async snooze(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.whole(await this.gate.change(() => this.rpc.consumers.snooze(id, input))); }
  /** The attempt ends in a wait on a waitpoint of the lane (created pending when missing): its job blocked on it, its attempt given back. */
  async waitOn(id: unknown, input: unknown): Promise<Result<WaitAnswer>> { return this.gate.change(() => this.rpc.consumers.waitOn(id, input)); }

  async release(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.whole(await this.gate.change(() => this.rpc.consumers.release(id, input))); }

  // ---- sharded lanes (docs/concepts.md "Sharded lanes"; shards/shard-state.ts) ----

  /** The lane's shard count as this object stores it, and whether it holds no job (`empty`: its count may change). */
  async shardState(): Promise<Result<{ shards: number; index: number; empty: boolean }>> { return this.gate.read(() => this.rpc.shards.shardState()); }

  /** On the id's own shard: reserves `id` for the shard `target` that owns its job's routing key. No flush: an id's reservation is no term of the wake. */
  async reserve(id: unknown, target: unknown, queue: unknown, replacing?: unknown): Promise<Result<Reservation>> { return this.gate.change(() => this.rpc.shards.reserve(id, target, queue, replacing), flush.never); }

  /**
   * A sharded lane's batch, checked before any shard writes its part: what `enqueueBatch` would refuse
   * here (bad input, a job this shard does not own, an id used here with another spec), writing nothing.
   */
  async checkBatch(input: unknown): Promise<Result<null>> { return this.gate.read(() => this.rpc.shards.checkBatch(input)); }

  /** On the id's own shard: where its job is (this shard, the one it is reserved for, or nowhere: null). */
  async locate(id: unknown): Promise<Result<Located>> { return this.gate.read(() => this.rpc.shards.locate(id)); }

  /** Whether job `id` is stored here (a reservation elsewhere naming this shard is then live). */
  async hasJob(id: unknown): Promise<Result<boolean>> { return this.gate.read(() => this.rpc.shards.hasJob(id)); }

  /** Where each of `ids` is as this shard knows (here, reserved here for another shard, or null): a sharded batch's dependencies, looked up before it writes. */
  async knownIds(ids: unknown): Promise<Result<(number | null)[]>> { return this.gate.read(() => this.rpc.shards.knownIds(ids)); }

  /** On a debounce key's own shard: where a write of the key for shard `target` goes (shards/key-state.ts). A key's owed move, delivered first, flushes in shards/key-moves.ts (the alarm delivers moves too); a reservation is no term. */
  async reserveKey(key: unknown, target: unknown, replacing?: unknown): Promise<Result<KeyReservation>> { return this.gate.change(() => this.rpc.keys.reserveKey(key, target, replacing), flush.inBody); }

  /** On the shard a key's reservation names: its queued job replaced by `request` and moved to `target`, or the nonce given up (shards/key-moves.ts). The move flushes in shards/key-moves.ts, which the alarm runs too. */
  async handOverKey(key: unknown, nonce: unknown, target: unknown, request: unknown): Promise<Result<HandOver>> { return this.gate.change(() => this.rpc.keys.handOverKey(key, nonce, target, request), flush.inBody); }

  /** On the shard a key's job moves to: the job taken once. The moved job's arrival flushes in shards/key-moves.ts, which the alarm runs too. */
  async acceptKeyMove(nonce: unknown, key: unknown, row: unknown, dependents: unknown, from: unknown): Promise<Result<Job | null>> { return this.gate.change(() => this.rpc.keys.acceptKeyMove(nonce, key, row, dependents, from), flush.inBody); }

  /** On a debounce key's own shard: its job now on another shard. No flush: a key's reservation is no term of the wake. */
  async advanceKey(key: unknown, from: unknown, to: unknown, nonce: unknown): Promise<Result<null>> { return this.gate.change(() => this.rpc.keys.advanceKey(key, from, to, nonce), flush.never); }

  /** On a job id's own shard: its reservation follows its job's move. No flush: an id's reservation is no term of the wake. */
  async repointId(id: unknown, from: unknown, to: unknown): Promise<Result<null>> { return this.gate.change(() => this.rpc.keys.repointId(id, from, to), flush.never); }

  /** On a shard a reservation names: its job is here, or the reservation (its `nonce`) is refused for good, so that its id's own shard may hand the id to another. No flush: an id's reservation is no term of the wake. */
  async refuseReservation(id: unknown, nonce: unknown): Promise<Result<Refusal>> { return this.gate.change(() => this.rpc.shards.refuseReservation(id, nonce), flush.never); }

  /**
   * The runAt of the longest-waiting due queued job here (null: none) and the flush epoch: a sharded
   * claim's look before it claims, and what its watch names (shards/watchers.ts).
   */
  async due(): Promise<Result<{ oldestDueAt: number | null; epoch: number }>> { return this.gate.read(() => this.rpc.shards.due()); }

  /** How many jobs a claim would take here now, up to its `minJobs` (else `max`): a sharded lane's held claim with `minJobs` sums the shards'. */
  async claimable(input?: unknown): Promise<Result<{ claimable: number }>> { return this.gate.read(() => this.rpc.consumers.claimable(input)); }

  /** A sharded lane's held claim: waits, claiming nothing, until a job is due here or `waitMs` passes. Flushes in its body, before it waits: a rate-limited lane's next token is then a term of the wake. */
  async awaitWork(epoch: unknown, waitMs: unknown, hold: unknown, counting?: unknown): Promise<Result<Watched>> { return this.gate.change(() => this.rpc.shards.awaitWork(epoch, waitMs, hold, counting), flush.inBody); }

  /** The router of a held claim stops watching here (it claimed elsewhere, or its client left). No flush: a watch dropped can only move the wake later, and the stored alarm may be early. */
  async stopWatching(hold: unknown): Promise<Result<{ stopped: number }>> { return this.gate.change(() => this.rpc.shards.stopWatching(hold), flush.never); }

  /** A page of jobs with each one's seq: what a sharded lane's merged list is made of. */
  async listShardPage(input: unknown, afterSeq: unknown): Promise<Result<{ jobs: Job[]; seqs: number[]; more: boolean }>> { return this.gate.read(() => this.rpc.shards.listShardPage(input, afterSeq)); }

  // ---- the alarm ----

  override async alarm(): Promise<void> {
    if (this.life.refusal()) return; // a newer version's lane: touch nothing
    await this.life.alarm();
  }

  // ---- events sockets (events.ts); the front worker has checked the ticket ----

  override async fetch(request: Request): Promise<Response> {
    return this.parts.events.open(request, await this.info());
  }

  override webSocketMessage(): void {} // the sockets only listen

  override webSocketClose(ws: WebSocket, code: number): void {
    this.parts.events.closed(ws, code);
  }

  override webSocketError(ws: WebSocket): void {
    this.parts.events.closed(ws);
  }

  // ---- long-poll claims and batch acks ----

  /**
   * The client of a held claim went away (the front worker saw its request aborted): a claim still
   * held is dropped, and the jobs of one answered a moment ago are released. Answers how many.
   * Flushes when it released jobs (queued again): a dropped held claim alone can only move the wake later.
   */
  async abandonClaim(hold: unknown): Promise<Result<{ released: number }>> {
    return this.gate.change(() => this.rpc.consumers.abandonClaim(hold), (answer) => (answer.ok && answer.value.released > 0 ? true : null));
  }

  /** Up to 100 complete, fail, release and progress items, each fenced on its own (acks.ts). */
  async acks(input: unknown): Promise<Result<AcksAnswer>> { return this.gate.change(() => this.rpc.consumers.acks(input)); }

  // ---- dependencies (between lanes: deps/) ----

  /** The jobs registered to wait for job `id`, by lane then id. */
  async dependents(id: unknown): Promise<Result<{ dependents: { lane: string; id: string }[] }>> { return this.gate.read(() => this.rpc.deps.dependents(id)); }

  /**
   * Another lane's enqueue registers its dependents with jobs of this lane: answers, per item, whether
   * the job exists and how it settled, if it has (its settlement tells the dependent otherwise).
   * No flush: a registration is no term of the wake (its settlement writes the notice, and flushes then).
   */
  async registerDependents(input: unknown, hop?: unknown, token?: unknown): Promise<Result<RegistrationAnswer[]>> { return this.gate.change(() => this.rpc.deps.registerDependents(input, hop, token), flush.never); }

  /** Another lane's enqueue, refused, withdraws the registrations it made here (those of its `token` alone). No flush: a registration is no term of the wake. */
  async unregisterDependents(input: unknown, hop?: unknown, token?: unknown): Promise<Result<{ removed: number }>> { return this.gate.change(() => this.rpc.deps.unregisterDependents(input, hop, token), flush.never); }

  /** Another lane's outbox tells this one of settled dependencies: each applied at most once; answers per notice. */
  async notifyDependencies(input: unknown): Promise<Result<NoticeAnswer[]>> { return this.gate.change(() => this.rpc.deps.notifyDependencies(input)); }

  // ---- dead letters (deadletters/) ----

  /** Another lane's outbox sends copies of its failed jobs to this, its dead-letter lane: each written once, answered. */
  async enqueueDeadLetters(input: unknown): Promise<Result<DeadLetterShardAnswer[]>> { return this.gate.change(() => this.rpc.deadLetters.enqueueDeadLetters(input)); }

  // ---- the operator's lane ----

  /** The lane's metrics in the Prometheus text exposition, read live (docs/api.md "Metrics"). */
  async metrics(): Promise<Result<string>> { return this.gate.read(() => ok(this.life.metricsText())); }

  /** This shard's metrics report and its clock's now, which a sharded lane's route merges (docs/api.md "Metrics"). */
  async metricsReport(): Promise<Result<{ report: LaneReport; nowMs: number }>> { return this.gate.read(() => ok(this.life.metricsReading())); }

  /** The kept counts and the shard count: what `GET /v1/lanes` reads of each lane's shard 0. */
  async countsAndShards(): Promise<Result<{ counts: Counts; shards: number }>> { return this.gate.read(() => this.rpc.shards.countsAndShards()); }

  /** The kept counts alone: what `GET /v1/lanes` shows of each lane, one row read. */
  async counts(): Promise<Result<Counts>> { return this.gate.read(() => ok(this.store.counts())); }

  /**
   * Settles up to 500 queued and running jobs `failed` (running first, then queued in enqueue order)
   * and aborts their in-process attempts; `more`: whether any queued or running job is left.
   */
  async failLane(input: unknown): Promise<Result<FailLaneAnswer>> { return this.withdrawn(() => this.rpc.operator.failLane(input)); }

  /** Who holds a queue (a completing job reports `running`), else its next job, and how many are queued. */
  async queueInfo(queue: unknown): Promise<Result<QueueInfo>> { return this.gate.read(() => this.rpc.operator.queueInfo(queue)); }

  /** Sets a queue's concurrency and rate limit (they outlive its jobs); answers the queue. */
  async putQueue(queue: unknown, input: unknown): Promise<Result<QueueInfo>> { return this.gate.change(() => this.rpc.operator.putQueue(queue, input)); }

  /** Deletes the queue's queued jobs enqueued before the call (a running or completing head runs on). */
  async purgeQueue(queue: unknown): Promise<Result<PurgeAnswer>> { return this.withdrawn(() => this.rpc.operator.purgeQueue(queue)); }

  // ---- schedules ----

  /** Creates or replaces a schedule (`created` says which); its next fire is a wake term. */
  async putSchedule(name: unknown, input: unknown): Promise<Result<SchedulePut>> { return this.gate.change(() => this.rpc.scheduleRpc.putSchedule(name, input), flush.scheduleRow); }

  async getSchedule(name: unknown): Promise<Result<Schedule>> { return this.gate.read(() => this.rpc.scheduleRpc.getSchedule(name)); }

  /** Schedules by name, a page at a time: `cursor` continues after the page (null: the end). */
  async listSchedules(input?: unknown): Promise<Result<SchedulePage>> { return this.gate.read(() => this.rpc.scheduleRpc.listSchedules(input)); }

  /** Deletes a schedule; the jobs it enqueued stay. */
  async deleteSchedule(name: unknown): Promise<Result<{ deleted: true }>> { return this.gate.change(() => this.rpc.scheduleRpc.deleteSchedule(name), flush.scheduleRow); }

  /** On a shard of a sharded lane: a fire of its shard 0 whose job belongs here, `<name>@<T>` (schedules/shard-fires.ts). Flushes in its body (the enqueue path's pump, and none for a duplicate): shard 0 answers its own fires there too. */
  async enqueueFire(input: unknown): Promise<Result<EnqueueAnswer>> { return this.gate.change(() => this.rpc.scheduleRpc.enqueueFire(input), flush.inBody); }

  // ---- waitpoints (waitpoints/) ----

  /** Creates a pending waitpoint (idempotent by id: an existing one answers as it is). Its timeout is a wake term, but makes no job due: the flush re-arms, a refusal changed nothing. */
  async createWaitpoint(input: unknown): Promise<Result<WaitpointCreated>> { return this.gate.change(() => this.rpc.waitpointRpc.createWaitpoint(input), (answer) => (answer.ok ? false : null)); }

  async getWaitpoint(id: unknown): Promise<Result<Waitpoint>> { return this.gate.read(() => this.rpc.waitpointRpc.getWaitpoint(id)); }

  /** Completes a waitpoint, the first settlement alone (an unknown id is created completed); its waiting jobs here are told in the same transaction, those elsewhere after the flush, before it answers. */
  async completeWaitpoint(id: unknown, input?: unknown): Promise<Result<WaitpointCompleted>> { return this.gate.changeThen(() => this.rpc.waitpointRpc.completeWaitpoint(id, input), (answer) => (answer.ok ? this.parts.waitpointOutbox.tellNow() : null)); }

  /**
   * Another object's enqueue or wait registers its jobs as waiters of waitpoints of this lane (routed
   * to each waitpoint's shard): answers, per item, the waitpoint as it is, or `missing`. Flushes: an
   * attempt's wait may create its waitpoint, whose timeout is a term.
   */
  async registerWaitpointWaiters(input: unknown, hop?: unknown, token?: unknown): Promise<Result<WaitpointRegistrationAnswer[]>> { return this.gate.change(() => this.rpc.waitpointWaiters.registerWaitpointWaiters(input, hop, token), (answer) => (answer.ok ? false : null)); }

  /** Another object's enqueue or wait, refused, or its job that stopped waiting unheard, withdraws the registrations it made here (those of its `token` alone). No flush: a registration is no term of the wake. */
  async unregisterWaitpointWaiters(input: unknown, hop?: unknown, token?: unknown): Promise<Result<{ removed: number }>> { return this.gate.change(() => this.rpc.waitpointWaiters.unregisterWaitpointWaiters(input, hop, token), flush.never); }

  /** Another object's waitpoint outbox tells this one of settled waitpoints its jobs wait on: each applied at most once; answers per notice. */
  async notifyWaitpointWaiters(input: unknown): Promise<Result<WaitpointNoticeAnswer[]>> { return this.gate.change(() => this.rpc.waitpointWaiters.notifyWaitpointWaiters(input)); }

  /**
   * A change answered once the registrations it withdrew (jobs waiting on waitpoints elsewhere,
   * cancelled, failed or deleted) are taken back there, so that those waitpoints' `waiters` no longer
   * count them (waits/waitpoint-outbox.ts: at most 2 s; none owed, no wait and no statement). Flushed
   * before that wait.
   */
  private withdrawn<T>(body: () => Result<T> | Promise<Result<T>>): Result<T> | Promise<Result<T>> {
    return this.gate.changeThen(body, () => this.parts.waitpointOutbox.withdrawNow());
  }

  /** Deletes settled waitpoints settled before `settledBefore` (at most `limit`) whose waiters were all told: the lane's sweep's share. */
  async sweepWaitpoints(input: unknown): Promise<Result<{ removed: number }>> { return this.gate.change(() => this.rpc.waitpointRpc.sweepWaitpoints(input)); }

  // ---- the cron's check of lost alarms ----

  /**
   * The check of the front worker's cron (worker/alarm-check.ts), idempotent: the stored alarm becomes
   * the computed wake, so an alarm the platform lost, or holds later than the wake, is set again. A
   * lane with nothing to wake for lets the registry stop watching it (wake/alarm-watch.ts). It is the
   * wake's own re-arm, in its body.
   */
  async checkWake(): Promise<Result<WakeCheck>> { return this.gate.change(async () => ok(await this.life.checkWake()), flush.inBody); }

  // ---- checkpoints and progress (durable steps) ----

  /** Records a checkpoint for the attempt holding the token: fenced like complete; within the job's limits. */
  async saveCheckpoint(id: unknown, name: unknown, input: unknown): Promise<Result<{ checkpoint: CheckpointInfo }>> { return this.gate.change(() => this.rpc.steps.saveCheckpoint(id, name, input), flush.onRefusal); }

  /** Every checkpoint of a job, in name order (the operator's view). */
  async listCheckpoints(id: unknown): Promise<Result<{ checkpoints: Checkpoint[] }>> { return this.gate.read(() => this.rpc.steps.listCheckpoints(id)); }

  /** Records the job's progress for the attempt holding the token: fenced like complete; the token is kept. */
  async progress(id: unknown, input: unknown): Promise<Result<{ job: Job }>> { return this.whole(await this.gate.change(() => this.rpc.steps.progress(id, input), flush.onRefusal)); }

  /** An answer that carries one job, its payload and result whole: read back from R2 when held there (payloads/whole-answers.ts). */
  private whole<T>(answer: Result<T>): Result<T> | Promise<Result<T>> {
    return wholeAnswer(this.parts.payloads, answer);
  }

  // ---- jobs' streams (results/) ----

  /** Writes 1..100 chunks to the job's stream for the attempt holding the token, all or none: fenced like progress (the token is kept), within the job's limits. A success moves no wake term (its held readers are told by the write). */
  async writeStream(id: unknown, input: unknown): Promise<Result<StreamWritten>> { return this.gate.change(() => this.rpc.streams.writeStream(id, input), flush.onRefusal); }

  /** The job's events after `after` (and the job, once settled, with its last): at once when there are any, else held up to `holdMs` without CPU. */
  async streamEvents(id: unknown, after: unknown, holdMs?: unknown): Promise<Result<StreamPage>> { return this.gate.read(() => this.rpc.streams.streamEvents(id, after, holdMs)); }
}

/** A lane class and the kinds it declares (`defineLane({ kinds })`), which the RPC client's types read (`createLaneClient<typeof MyLane>`). */
export type LaneClass<K extends KindSchemas = {}> = typeof Lane & { readonly kinds: K };

/** Builds a lane class with executors, hooks and declared kinds, to export from a Worker under its binding's class name. */
export function defineLane<E = SwitchyardEnv, K extends KindSchemas = {}>(options: LaneOptions<E> & { kinds?: K }): LaneClass<K> {
  return class extends Lane {
    static override options = options as LaneOptions; // the runtime hands the lane the Worker's env: E
    /** The declared kinds, for the OpenAPI document (`createApp({ lane })`) and the RPC client's types. */
    static readonly kinds = (options.kinds ?? {}) as K;
  };
}
