/**
 * How a caller reaches the shards of a lane (docs/concepts.md "Sharded lanes"), first part: the
 * shard-count cache and the routing of one enqueue. A lane of one shard (every lane unless resharded)
 * is its one object, called as before; the router's only extra cost is reading the shard count from
 * shard 0 once per lane per router (and again after `COUNT_TTL_MS`).
 *
 * Exactness does not rest on the cached count: an enqueue states the count it was routed by, and a
 * shard refuses (`wrong_shard`) one routed by another count or whose key it does not own; the router
 * then reads the count again and goes on. A by-id call that finds no job re-reads the count of a lane
 * it believes unsharded before it answers 404.
 */
import type { EnqueueAnswer } from "../shared/answers.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { EnqueueRequest } from "../shared/schemas.js";
import { idOnShard, routingKey, shardObjectName, shardOf } from "../shared/shards.js";
import type { EnqueuePeer, PeerDirectory } from "./peer.js";

/** How long a router trusts a lane's shard count for lane-wide reads (claims, lists): per-job calls are exact whatever it holds. */
export const COUNT_TTL_MS = 10_000;

/** How many times an enqueue is routed again after a `wrong_shard` refusal before that refusal is the answer. */
export const MAX_REROUTES = 4;

/** How many times an enqueue of an id contended by enqueues on other shards reserves it again before it answers 409 `wrong_shard` (try again). */
const MAX_TAKEOVERS = 16;

/** A shard asked to refuse a reservation while it writes that id's job (its dependencies registered first) is asked again after this, times the tries. */
const BUSY_WAIT_MS = 10;

/** Waits `n` steps of `BUSY_WAIT_MS` before asking again (a shard said busy, or a write lost a race). */
export const pause = (n: number) => new Promise((resolve) => setTimeout(resolve, BUSY_WAIT_MS * n));

export type ShardDetails = { shards: number; reservedFor?: number; key?: true; keyReservedFor?: number };

export function shardDetails(answer: { ok: false; error: { code: string; details?: unknown } }): ShardDetails | null {
  return answer.error.code === "wrong_shard" ? (answer.error.details as ShardDetails) : null;
}

function conflict(id: string): { ok: false; error: { code: "job_conflict"; message: string; details: { ids: string[] } } } {
  return fail("job_conflict", `job id already used with a different spec: ${id}`, { ids: [id] }) as never;
}

/** A new id whose own shard is `shard` (shared/shards.ts `idOnShard`). */
export const newIdOn = (shard: number, shards: number) => idOnShard(shard, shards, () => crypto.randomUUID());

/** The shard-count cache and the routing of one enqueue; every other call's routing builds on it (job-routing.ts). */
export class EnqueueRouting<P extends EnqueuePeer> {
  private readonly known = new Map<string, { shards: number; at: number }>();

  constructor(private readonly peers: PeerDirectory<P>) {}

  /** Shard `index` of `lane`. */
  stub(lane: string, index = 0): P {
    return this.peers.getByName(shardObjectName(lane, index));
  }

  /** The lane's shard count: as cached, or read from shard 0 (`fresh`, or the cache older than `COUNT_TTL_MS`). */
  async shards(lane: string, fresh = false): Promise<Result<number>> {
    const known = this.known.get(lane);
    if (!fresh && known && Date.now() - known.at < COUNT_TTL_MS) return ok(known.shards);
    const state = await this.stub(lane, 0).shardState();
    if (!state.ok) return state;
    this.known.set(lane, { shards: state.value.shards, at: Date.now() });
    return ok(state.value.shards);
  }

  /** Forgets a lane's count (a test's stale router does the opposite: it keeps one). */
  remember(lane: string, shards: number): void {
    this.known.set(lane, { shards, at: Date.now() });
  }

  // ---- enqueue ----

