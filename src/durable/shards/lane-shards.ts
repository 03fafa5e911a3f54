/**
 * The sharded-lane RPC methods' bodies (docs/concepts.md "Sharded lanes"; shard-state.ts): lane.ts
 * validates nothing itself and delegates here; each answers as the method did. Also `configure`, which
 * sets the stored shard count with the other settings.
 */
import * as S from "../../shared/schemas.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Counts, Job, LaneInfo } from "../../shared/job.js";
import { MAX_BATCH_JOBS, MAX_DEPENDENCIES } from "../../shared/defaults.js";
import { Name } from "../../shared/schemas.js";
import type { Clock } from "../../shared/clock.js";
import { HoldName, parse, parseBatchEnqueue, parseId, parseName, ReservationNonce as Nonce, ShardIndex } from "../input.js";
import type { LaneWiring } from "../wiring.js";
import type { Located, Refusal, Reservation } from "./shard-state.js";
import type { Watched } from "./watchers.js";
import { z } from "zod";

/** A shard's index, as a lane's RPC takes it. */
/** A position in a shard's list (a job's seq; 0: the start). */
const Seq = z.number().int().min(0);
/** A reservation's nonce, as its id's own shard made it. */

export class ShardCalls {
  constructor(
    private readonly rooms: LaneWiring,
    private readonly clock: Clock,
  ) {}

  configure(input: unknown): Result<LaneInfo> {
    const patch = parse(S.LanePatch, input ?? {});
    if (!patch.ok) return patch;
    const { shards } = patch.value;
    if (shards !== undefined && shards !== this.rooms.shard.count()) {
      const held = this.rooms.heldForResharding(shards);
      if (held) return fail("lane_not_empty", `lane ${this.rooms.store.lane} ${held}: its shard count can change only while it is empty`);
      this.rooms.shard.setCount(shards);
    }
    this.rooms.store.settings.configure(patch.value);
    this.rooms.wake.afterChange();
    return this.rooms.laneInfo();
  }

  shardState(): Result<{ shards: number; index: number; empty: boolean }> {
    return ok({ shards: this.rooms.shard.count(), index: this.rooms.shard.index, empty: this.rooms.heldForResharding(2) === null });
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
    return ok(this.rooms.shard.reserve(name.value, shard.value, queueName.value, jobHere, replaced.value, !jobHere && this.rooms.dependencies.isPending(name.value)));
  }

  refuseReservation(id: unknown, nonce: unknown): Result<Refusal> {
    const name = parseId(id);
    if (!name.ok) return name;
    const refused = parse(Nonce, nonce);
    if (!refused.ok) return refused;
    const jobHere = this.jobHere(name.value);
    return ok(this.rooms.shard.refuse(name.value, refused.value, jobHere, !jobHere && this.rooms.dependencies.isPending(name.value)));
  }

  /** Whether job `id` is here, or on its way from here to another shard (its debounce key's move, key-moves.ts): either way it exists. */
  private jobHere(id: string): boolean {
    return this.rooms.store.row(id) !== undefined || this.rooms.keyMoves.pendingId(id);
  }

  checkBatch(input: unknown): Result<null> {
    const request = parseBatchEnqueue(input);
    if (!request.ok) return request;
    const { jobs, traceparent, shards } = request.value;
    // The keys' reservations are checked by the write: a job whose key's job the router moves first is checked here too.
    const specs = this.rooms.enqueue.toSpecs(jobs.map((job) => ({ ...job, traceparent, shards })), this.clock.now(), false);
    if (!specs.ok) return specs;
    for (const spec of specs.value) {
      if (!this.rooms.store.row(spec.id)) continue;
      const existing = this.rooms.store.existing(spec);
      if (!existing.ok) return existing;
    }
    return ok(null);
  }

  locate(id: unknown): Result<Located> {
    const name = parseId(id);
    if (!name.ok) return name;
    if (this.rooms.store.row(name.value)) return ok({ shard: this.rooms.shard.index });
    return ok({ shard: this.rooms.shard.reservedFor(name.value) });
  }

  /** Where each of `ids` is as this shard knows: its index (a job here), the shard an id is reserved here for (its job may be there), or null. */
  knownIds(ids: unknown): Result<(number | null)[]> {
    const names = parse(z.array(Name).max(MAX_BATCH_JOBS * MAX_DEPENDENCIES), ids);
    if (!names.ok) return names;
    return ok(names.value.map((id) => (this.rooms.store.row(id) !== undefined ? this.rooms.shard.index : this.rooms.shard.reservedFor(id))));
  }

  hasJob(id: unknown): Result<boolean> {
    const name = parseId(id);
    return name.ok ? ok(this.rooms.store.row(name.value) !== undefined) : name;
  }

  due(): Result<{ oldestDueAt: number | null; epoch: number }> {
    return ok({ oldestDueAt: this.rooms.store.laneCounts.oldestDueAt(this.clock.now()), epoch: this.rooms.watchers.epoch });
  }

  async awaitWork(epoch: unknown, waitMs: unknown, hold: unknown): Promise<Result<Watched>> {
    const since = parse(Seq, epoch);
    if (!since.ok) return since;
    const wait = parse(S.ClaimRequest.shape.waitMs.unwrap(), waitMs);
    if (!wait.ok) return wait;
    const name = parse(HoldName, hold);
    if (!name.ok) return name;
    const watching = this.rooms.watchers.watch(since.value, wait.value, name.value);
    if (this.rooms.watchers.size > 0) this.rooms.wake.afterChange(false); // a rate-limited lane's next token is a term of the wake
    return ok(await watching);
  }

  stopWatching(hold: unknown): Result<{ stopped: number }> {
    const name = parse(HoldName, hold);
    return name.ok ? ok({ stopped: this.rooms.watchers.stop(name.value) }) : name;
  }

  listShardPage(input: unknown, afterSeq: unknown): Result<{ jobs: Job[]; seqs: number[]; more: boolean }> {
    const query = parse(S.ListQuery, input ?? {});
    if (!query.ok) return query;
    const after = parse(Seq, afterSeq);
    if (!after.ok) return after;
    const { jobs, seqs, more } = this.rooms.store.listJobs({ ...query.value, afterSeq: after.value });
    return ok({ jobs, seqs, more });
  }

  countsAndShards(): Result<{ counts: Counts; shards: number }> {
    return ok({ counts: this.rooms.store.counts(), shards: this.rooms.shard.count() });
  }
}
