/**
 * The lane: one Durable Object, one SQLite database, one alarm. A thin class: each RPC method
 * validates its input (input.ts), calls a part of the lane (wiring.ts builds and connects them), and
 * asks the wake (wake/) for a flush; `alarm()` fires schedules, recovers, winds up and flushes.
 * Expected refusals come back as `Result` data, never as thrown coded errors.
 */
import { DurableObject } from "cloudflare:workers";
import type { AcksAnswer, BatchAnswer, CancelAnswer, EnqueueAnswer, FailLaneAnswer, JobPage, PurgeAnswer, QueueInfo } from "../shared/answers.js";
import { systemClock, systemEntropy, type Clock, type Entropy } from "../shared/clock.js";
import { DEFAULT_LEASE_MS, DEFAULT_SWEEP_LIMIT, MAX_CHECKPOINT_BYTES, MAX_PROGRESS_BYTES } from "../shared/defaults.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { Checkpoint, CheckpointInfo, Counts, Job, LaneInfo, Lease, PulledJob } from "../shared/job.js";
import { DEFAULT_HISTORY_WINDOW_MS, HistoryRequest, type HistoryAnswer } from "../shared/history.js";
import { serializeJson } from "../shared/json.js";
import { MAX_SHARDS, parseShardObjectName, tokenPrefix } from "../shared/shards.js";
import type { LostEvent, TransitionEvent } from "../shared/log.js";
import type { Schedule, SchedulePage, SchedulePut } from "../shared/schedule.js";
import * as S from "../shared/schemas.js";
import { applyAcks } from "./attempts/acks.js";
import type { ClaimAsk, Claims } from "./attempts/claim.js";
import type { Dispatcher } from "./attempts/dispatcher.js";
import type { FencedWrites } from "./attempts/fenced-writes.js";
import { enqueueAnswer, enqueueAnswerText, type EnqueueDone } from "./enqueue/enqueue-text.js";
import { Notices, Registrations, type NoticeAnswer, type RegistrationAnswer } from "./deps/notices.js";
import type { SwitchyardEnv } from "./env.js";
import { HoldName, parse, parseBatchEnqueue, parseId, parseJobCall, parseJsonText, parseName, parseScheduleName } from "./input.js";
import type { ScheduleStore } from "./schedules/schedules.js";
import type { CheckpointStore } from "./steps/checkpoints.js";
import { decodeCursor, encodeCursor } from "./store/cursor.js";
import type { JobStore } from "./store/job-store.js";
import type { MetricsReporter } from "./metrics/reporter.js";
import type { Belt, WakeCheck } from "./wake/belt.js";
import type { Outbox } from "./deps/outbox.js";
import type { WakeReads } from "./wake/reads.js";
import type { Wake } from "./wake/wake.js";
import { LaneWiring, type LaneOptions } from "./wiring.js";
import type { Located, Reservation } from "./shards/shard-state.js";
import type { Watched } from "./shards/watchers.js";
import { z } from "zod";