  /**
   * One enqueue: routed by its key (`queue ?? debounce.key ?? id`; an id made here first when it has
   * none, one whose own shard is the job's), its id reserved on the id's own shard when that is another
   * (`reserve`: the write carries the reservation's nonce), then `send` to the shard with the count it
   * was routed by. `send` is the caller's transport (the group commit, or one call).
   */
  async enqueue(lane: string, request: EnqueueRequest & { traceparent?: string }, send: (stub: P, objectName: string, request: object) => Promise<Result<EnqueueAnswer>>): Promise<Result<EnqueueAnswer>> {
    let count = await this.shards(lane);
    if (!count.ok) return count;
    let made: string | undefined;
    let contended = 0;
    let refused: string | null = null; // the nonce a shard refused the last write under
    let carried: string | null = null;
    let keyGivenUp: string | null = null; // the key's nonce a shard gave up that the last write carried
    let keyCarried: string | null = null;
    for (let attempt = 0; ; ) {
      const shards = count.value;
      let routed: object = request;
      let target = 0;
      carried = null;
      if (shards > 1) {
        const key = routingKey(request);
        if (key === null) {
          // No queue, key or id: the id is made here, on a shard of its own choosing (spread like ids).
          made ??= crypto.randomUUID();
          target = shardOf(made, shards);
          routed = { ...request, id: made, shards };
        } else {
          target = shardOf(key, shards);
          const id = request.id ?? newIdOn(target, shards);
          routed = { ...request, id, shards };
          if (request.id !== undefined) {
            const reserved = await this.reserve(lane, request.id, target, request.queue ?? null, shards, refused);
            if (!reserved.ok) {
              if (shardDetails(reserved) === null || attempt >= MAX_REROUTES) return reserved;
              attempt++;
              count = await this.shards(lane, true);
              if (!count.ok) return count;
              continue;
            }
            carried = reserved.value;
            if (reserved.value !== null) routed = { ...routed, reservation: reserved.value };
          }
          if (request.debounce !== undefined) {
            const keyed = await this.reserveKey(lane, request.debounce.key, target, routed as EnqueueRequest, request.id !== undefined, shards, keyGivenUp);
            if (!keyed.ok) return keyed;
            if ("answer" in keyed.value) return ok(keyed.value.answer);
            keyCarried = keyed.value.nonce;
            if (keyCarried !== null) routed = { ...routed, keyReservation: keyCarried };
          }
        }
      }
      const answer = await send(this.stub(lane, target), shardObjectName(lane, target), routed);
      refused = null;
      keyGivenUp = null;
      const refusal = answer.ok ? null : shardDetails(answer);
      if (refusal === null) return answer;
      if (refusal.key === true && refusal.shards === shards && contended++ < MAX_TAKEOVERS) {
        // Refused for the debounce key: its job is held elsewhere now (reserved again), or the nonce
        // the write carried was given up since (taken over).
        if (refusal.keyReservedFor === undefined) keyGivenUp = keyCarried;
        else {
          // Its job is elsewhere, or on its way there from the target (a move owed: its delivery failed,
          // or its router is gone). The target finishes such a move now, at this ask (to itself it hands
          // nothing over), rather than at its alarm; the key's own shard points at the job once it arrives.
          try {
            await this.stub(lane, target).handOverKey(request.debounce!.key, keyCarried, target, routed as EnqueueRequest);
          } catch {
            // Unreachable now: the next try finds the key's job wherever it is by then.
          }
          await pause(contended);
        }
        continue;
      }
      if (refusal.shards === shards && request.id !== undefined && contended++ < MAX_TAKEOVERS) {
        // Routed by the right count, refused for the id: on its own shard, reserved there for another
        // shard (taken over here once that shard refuses the reservation, or a conflict if it holds
        // the job); elsewhere, the reservation the write carried was taken over since (reserved again).
        if (refusal.reservedFor !== undefined) {
          const taken = await this.takeOver(lane, request.id, target, request.queue ?? null, target, shards, null);
          if (!taken.ok) return taken;
        } else refused = carried;
        continue;
      }
      if (attempt++ >= MAX_REROUTES) return answer;
      count = await this.shards(lane, true);
      if (!count.ok) return count;
    }
  }

  /**
   * Reserves `id` on its own shard for `target`, the shard of its job's key: the reservation's nonce
   * (which the write carries), or null when they are the same shard (nothing to reserve). `refused`:
   * a nonce the target refused a write under (it is taken over, not answered `same` again).
   */
  protected async reserve(lane: string, id: string, target: number, queue: string | null, shards: number, refused: string | null = null): Promise<Result<string | null>> {
    const home = shardOf(id, shards);
    return home === target ? ok(null) : this.takeOver(lane, id, target, queue, home, shards, refused);
  }

