/**
 * What a shard of a sharded lane answers its router (docs/concepts.md "Sharded lanes";
 * shards/shard-state.ts): the bodies of lane.ts's methods. Also `configure`, which sets the stored
 * shard count with the other settings.
 */
import * as S from "../../shared/schemas.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Counts, Job, LaneInfo } from "../../shared/job.js";
import { MAX_BATCH_JOBS, MAX_DEPENDENCIES } from "../../shared/defaults.js";
import { Name } from "../../shared/schemas.js";
import { selfDeadLetter } from "../../shared/dead-letters.js";
import type { Clock } from "../../shared/clock.js";
import type { Dependencies } from "../deps/dependencies.js";
import type { Enqueue } from "../enqueue/enqueue.js";
import type { KindChecks } from "../kinds/kind-checks.js";
import { HoldName, parse, parseBatchEnqueue, parseId, parseName, ReservationNonce as Nonce, ShardIndex } from "../input.js";
import type { KeyMoves } from "../shards/key-moves.js";
import type { Located, Refusal, Reservation, ShardState } from "../shards/shard-state.js";
import type { Watched, Watchers } from "../shards/watchers.js";
import type { JobStore } from "../store/job-store.js";
import type { Wake } from "../wake/wake.js";
import type { Waitpoints } from "../waitpoints/waitpoints.js";
import { z } from "zod";
import type { JobSpec } from "../../shared/job-spec.js";
import type { Claims, InProcess } from "../attempts/claim.js";
import { claimCounter } from "../shards/claim-counts.js";

/** A position in a shard's list (a job's seq; 0: the start). */
const Seq = z.number().int().min(0);

/** A held claim's watch with a count: the claim (checked as a claim), and the count here it has seen. */
const Counting = z.object({ request: z.unknown(), seen: z.number().int().min(0) }).strict();

/** The parts a shard's calls reach. */
export interface ShardParts {
  readonly store: JobStore;
  readonly shard: ShardState;
  readonly dependencies: Dependencies;
  readonly keyMoves: KeyMoves;
  readonly enqueue: Enqueue;
  /** The declared kinds' payload checks (kinds/kind-checks.ts). */
  readonly kinds: KindChecks;
  readonly watchers: Watchers;
  readonly waitpoints: Waitpoints;
  /** A watch flushes itself, before it waits (rpc/gate.ts `flush.inBody`). */
  readonly wake: Wake;
  /** What a watch with a count counts (shards/claim-counts.ts). */
  readonly claims: Claims;
  readonly dispatcher: InProcess;
}

/** The lane's info (lane-lifecycle.ts), which `configure` answers. */
export interface LaneInfoSource {
  laneInfo(): Result<LaneInfo>;
}

export class ShardRpc {
  constructor(
    private readonly parts: ShardParts,
    private readonly life: LaneInfoSource,
    private readonly clock: Clock,
  ) {}

  configure(input: unknown): Result<LaneInfo> {
    const patch = parse(S.LanePatch, input ?? {});
    if (!patch.ok) return patch;
    const self = selfDeadLetter(this.parts.store.lane, patch.value);
    if (self) return self;
    const { shards } = patch.value;
    if (shards !== undefined && shards !== this.parts.shard.count()) {
      const held = this.heldForResharding();
      if (held) return fail("lane_not_empty", `lane ${this.parts.store.lane} ${held}: its shard count can change only while it is empty`);
      this.parts.shard.setCount(shards);
    }
    this.parts.store.settings.configure(patch.value);
    return this.life.laneInfo();
  }

  /**
   * Why this object's shard count may not change now (null: it may): it holds jobs. Schedules stay
   * on shard 0 whatever the count, their fires routed by it (schedules/shard-fires.ts).
   */
  private heldForResharding(): string | null {
    const counts = this.parts.store.counts();
    if (Object.values(counts).some((n) => n > 0)) return "holds jobs";
    // A waitpoint lives in the shard its id hashes to: another count would send its calls elsewhere.
    if (this.parts.waitpoints.any()) return "holds waitpoints";
    // A debounce key's job on its way to another shard is a job of the lane too (shards/key-moves.ts).
    if (this.parts.keyMoves.nextAt() !== null) return "moves a job to another shard";
    return null;
  }

  shardState(): Result<{ shards: number; index: number; empty: boolean }> {
    return ok({ shards: this.parts.shard.count(), index: this.parts.shard.index, empty: this.heldForResharding() === null });
  }

  reserve(id: unknown, target: unknown, queue: unknown, replacing?: unknown): Result<Reservation> {
    const name = parseId(id);
    if (!name.ok) return name;
    const shard = parse(ShardIndex, target);
    if (!shard.ok) return shard;
    const queueName = queue === null ? ok(null) : parseName(queue, "queue");
    if (!queueName.ok) return queueName;
    const replaced = replacing === undefined || replacing === null ? ok(null) : parse(Nonce, replacing);
    if (!replaced.ok) return replaced;
    const jobHere = this.jobHere(name.value);
    return ok(this.parts.shard.reserve(name.value, shard.value, queueName.value, jobHere, replaced.value, !jobHere && this.parts.dependencies.isPending(name.value)));
  }