/** A shard's index, as a lane's RPC takes it. */
const ShardIndex = z.number().int().min(0).max(MAX_SHARDS - 1);
/** A position in a shard's list (a job's seq; 0: the start). */
const Seq = z.number().int().min(0);

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

  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    const clock: Clock = { now: () => this.time.clock.now() };
    // A shard i >= 1 of a sharded lane marks the lease tokens it mints with its index, so that a
    // fenced write finds its shard from the token alone (docs/concepts.md "Sharded lanes").
    const prefix = tokenPrefix(parseShardObjectName(ctx.id.name ?? "").index);
    const entropy: Entropy = { id: () => this.time.entropy.id(), token: () => prefix + this.time.entropy.token(), random: () => this.time.entropy.random() };
    const rooms = (this.rooms = new LaneWiring(ctx, env, (new.target as typeof Lane).options, clock, entropy));
    ({ store: this.store, claims: this.claims, fenced: this.fenced, checkpoints: this.checkpointStore, dispatcher: this.dispatcher, schedules: this.schedules, wake: this.wake, belt: this.belt } = rooms);
    this.wakeReads = rooms.wakeComputer.reads;
    this.outbox = rooms.outbox;
    this.reporter = rooms.metrics;
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
      for (const i of later) answers[i] = enqueueAnswerText(await this.rooms.enqueue.one((inputs[i] as { value: unknown }).value), lane);
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

  async getJob(id: unknown): Promise<Result<Job>> {
    return this.answer(() => {
      const name = parseId(id);
      if (!name.ok) return name;
      const job = this.store.getJob(name.value);
      return job ? ok(job) : fail("job_not_found", `no job ${name.value} in lane ${this.store.lane}`);
    });
  }

  /** A page of jobs in enqueue order: at most `limit` and at most 4 MiB of JSON; the cursor continues. */
  async listJobs(input: unknown): Promise<Result<JobPage>> {
    return this.answer(() => {
      const query = parse(S.ListQuery, input ?? {});
      if (!query.ok) return query;
      let afterSeq = 0;
      if (query.value.cursor !== undefined) {
        const seq = decodeCursor(query.value.cursor);
        if (seq === null) return fail("invalid_request", "cursor is not one this API gave", [{ path: ["cursor"], message: "unknown cursor" }]);
        afterSeq = seq;
      }
      const { jobs, lastSeq, more } = this.store.listJobs({ ...query.value, afterSeq });
      return ok({ jobs, cursor: more && lastSeq !== null ? encodeCursor(lastSeq) : null });
    });
  }

  async info(): Promise<Result<LaneInfo>> {
    return this.answer(() => this.rooms.laneInfo());
  }

  /** The per-minute buckets of the last `windowMs` (default an hour), oldest first (docs/api.md, "Metrics"). */
  async history(input?: unknown): Promise<Result<HistoryAnswer>> {
    return this.answer(() => {
      const request = parse(HistoryRequest, input ?? {});
      if (!request.ok) return request;
      return ok({ buckets: this.rooms.history.read(request.value.windowMs ?? DEFAULT_HISTORY_WINDOW_MS) });
    });
  }

  /** The instant the lane's alarm is stored for (null: none), as the platform has it. For inspection and tests. */
  async storedAlarm(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }

  // ---- admin ----

  /**
   * Sets the lane's settings on this object. `shards` sets this object's stored shard count (the
   * router tells every shard: docs/concepts.md "Sharded lanes"), only while it holds no job (and, on
   * shard 0 going above one shard, no schedule): else 409 `lane_not_empty` and nothing changes.
   */
  async configure(input: unknown): Promise<Result<LaneInfo>> {
    return this.answer(() => {
      const patch = parse(S.LanePatch, input ?? {});
      if (!patch.ok) return patch;
      const { shards } = patch.value;
      if (shards !== undefined && shards !== this.rooms.shard.count()) {
        const held = this.rooms.heldForResharding(shards);
        if (held) return fail("lane_not_empty", `lane ${this.store.lane} ${held}: its shard count can change only while it is empty`);
        this.rooms.shard.setCount(shards);
      }
      this.store.settings.configure(patch.value);
      this.wake.afterChange();
      return this.rooms.laneInfo();
    });
  }

  async cancel(id: unknown, input?: unknown): Promise<Result<CancelAnswer>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.CancelRequest, input ?? {});
      if (!call.ok) return call;
      const { reason, onlyIfQueued } = call.value.request;
      const answer = this.rooms.cancels.cancel(call.value.id, reason ?? null, onlyIfQueued === true);
      if (answer.ok && answer.value.status === "cancelling") this.dispatcher.abort(call.value.id, "cancelled");
      this.wake.afterChange();
      return answer;
    });
  }

  async requeue(id: unknown): Promise<Result<{ job: Job }>> {
    return this.answer(() => {
      const name = parseId(id);
      if (!name.ok) return name;
      return this.changed(this.store.requeue(name.value));
    });
  }

  async sweep(input: unknown): Promise<Result<{ removed: number }>> {
    return this.answer(() => {
      const request = parse(S.SweepRequest, input);
      if (!request.ok) return request;
      const removed = this.rooms.retention.sweep(request.value.settledBefore, request.value.limit ?? DEFAULT_SWEEP_LIMIT);
      this.wake.afterChange();
      return ok({ removed });
    });
  }

  // ---- pull consumers: the fence ----

  /**
   * Claims due jobs for a pull consumer, each with its lease token and what its earlier attempts
   * recorded. With `waitMs` and nothing claimable, the claim is held until a flush finds it a job or
   * `waitMs` passes (waiters.ts). `hold` is the front worker's name for a held claim, so that it can
   * `abandonClaim` it when its client leaves.
   */
  async claim(input?: unknown, hold?: unknown): Promise<Result<{ jobs: PulledJob[] }>> {
    return this.answer(async () => {
      const request = parse(S.ClaimRequest, input ?? {});
      if (!request.ok) return request;
      const name = hold === undefined ? ok(null) : parse(HoldName, hold);
      if (!name.ok) return name;
      const ask: ClaimAsk = { kinds: request.value.kinds ?? null, max: request.value.max ?? 1, leaseMs: request.value.leaseMs ?? DEFAULT_LEASE_MS };
      const jobs = this.claims.forConsumer(ask, this.dispatcher);
      if (jobs.length > 0) this.wake.afterChange();
      const waitMs = request.value.waitMs ?? 0;
      if (jobs.length > 0 || waitMs === 0) return ok({ jobs });
      const held = this.rooms.waiters.hold(ask, waitMs, name.value);
      // A claim held while a bucket is empty waits for its next token, a term of the wake.
      if (held && this.store.settings.read().rateLimit !== null) this.wake.afterChange(false);
      return ok({ jobs: held ? await held : [] });
    });
  }

  async renew(id: unknown, input: unknown): Promise<Result<{ lease: Lease }>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.RenewRequest, input);
      if (!call.ok) return call;
      const { token, leaseMs, progress } = call.value.request;
      const progressJson = progress === undefined ? ok(null) : serializeJson(progress, "progress", MAX_PROGRESS_BYTES);
      if (!progressJson.ok) return progressJson;
      const lease = this.fenced.renew(call.value.id, token, leaseMs ?? DEFAULT_LEASE_MS, progressJson.value);
      this.wake.afterChange();
      return lease.ok ? ok({ lease: lease.value }) : lease;
    });
  }

  async complete(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.CompleteRequest, input);
      if (!call.ok) return call;
      const result = serializeJson(call.value.request.result, "result");
      if (!result.ok) return result;
      return this.changed(this.fenced.complete(call.value.id, call.value.request.token, result.value));
    });
  }

  async fail(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.FailRequest, input);
      if (!call.ok) return call;
      const { token, error, retry, retryAfterMs } = call.value.request;
      return this.changed(this.fenced.fail(call.value.id, token, error, retry !== false, retryAfterMs ?? null));
    });
  }

  /** Ends the attempt and queues its job again after `delayMs`, giving back the attempt (fenced like complete). */
  async snooze(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.SnoozeRequest, input);
      if (!call.ok) return call;
      return this.changed(this.fenced.snooze(call.value.id, call.value.request.token, call.value.request.delayMs));
    });
  }

  async release(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.ReleaseRequest, input);
      if (!call.ok) return call;
      return this.changed(this.fenced.release(call.value.id, call.value.request.token));
    });
  }

  // ---- sharded lanes (docs/concepts.md "Sharded lanes"; shards/shard-state.ts) ----

  /** The lane's shard count as this object stores it, and whether it holds any job or schedule. */
  async shardState(): Promise<Result<{ shards: number; index: number; empty: boolean }>> {
    return this.answer(() => ok({ shards: this.rooms.shard.count(), index: this.rooms.shard.index, empty: this.rooms.heldForResharding(2) === null }));
  }

  /** On the id's own shard: reserves `id` for the shard `target` that owns its job's routing key. */
  async reserve(id: unknown, target: unknown, queue: unknown, replacing?: unknown): Promise<Result<Reservation>> {
    return this.answer(() => {
      const name = parseId(id);
      if (!name.ok) return name;
      const shard = parse(ShardIndex, target);
      if (!shard.ok) return shard;
      const queueName = queue === null ? ok(null) : parseName(queue, "queue");
      if (!queueName.ok) return queueName;
      const replaced = replacing === undefined || replacing === null ? ok(null) : parse(ShardIndex, replacing);
      if (!replaced.ok) return replaced;
      return ok(this.rooms.shard.reserve(name.value, shard.value, queueName.value, this.store.row(name.value) !== undefined, replaced.value));
    });
  }

  /**
   * A sharded lane's batch, checked before any shard writes its part: what `enqueueBatch` would refuse
   * here (bad input, a job this shard does not own, an id used here with another spec), writing nothing.
   */
  async checkBatch(input: unknown): Promise<Result<null>> {
    return this.answer(() => {
      const request = parseBatchEnqueue(input);
      if (!request.ok) return request;
      const { jobs, traceparent, shards } = request.value;
      const specs = this.rooms.enqueue.toSpecs(jobs.map((job) => ({ ...job, traceparent, shards })), this.time.clock.now());
      if (!specs.ok) return specs;
      for (const spec of specs.value) {
        if (!this.store.row(spec.id)) continue;
        const existing = this.store.existing(spec);
        if (!existing.ok) return existing;
      }
      return ok(null);
    });
  }

  /** On the id's own shard: where its job is (this shard, the one it is reserved for, or nowhere: null). */
  async locate(id: unknown): Promise<Result<Located>> {
    return this.answer(() => {
      const name = parseId(id);
      if (!name.ok) return name;
      if (this.store.row(name.value)) return ok({ shard: this.rooms.shard.index });
      return ok({ shard: this.rooms.shard.reservedFor(name.value) });
    });
  }

  /** Whether job `id` is stored here (a reservation elsewhere naming this shard is then live). */
  async hasJob(id: unknown): Promise<Result<boolean>> {
    return this.answer(() => {
      const name = parseId(id);
      return name.ok ? ok(this.store.row(name.value) !== undefined) : name;
    });
  }

  /** Drops the reservation of `id` if it still names `shard`: its job there is gone. */
  async dropReservation(id: unknown, shard: unknown): Promise<Result<null>> {
    return this.answer(() => {
      const name = parseId(id);
      if (!name.ok) return name;
      const index = parse(ShardIndex, shard);
      if (!index.ok) return index;
      this.rooms.shard.drop(name.value, index.value);
      return ok(null);
    });
  }

  /**
   * The runAt of the longest-waiting due queued job here (null: none) and the flush epoch: a sharded
   * claim's look before it claims, and what its watch names (shards/watchers.ts).
   */
  async due(): Promise<Result<{ oldestDueAt: number | null; epoch: number }>> {
    return this.answer(() => ok({ oldestDueAt: this.store.laneCounts.oldestDueAt(this.time.clock.now()), epoch: this.rooms.watchers.epoch }));
  }

  /** A sharded lane's held claim: waits, claiming nothing, until a job is due here or `waitMs` passes. */
  async awaitWork(epoch: unknown, waitMs: unknown, hold: unknown): Promise<Result<Watched>> {
    return this.answer(async () => {
      const since = parse(Seq, epoch);
      if (!since.ok) return since;
      const wait = parse(S.ClaimRequest.shape.waitMs.unwrap(), waitMs);
      if (!wait.ok) return wait;
      const name = parse(HoldName, hold);
      if (!name.ok) return name;
      const watching = this.rooms.watchers.watch(since.value, wait.value, name.value);
      if (this.rooms.watchers.size > 0) this.wake.afterChange(false); // a rate-limited lane's next token is a term of the wake
      return ok(await watching);
    });
  }

  /** The router of a held claim stops watching here (it claimed elsewhere, or its client left). */
  async stopWatching(hold: unknown): Promise<Result<{ stopped: number }>> {
    return this.answer(() => {
      const name = parse(HoldName, hold);
      return name.ok ? ok({ stopped: this.rooms.watchers.stop(name.value) }) : name;
    });
  }

  /** A page of jobs with each one's seq: what a sharded lane's merged list is made of. */
  async listShardPage(input: unknown, afterSeq: unknown): Promise<Result<{ jobs: Job[]; seqs: number[]; more: boolean }>> {
    return this.answer(() => {
      const query = parse(S.ListQuery, input ?? {});
      if (!query.ok) return query;
      const after = parse(Seq, afterSeq);
      if (!after.ok) return after;
      const { jobs, seqs, more } = this.store.listJobs({ ...query.value, afterSeq: after.value });
      return ok({ jobs, seqs, more });
    });
  }

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
  async abandonClaim(hold: unknown): Promise<Result<{ released: number }>> {
    return this.answer(() => {
      const name = parse(HoldName, hold);
      if (!name.ok) return name;
      const released = this.rooms.waiters.abandon(name.value);
      if (released > 0) this.wake.afterChange();
      return ok({ released });
    });
  }

  /** Up to 100 complete, fail, release and progress items, each fenced on its own (acks.ts). */
  async acks(input: unknown): Promise<Result<AcksAnswer>> {
    return this.answer(() => {
      const request = parse(S.AcksRequest, input);
      if (!request.ok) return request;
      const results = applyAcks(request.value.acks, {
        complete: (id, token, json) => this.fenced.complete(id, token, json),
        // A pull consumer may have recorded checkpoints: the batch deletes them with the completion.
        completeBatch: (items) => this.fenced.completeBatch(items.map((item) => ({ ...item, checkpoints: true }))),
        fail: (id, token, message, retry, after) => this.fenced.fail(id, token, message, retry, after),
        release: (id, token) => this.fenced.release(id, token),
        snooze: (id, token, delayMs) => this.fenced.snooze(id, token, delayMs),
        progress: (id, token, json) => this.checkpointStore.progress(id, token, json),
      });
      this.wake.afterChange();
      return results.ok ? ok({ results: results.value }) : results;
    });
  }

  // ---- dependencies (between lanes: deps/) ----

  /** The jobs registered to wait for job `id`, by lane then id. */
  async dependents(id: unknown): Promise<Result<{ dependents: { lane: string; id: string }[] }>> {
    return this.answer(() => {
      const name = parseId(id);
      if (!name.ok) return name;
      const listed = this.rooms.dependencies.dependents(name.value);
      return listed.ok ? ok({ dependents: listed.value }) : listed;
    });
  }

  /**
   * Another lane's enqueue registers its dependents with jobs of this lane: answers, per item, whether
   * the job exists and how it settled, if it has (its settlement tells the dependent otherwise).
   */
  async registerDependents(input: unknown): Promise<Result<RegistrationAnswer[]>> {
    return this.answer(() => {
      const registrations = parse(Registrations, input);
      if (!registrations.ok) return registrations;
      // A job of a sharded lane may live on another shard than this one: not carried yet, so refused
      // rather than answered missing (docs/concepts.md "Sharded lanes").
      if (this.rooms.shard.count() > 1 || this.rooms.shard.index > 0) return fail("invalid_request", `dependencies on jobs of a sharded lane (${this.store.lane}) are not supported yet`, [{ path: ["dependsOn"], message: "a sharded lane" }]);
      return ok(this.rooms.dependencies.register(registrations.value));
    });
  }

  /** Another lane's enqueue, refused, withdraws the registrations it made here. */
  async unregisterDependents(input: unknown): Promise<Result<{ removed: number }>> {
    return this.answer(() => {
      const registrations = parse(Registrations, input);
      return registrations.ok ? ok({ removed: this.rooms.dependencies.unregister(registrations.value) }) : registrations;
    });
  }

  /** Another lane's outbox tells this one of settled dependencies: each applied at most once; answers per notice. */
  async notifyDependencies(input: unknown): Promise<Result<NoticeAnswer[]>> {
    return this.answer(() => {
      const notices = parse(Notices, input);
      if (!notices.ok) return notices;
      const answers = this.rooms.dependencies.apply(notices.value);
      this.wake.afterChange();
      return ok(answers);
    });
  }

  // ---- the operator's lane ----

  /** The lane's metrics in the Prometheus text exposition, read live (docs/api.md "Metrics"). */
  async metrics(): Promise<Result<string>> {
    return this.answer(() => ok(this.rooms.metricsText()));
  }

  /** The kept counts and the shard count: what `GET /v1/lanes` reads of each lane's shard 0. */
  async countsAndShards(): Promise<Result<{ counts: Counts; shards: number }>> {
    return this.answer(() => ok({ counts: this.store.counts(), shards: this.rooms.shard.count() }));
  }

  /** The kept counts alone: what `GET /v1/lanes` shows of each lane, one row read. */
  async counts(): Promise<Result<Counts>> {
    return this.answer(() => ok(this.store.counts()));
  }

  /**
   * Settles up to 500 queued and running jobs `failed` (running first, then queued in enqueue order)
   * and aborts their in-process attempts; `more`: whether any queued or running job is left.
   */
  async failLane(input: unknown): Promise<Result<FailLaneAnswer>> {
    return this.answer(() => {
      const request = parse(S.FailLaneRequest, input);
      if (!request.ok) return request;
      const answer = this.rooms.failLane(request.value.reason);
      this.wake.afterChange();
      return ok(answer);
    });
  }

  /** Who holds a queue (a completing job reports `running`), else its next job, and how many are queued. */
  async queueInfo(queue: unknown): Promise<Result<QueueInfo>> {
    return this.answer(() => {
      const name = parseName(queue, "queue");
      return name.ok ? ok(this.rooms.queues.info(name.value)) : name;
    });
  }

  /** Sets a queue's concurrency and rate limit (they outlive its jobs); answers the queue. */
  async putQueue(queue: unknown, input: unknown): Promise<Result<QueueInfo>> {
    return this.answer(() => {
      const name = parseName(queue, "queue");
      if (!name.ok) return name;
      const request = parse(S.QueuePut, input ?? {});
      if (!request.ok) return request;
      this.rooms.queues.configure(name.value, request.value);
      this.wake.afterChange(); // a wider queue may start a job now; a narrower one, none
      return ok(this.rooms.queues.info(name.value));
    });
  }

  /** Deletes the queue's queued jobs enqueued before the call (a running or completing head runs on). */
  async purgeQueue(queue: unknown): Promise<Result<PurgeAnswer>> {
    return this.answer(async () => {
      const name = parseName(queue, "queue");
      if (!name.ok) return name;
      const purged = await this.rooms.queues.purge(name.value);
      this.wake.afterChange();
      return ok({ purged });
    });
  }

  // ---- schedules ----

  /** Creates or replaces a schedule (`created` says which); its next fire is a wake term. */
  async putSchedule(name: unknown, input: unknown): Promise<Result<SchedulePut>> {
    return this.answer(() => {
      const schedule = parseScheduleName(name);
      if (!schedule.ok) return schedule;
      const request = parse(S.ScheduleRequest, input);
      if (!request.ok) return request;
      // A fire enqueues on this object: a sharded lane would need it routed (docs/concepts.md "Sharded lanes").
      if (this.rooms.shard.count() > 1 || this.rooms.shard.index > 0) return fail("invalid_request", "schedules are not supported on a sharded lane yet", [{ path: ["lane"], message: "a sharded lane" }]);
      const put = this.schedules.put(schedule.value, request.value);
      if (put.ok) this.wake.afterChange(false);
      return put;
    });
  }

  async getSchedule(name: unknown): Promise<Result<Schedule>> {
    return this.answer(() => {
      const schedule = parseScheduleName(name);
      return schedule.ok ? this.schedules.get(schedule.value) : schedule;
    });
  }

  /** Schedules by name, a page at a time: `cursor` continues after the page (null: the end). */
  async listSchedules(input?: unknown): Promise<Result<SchedulePage>> {
    return this.answer(() => {
      const query = parse(S.ScheduleListQuery, input ?? {});
      return query.ok ? ok(this.schedules.list(query.value.cursor ?? null, query.value.limit)) : query;
    });
  }

  /** Deletes a schedule; the jobs it enqueued stay. */
  async deleteSchedule(name: unknown): Promise<Result<{ deleted: true }>> {
    return this.answer(() => {
      const schedule = parseScheduleName(name);
      if (!schedule.ok) return schedule;
      const deleted = this.schedules.delete(schedule.value);
      if (deleted.ok) this.wake.afterChange(false);
      return deleted;
    });
  }

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
  async saveCheckpoint(id: unknown, name: unknown, input: unknown): Promise<Result<{ checkpoint: CheckpointInfo }>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.CheckpointRequest, input);
      if (!call.ok) return call;
      const checkpoint = parseName(name, "checkpoint");
      if (!checkpoint.ok) return checkpoint;
      const value = serializeJson(call.value.request.value, "value", MAX_CHECKPOINT_BYTES);
      if (!value.ok) return value;
      const saved = this.checkpointStore.save(call.value.id, call.value.request.token, checkpoint.value, value.value);
      if (!saved.ok) this.wake.afterChange(); // the holder of a cancel-requested job spoke: it settled
      return saved.ok ? ok({ checkpoint: saved.value }) : saved;
    });
  }

  /** Every checkpoint of a job, in name order (the operator's view). */
  async listCheckpoints(id: unknown): Promise<Result<{ checkpoints: Checkpoint[] }>> {
    return this.answer(() => {
      const name = parseId(id);
      if (!name.ok) return name;
      const listed = this.checkpointStore.list(name.value);
      return listed.ok ? ok({ checkpoints: listed.value }) : listed;
    });
  }

  /** Records the job's progress for the attempt holding the token: fenced like complete; the token is kept. */
  async progress(id: unknown, input: unknown): Promise<Result<{ job: Job }>> {
    return this.answer(() => {
      const call = parseJobCall(id, S.ProgressRequest, input);
      if (!call.ok) return call;
      const progress = serializeJson(call.value.request.progress, "progress", MAX_PROGRESS_BYTES);
      if (!progress.ok) return progress;
      const recorded = this.checkpointStore.progress(call.value.id, call.value.request.token, progress.value);
      if (!recorded.ok) this.wake.afterChange();
      return recorded.ok ? ok({ job: recorded.value }) : recorded;
    });
  }

  // ---- helpers ----

  /** Every RPC answer goes through here: a lane of a newer schema refuses all of them, changing nothing. */
  private async answer<T>(body: () => Result<T> | Promise<Result<T>>): Promise<Result<T>> {
    return this.rooms.refusal<T>() ?? body();
  }

  /** A write that answers a job: flush after it, whatever it answered. */
  private changed(answer: Result<Job>): Result<{ job: Job }> {
    this.wake.afterChange();
    return answer.ok ? ok({ job: answer.value }) : answer;
  }
}

/** Builds a lane class with executors and hooks, to export from a Worker under its binding's class name. */
export function defineLane<E = SwitchyardEnv>(options: LaneOptions<E>): typeof Lane {
  return class extends Lane {
    static override options = options as LaneOptions; // the runtime hands the lane the Worker's env: E
  };
}