  /**
   * Reserves `id` on its own shard `home` for `target` (`home` itself: none there). A job of the id
   * on `home` is a conflict. A reservation there for a third shard is taken over only once that shard
   * refuses it in one turn (it holds no job of the id and will write none under that reservation: a
   * write still on its way, or left by a crash, is refused when it comes); one whose shard holds the
   * job is a conflict. So an id is written on one shard, whatever the interleaving of its enqueues.
   */
  protected async takeOver(lane: string, id: string, target: number, queue: string | null, home: number, shards: number, refused: string | null): Promise<Result<string | null>> {
    let replacing = refused;
    for (let tries = 0; tries < MAX_TAKEOVERS; tries++) {
      const reserved = await this.stub(lane, home).reserve(id, target, queue, replacing);
      if (!reserved.ok) return reserved;
      const answer = reserved.value;
      if (answer.status === "conflict") return conflict(id);
      if (answer.status === "busy") {
        await pause(tries + 1);
        continue;
      }
      if (answer.status !== "other") return ok(answer.nonce);
      const refused = await this.stub(lane, answer.shard).refuseReservation(id, answer.nonce);
      if (!refused.ok) return refused;
      if (refused.value.status === "job") return conflict(id);
      if (refused.value.status === "busy") await pause(tries + 1);
      else replacing = answer.nonce;
    }
    return fail("wrong_shard", `job id ${id} of lane ${lane} is contended by other enqueues on other shards: try again`, { shards });
  }

  /**
   * Reserves a debounce key on its own shard for `target`, the shard of the request's queue: the
   * nonce the write carries (null: none needed), or, when the key's queued job is on another shard,
   * that shard's answer: it replaces the job by `routed` and moves it to `target` (the request is then
   * answered `debounced`, as one object answers it), or gives its nonce up (it holds no queued job of
   * the key: the key is reserved again, for `target`). `givenUp`: a nonce the target refused a write under.
   */
  async reserveKey(lane: string, key: string, target: number, routed: EnqueueRequest, idGiven: boolean, shards: number, givenUp: string | null): Promise<Result<{ nonce: string | null } | { answer: EnqueueAnswer }>> {
    // An enqueue whose id names a job answers as any enqueue of the id (a duplicate, or a conflict):
    // it debounces nothing, its write answers.
    if (idGiven) {
      const exists = await this.jobExists(lane, routed.id!, shards);
      if (!exists.ok) return exists;
      if (exists.value) return ok({ nonce: null });
    }
    let replacing = givenUp;
    for (let tries = 0; tries < MAX_TAKEOVERS; tries++) {
      const reserved = await this.stub(lane, shardOf(key, shards)).reserveKey(key, target, replacing);
      if (!reserved.ok) return reserved;
      const answer = reserved.value;
      if (answer.status !== "other") return ok({ nonce: answer.nonce });
      const handed = await this.stub(lane, answer.shard).handOverKey(key, answer.nonce, target, routed);
      if (!handed.ok) return handed;
      const done = handed.value;
      if (done.status === "moved") {
        if (done.job !== null) return ok({ answer: { status: "debounced", job: done.job } });
        // Delivered meanwhile by another call that found the move owed: the job as it is now.
        const job = await this.stub(lane, target).getJob(done.id);
        if (!job.ok) return job;
        return ok({ answer: { status: "debounced", job: job.value } });
      }
      if (done.status === "refused") replacing = answer.nonce;
      else await pause(tries + 1);
    }
    return fail("wrong_shard", `debounce key ${key} of lane ${lane} is contended by other enqueues on other shards: try again`, { shards });
  }

  /** Whether job `id` exists on some shard: its own shard's, or the one its reservation there names. */
  async jobExists(lane: string, id: string, shards: number): Promise<Result<boolean>> {
    const home = shardOf(id, shards);
    const where = await this.stub(lane, home).locate(id);
    if (!where.ok) return where;
    const at = where.value.shard;
    if (at === null || at === home) return ok(at === home);
    return this.stub(lane, at).hasJob(id);
  }
}
