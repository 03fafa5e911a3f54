/**
 * How a caller reaches the shards of a lane (docs/concepts.md "Sharded lanes"): the front worker and
 * the RPC client both go through here. A lane of one shard (every lane unless resharded) is its one
 * object, called as before; the router's only extra cost is reading the shard count from shard 0
 * once per lane per router (and again after `COUNT_TTL_MS`).
 *
 * Exactness does not rest on the cached count: an enqueue states the count it was routed by, and a
 * shard refuses (`wrong_shard`) one routed by another count or whose key it does not own; the router
 * then reads the count again and goes on. A by-id call that finds no job re-reads the count of a lane
 * it believes unsharded before it answers 404.
 */
import type { Lane } from "../durable/lane.js";
import type { AcksAnswer, BatchAnswer, EnqueueAnswer } from "../shared/answers.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { AckItem, EnqueueRequest } from "../shared/schemas.js";
import { idOnShard, routingKey, shardObjectName, shardOf, shardOfToken } from "../shared/shards.js";
import { dependencyWaves, missingDependencies } from "./shard-batch-deps.js";
import { handOverBatchKeys, reserveBatchKeys } from "./shard-batch-keys.js";

export type LaneStub = DurableObjectStub<Lane>;

/** What the router calls objects through: the lanes' namespace (or anything that names stubs as it does). */
export interface LaneNamespace {
  getByName(name: string): LaneStub;
}

/** How long a router trusts a lane's shard count for lane-wide reads (claims, lists): per-job calls are exact whatever it holds. */
export const COUNT_TTL_MS = 10_000;

/** How many times an enqueue is routed again after a `wrong_shard` refusal before that refusal is the answer. */
const MAX_REROUTES = 4;

/** How many times an enqueue of an id contended by enqueues on other shards reserves it again before it answers 409 `wrong_shard` (try again). */
const MAX_TAKEOVERS = 16;

/** A shard asked to refuse a reservation while it writes that id's job (its dependencies registered first) is asked again after this, times the tries. */
const BUSY_WAIT_MS = 10;

/** Waits `n` steps of `BUSY_WAIT_MS` before asking again (a shard said busy, or a write lost a race). */
const pause = (n: number) => new Promise((resolve) => setTimeout(resolve, BUSY_WAIT_MS * n));

type ShardDetails = { shards: number; reservedFor?: number; key?: true; keyReservedFor?: number };

function shardDetails(answer: { ok: false; error: { code: string; details?: unknown } }): ShardDetails | null {
  return answer.error.code === "wrong_shard" ? (answer.error.details as ShardDetails) : null;
}

function conflict(id: string): { ok: false; error: { code: "job_conflict"; message: string; details: { ids: string[] } } } {
  return fail("job_conflict", `job id already used with a different spec: ${id}`, { ids: [id] }) as never;
}

/** A new id whose own shard is `shard` (shared/shards.ts `idOnShard`). */
const newIdOn = (shard: number, shards: number) => idOnShard(shard, shards, () => crypto.randomUUID());

/** The shard-count cache and the routing of one job (enqueue, batch, by id, by token, by queue); lane-wide calls build on it (shard-fanout.ts), claims on those (shard-router.ts). */
export class ShardRoutes {
  private readonly known = new Map<string, { shards: number; at: number }>();

  constructor(private readonly namespace: LaneNamespace) {}