  refuseReservation(id: unknown, nonce: unknown): Result<Refusal> {
    const name = parseId(id);
    if (!name.ok) return name;
    const refused = parse(Nonce, nonce);
    if (!refused.ok) return refused;
    const jobHere = this.jobHere(name.value);
    return ok(this.parts.shard.refuse(name.value, refused.value, jobHere, !jobHere && this.parts.dependencies.isPending(name.value)));
  }

  /** Whether job `id` is here, or on its way from here to another shard (its debounce key's move, shards/key-moves.ts): either way it exists. */
  private jobHere(id: string): boolean {
    return this.parts.store.row(id) !== undefined || this.parts.keyMoves.pendingId(id);
  }

  checkBatch(input: unknown): Result<null> | Promise<Result<null>> {
    const request = parseBatchEnqueue(input);
    if (!request.ok) return request;
    const { jobs, traceparent, shards } = request.value;
    // The keys' reservations are checked by the write: a job whose key's job the router moves first is checked here too.
    const specs = this.parts.enqueue.toSpecs(jobs.map((job) => ({ ...job, traceparent, shards })), this.clock.now(), false);
    if (!specs.ok) return specs;
    // Declared kinds' payloads (kinds/kind-checks.ts) after the request's own refusals, by this part's
    // numbering: the router renumbers them to the batch's.
    const refused = this.parts.kinds.batch(jobs);
    if (refused instanceof Promise) return refused.then((r) => r ?? this.checkExisting(specs.value));
    return refused ?? this.checkExisting(specs.value);
  }

  /** The batch's jobs whose ids exist here: each must be the same job (else the conflict's refusal). */
  private checkExisting(specs: readonly JobSpec[]): Result<null> {
    for (const spec of specs) {
      if (!this.parts.store.row(spec.id)) continue;
      const existing = this.parts.store.existing(spec);
      if (!existing.ok) return existing;
    }
    return ok(null);
  }

  locate(id: unknown): Result<Located> {
    const name = parseId(id);
    if (!name.ok) return name;
    if (this.parts.store.row(name.value)) return ok({ shard: this.parts.shard.index });
    return ok({ shard: this.parts.shard.reservedFor(name.value) });
  }

  /** Where each of `ids` is as this shard knows: its index (a job here), the shard an id is reserved here for (its job may be there), or null. */
  knownIds(ids: unknown): Result<(number | null)[]> {
    const names = parse(z.array(Name).max(MAX_BATCH_JOBS * MAX_DEPENDENCIES), ids);
    if (!names.ok) return names;
    return ok(names.value.map((id) => (this.parts.store.row(id) !== undefined ? this.parts.shard.index : this.parts.shard.reservedFor(id))));
  }

  hasJob(id: unknown): Result<boolean> {
    const name = parseId(id);
    return name.ok ? ok(this.parts.store.row(name.value) !== undefined) : name;
  }

  due(): Result<{ oldestDueAt: number | null; epoch: number }> {
    return ok({ oldestDueAt: this.parts.store.laneCounts.oldestDueAt(this.clock.now()), epoch: this.parts.watchers.epoch });
  }

  /**
   * A held claim's watch of this shard. With `counting` (a claim with `minJobs`), answered only when
   * the claim's count here grows past the `seen` it names, whatever flushes meanwhile: a shard whose
   * jobs are too few for it then costs nothing until one more comes. Its epoch is not read.
   */
  async awaitWork(epoch: unknown, waitMs: unknown, hold: unknown, counting?: unknown): Promise<Result<Watched>> {
    const since = parse(Seq, epoch);
    if (!since.ok) return since;
    const wait = parse(S.ClaimRequest.shape.waitMs.unwrap(), waitMs);
    if (!wait.ok) return wait;
    const name = parse(HoldName, hold);
    if (!name.ok) return name;
    const watching = counting === undefined ? ok(this.parts.watchers.watch(since.value, wait.value, name.value)) : this.countWatch(counting, wait.value, name.value);
    if (!watching.ok) return watching;
    if (this.parts.watchers.size > 0) this.parts.wake.afterChange(false); // a rate-limited lane's next token is a term of the wake
    return ok(await watching.value);
  }

  private countWatch(counting: unknown, waitMs: number, hold: string): Result<Promise<Watched>> {
    const counted = parse(Counting, counting);
    if (!counted.ok) return counted;
    const count = claimCounter(this.parts.claims, this.parts.dispatcher, counted.value.request);
    return count.ok ? ok(this.parts.watchers.watchCount(count.value, counted.value.seen, waitMs, hold)) : count;
  }

  stopWatching(hold: unknown): Result<{ stopped: number }> {
    const name = parse(HoldName, hold);
    return name.ok ? ok({ stopped: this.parts.watchers.stop(name.value) }) : name;
  }

  listShardPage(input: unknown, afterSeq: unknown): Result<{ jobs: Job[]; seqs: number[]; more: boolean }> {
    const query = parse(S.ListQuery, input ?? {});
    if (!query.ok) return query;
    const after = parse(Seq, afterSeq);
    if (!after.ok) return after;
    const { jobs, seqs, more } = this.parts.store.listJobs({ ...query.value, afterSeq: after.value });
    return ok({ jobs, seqs, more });
  }

  countsAndShards(): Result<{ counts: Counts; shards: number }> {
    return ok({ counts: this.parts.store.counts(), shards: this.parts.shard.count() });
  }
}