  /** Shard `index` of `lane`. */
  stub(lane: string, index = 0): LaneStub {
    return this.namespace.getByName(shardObjectName(lane, index));
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
  async enqueue(lane: string, request: EnqueueRequest & { traceparent?: string }, send: (stub: LaneStub, objectName: string, request: object) => Promise<Result<EnqueueAnswer>>): Promise<Result<EnqueueAnswer>> {
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
          await this.stub(lane, target).handOverKey(request.debounce!.key, keyCarried, target, routed as EnqueueRequest).catch(() => null);
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
  private async reserve(lane: string, id: string, target: number, queue: string | null, shards: number, refused: string | null = null): Promise<Result<string | null>> {
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
  private async takeOver(lane: string, id: string, target: number, queue: string | null, home: number, shards: number, refused: string | null): Promise<Result<string | null>> {
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

  /**
   * A batch, all or nothing: on a sharded lane its jobs are routed and their ids reserved first, then
   * every shard checks its part (`checkBatch`: bad input, conflicts) before any shard writes; the
   * answers come back in request order.
   */
  async enqueueBatch(lane: string, batch: { jobs: EnqueueRequest[]; traceparent?: string }): Promise<Result<BatchAnswer>> {
    let count = await this.shards(lane);
    for (let attempt = 0; ; attempt++) {
      if (!count.ok) return count;
      const shards = count.value;
      const answer = shards === 1 ? await this.stub(lane, 0).enqueueBatch(batch) : await this.shardedBatch(lane, batch, shards);
      if (answer.ok || shardDetails(answer) === null || attempt >= MAX_REROUTES) return answer;
      count = await this.shards(lane, true);
    }
  }

  private async shardedBatch(lane: string, batch: { jobs: EnqueueRequest[]; traceparent?: string }, shards: number): Promise<Result<BatchAnswer>> {
    const parts = new Map<number, { jobs: EnqueueRequest[]; at: number[]; reservations: (string | null)[] }>();
    const routed = batch.jobs.map((job) => {
      const key = routingKey(job);
      const id = job.id ?? (key === null ? crypto.randomUUID() : undefined);
      const target = shardOf(key ?? id!, shards);
      return { job: { ...job, id: id ?? newIdOn(target, shards) }, target };
    });
    for (const [i, { job, target }] of routed.entries()) {
      const reserved = batch.jobs[i]!.id === undefined ? ok(null) : await this.reserve(lane, job.id, target, job.queue ?? null, shards);
      if (!reserved.ok) return reserved.error.code === "job_conflict" ? fail("job_conflict", reserved.error.message, { ids: [job.id] }) : reserved;
      const part = parts.get(target) ?? { jobs: [], at: [], reservations: [] };
      part.jobs.push(job);
      part.at.push(i);
      part.reservations.push(reserved.value);
      parts.set(target, part);
    }
    const keys = await reserveBatchKeys(this, lane, routed, batch.jobs, shards);
    if (!keys.ok) return keys;
    const traced = batch.traceparent === undefined ? {} : { traceparent: batch.traceparent };
    const nonces = new Map<number, string | null>();
    for (const part of parts.values()) part.at.forEach((i, k) => nonces.set(i, part.reservations[k]!));
    const keyNonces = keys.value.nonces;
    const reserved = (at: number[]) => ({
      ...(at.some((i) => nonces.get(i) !== null) ? { reservations: at.map((i) => nonces.get(i)!) } : {}),
      ...(at.some((i) => keyNonces.has(i)) ? { keyReservations: at.map((i) => keyNonces.get(i) ?? null) } : {}),
    });
    const calls = [...parts.entries()].map(([shard, part]) => ({ shard, part, request: { jobs: part.jobs, shards, ...reserved(part.at), ...traced } }));
    const checks = await Promise.all(calls.map(({ shard, request }) => this.stub(lane, shard).checkBatch(request)));
    const refused = checks.find((c) => !c.ok);
    if (refused) return refused as Result<never>;
    const waves = dependencyWaves(lane, routed);
    if (!waves.ok) return waves;
    if (waves.value !== null) {
      const missing = await missingDependencies(this, lane, routed);
      if (missing !== null) return missing;
    }
    const results: BatchAnswer["results"] = new Array(batch.jobs.length);
    const handed = await handOverBatchKeys(this, lane, routed, keys.value, shards);
    if (!handed.ok) return handed;
    for (const [i, result] of handed.value) results[i] = result;
    // Without dependencies between shards, one wave: every shard's part at once. With them, a job goes
    // in a wave after the jobs of other shards it waits for, so that they exist when it registers.
    const everyPart = calls.map(({ shard, part }) => ({ shard, at: part.at }));
    for (const whole of waves.value ?? [everyPart]) {
      const wave = whole.map(({ shard, at }) => ({ shard, at: at.filter((i) => !handed.value.has(i)) })).filter(({ at }) => at.length > 0);
      const written = await Promise.all(wave.map(({ shard, at }) => this.stub(lane, shard).enqueueBatch({ jobs: at.map((i) => routed[i]!.job), shards, ...reserved(at), ...traced })));
      for (const [n, answer] of written.entries()) {
        // A shard that refuses now was raced by another enqueue since its check: the refusal is the answer.
        if (!answer.ok) return answer;
        answer.value.results.forEach((result, k) => (results[wave[n]!.at[k]!] = result));
      }
    }
    return ok({ results });
  }

  // ---- by id, by token ----

  /**
   * A route that names a job by id: on a sharded lane, the id's own shard answers, or says which shard
   * its job is reserved for; a job nowhere is answered by the id's own shard (its own 404).
   */
  async byId<T>(lane: string, id: string, call: (stub: LaneStub) => Promise<Result<T>>): Promise<Result<T>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    if (count.value === 1) {
      const answer = await call(this.stub(lane, 0));
      if (answer.ok || answer.error.code !== "job_not_found") return answer;
      // Not here: unless the lane was resharded since the count was read.
      const fresh = await this.shards(lane, true);
      if (!fresh.ok || fresh.value === 1) return answer;
      return this.located(lane, id, fresh.value, call);
    }
    return this.located(lane, id, count.value, call);
  }

  private async located<T>(lane: string, id: string, shards: number, call: (stub: LaneStub) => Promise<Result<T>>): Promise<Result<T>> {
    const home = shardOf(id, shards);
    const answer = await call(this.stub(lane, home));
    if (answer.ok || answer.error.code !== "job_not_found") return answer;
    const where = await this.stub(lane, home).locate(id);
    if (!where.ok) return where;
    const shard = where.value.shard;
    return shard === null || shard === home ? answer : call(this.stub(lane, shard));
  }

  /**
   * A fenced write: its lease token names the shard that minted it (`s<i>.`; none: shard 0). A token
   * that finds no job there (a forged or garbled one) goes by the job's id, whose shard answers the
   * fence's refusal as one lane would.
   */
  async byToken<T>(lane: string, id: string, token: string, call: (stub: LaneStub) => Promise<Result<T>>): Promise<Result<T>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    if (count.value === 1) return this.byId(lane, id, call);
    const shard = shardOfToken(token, count.value);
    const answer = await call(this.stub(lane, shard));
    if (answer.ok || answer.error.code !== "job_not_found") return answer;
    const home = shardOf(id, count.value);
    if (home === shard) {
      const where = await this.stub(lane, home).locate(id);
      if (!where.ok || where.value.shard === null || where.value.shard === shard) return answer;
      return call(this.stub(lane, where.value.shard));
    }
    return this.located(lane, id, count.value, call);
  }

  /** Batch acks: grouped by the shard of each token, answered in request order. */
  async acks(lane: string, request: { acks: AckItem[] }): Promise<Result<AcksAnswer>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    if (count.value === 1) return this.stub(lane, 0).acks(request);
    const groups = new Map<number, { acks: AckItem[]; at: number[] }>();
    request.acks.forEach((ack, i) => {
      const shard = shardOfToken(ack.token, count.value);
      const group = groups.get(shard) ?? { acks: [], at: [] };
      group.acks.push(ack);
      group.at.push(i);
      groups.set(shard, group);
    });
    const answers = await Promise.all([...groups.entries()].map(async ([shard, group]) => ({ group, answer: await this.stub(lane, shard).acks({ acks: group.acks }) })));
    const results: AcksAnswer["results"] = new Array(request.acks.length);
    for (const { group, answer } of answers) {
      if (!answer.ok) return answer;
      answer.value.results.forEach((result, k) => (results[group.at[k]!] = result));
    }
    // An item its token's shard did not find goes by its job's id (a forged token: the fence's refusal there).
    await Promise.all(
      results.map(async (result, i) => {
        if (result.ok || result.error.code !== "job_not_found") return;
        const ack = request.acks[i]!;
        const again = await this.byId(lane, ack.id, (stub) => stub.acks({ acks: [ack] }));
        if (again.ok) results[i] = again.value.results[0]!;
      }),
    );
    return ok({ results });
  }

  /** A queue's routes: its shard (the count read afresh: a queue's settings must reach the shard that holds its jobs). */
  async byQueue<T>(lane: string, queue: string, call: (stub: LaneStub) => Promise<Result<T>>): Promise<Result<T>> {
    const count = await this.shards(lane, true);
    if (!count.ok) return count;
    return call(this.stub(lane, shardOf(queue, count.value)));
  }
}
