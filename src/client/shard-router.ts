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
import type { AcksAnswer, BatchAnswer, EnqueueAnswer, FailLaneAnswer, JobPage } from "../shared/answers.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { HistoryAnswer } from "../shared/history.js";
import type { Job, LaneInfo, PulledJob } from "../shared/job.js";
import type { AckItem, EnqueueRequest, LanePatch, ListQuery } from "../shared/schemas.js";
import { divideAmong, routingKey, shardObjectName, shardOf, shardOfToken } from "../shared/shards.js";

type LaneStub = DurableObjectStub<Lane>;

/** What the router calls objects through: the lanes' namespace (or anything that names stubs as it does). */
export interface LaneNamespace {
  getByName(name: string): LaneStub;
}

/** How long a router trusts a lane's shard count for lane-wide reads (claims, lists): per-job calls are exact whatever it holds. */
export const COUNT_TTL_MS = 10_000;

/**
 * How long a sharded lane's claims go first to the shard that last gave the most jobs, before they
 * look at every shard again: a claim with work in one shard of many costs one call, and no shard's
 * due jobs wait longer than this for a look while another shard keeps a router busy.
 */
export const CLAIM_LOOK_EVERY_MS = 100;

/** How many times an enqueue is routed again after a `wrong_shard` refusal before that refusal is the answer. */
const MAX_REROUTES = 4;

/** The sum of a lane's shards, with each shard's counts: what `GET /v1/lanes/{lane}` answers for a sharded lane. */
export type ShardedLaneInfo = LaneInfo;

type ShardDetails = { shards: number; reservedFor?: number };

function shardDetails(answer: { ok: false; error: { code: string; details?: unknown } }): ShardDetails | null {
  return answer.error.code === "wrong_shard" ? (answer.error.details as ShardDetails) : null;
}

function conflict(id: string): { ok: false; error: { code: "job_conflict"; message: string; details: { ids: string[] } } } {
  return fail("job_conflict", `job id already used with a different spec: ${id}`, { ids: [id] }) as never;
}

/** A job list's cursor over every shard: each shard's last seq read (-1: that shard is done). */
const MERGED_CURSOR_PREFIX = "m1.";

export function encodeMergedCursor(positions: number[]): string {
  return MERGED_CURSOR_PREFIX + positions.map((p) => (p < 0 ? "-" : p.toString(36))).join(".");
}

export function decodeMergedCursor(cursor: string, shards: number): number[] | null {
  if (!cursor.startsWith(MERGED_CURSOR_PREFIX)) return null;
  const parts = cursor.slice(MERGED_CURSOR_PREFIX.length).split(".");
  if (parts.length !== shards) return null;
  const positions = parts.map((p) => (p === "-" ? -1 : Number.parseInt(p, 36)));
  if (positions.some((p) => !Number.isSafeInteger(p) || p < -1)) return null;
  return encodeMergedCursor(positions) === cursor ? positions : null;
}

/** A new id whose own shard is `shard` (about `shards` tries): a by-id route then finds its job at once. */
function idOnShard(shard: number, shards: number): string {
  for (;;) {
    const id = crypto.randomUUID();
    if (shardOf(id, shards) === shard) return id;
  }
}

export class ShardRouter {
  private readonly known = new Map<string, { shards: number; at: number }>();
  /** Per sharded lane: the shard its claims go to first, and when every shard was last looked at. */
  private readonly hot = new Map<string, { shard: number; lookedAt: number }>();

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
   * (`reserve`), then `send` to the shard with the count it was routed by. `send` is the caller's
   * transport (the group commit, or one call).
   */
  async enqueue(lane: string, request: EnqueueRequest & { traceparent?: string }, send: (stub: LaneStub, objectName: string, request: object) => Promise<Result<EnqueueAnswer>>): Promise<Result<EnqueueAnswer>> {
    let count = await this.shards(lane);
    if (!count.ok) return count;
    let made: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const shards = count.value;
      let routed: object = request;
      let target = 0;
      if (shards > 1) {
        const key = routingKey(request);
        if (key === null) {
          // No queue, key or id: the id is made here, on a shard of its own choosing (spread like ids).
          made ??= crypto.randomUUID();
          target = shardOf(made, shards);
          routed = { ...request, id: made, shards };
        } else {
          target = shardOf(key, shards);
          const id = request.id ?? idOnShard(target, shards);
          routed = { ...request, id, shards };
          if (request.id !== undefined) {
            const reserved = await this.reserve(lane, request.id, target, request.queue ?? null, shards);
            if (!reserved.ok) {
              if (shardDetails(reserved) === null || attempt >= MAX_REROUTES) return reserved;
              count = await this.shards(lane, true);
              if (!count.ok) return count;
              continue;
            }
          }
        }
      }
      const answer = await send(this.stub(lane, target), shardObjectName(lane, target), routed);
      const refusal = answer.ok ? null : shardDetails(answer);
      if (refusal === null || attempt >= MAX_REROUTES) return answer;
      if (refusal.reservedFor !== undefined && request.id !== undefined) {
        // The id is reserved here for another shard: its job there, if any, makes this a conflict;
        // a reservation whose job is gone is dropped, and the enqueue goes again.
        const there = await this.stub(lane, refusal.reservedFor).hasJob(request.id);
        if (!there.ok) return there;
        if (there.value) return conflict(request.id);
        await this.stub(lane, target).dropReservation(request.id, refusal.reservedFor);
        continue;
      }
      count = await this.shards(lane, true);
      if (!count.ok) return count;
    }
  }

  /**
   * Reserves `id` on its own shard for `target`, the shard of its job's key (nothing to do when they
   * are the same shard): a job with that id there, or one alive on a third shard the id is reserved
   * for, is a conflict; a reservation whose job is gone is overwritten.
   */
  private async reserve(lane: string, id: string, target: number, queue: string | null, shards: number): Promise<Result<null>> {
    const home = shardOf(id, shards);
    if (home === target) return ok(null);
    let replacing: number | null = null;
    for (let attempt = 0; attempt < MAX_REROUTES; attempt++) {
      const reserved = await this.stub(lane, home).reserve(id, target, queue, replacing);
      if (!reserved.ok) return reserved;
      const answer = reserved.value;
      if (answer.status !== "other") return answer.status === "conflict" ? conflict(id) : ok(null);
      const there = await this.stub(lane, answer.shard).hasJob(id);
      if (!there.ok) return there;
      if (there.value) return conflict(id);
      replacing = answer.shard;
    }
    return conflict(id);
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
    const parts = new Map<number, { jobs: EnqueueRequest[]; at: number[] }>();
    const routed = batch.jobs.map((job) => {
      const key = routingKey(job);
      const id = job.id ?? (key === null ? crypto.randomUUID() : undefined);
      const target = shardOf(key ?? id!, shards);
      return { job: { ...job, id: id ?? idOnShard(target, shards) }, target };
    });
    for (const [i, { job, target }] of routed.entries()) {
      const reserved = batch.jobs[i]!.id === undefined ? ok(null) : await this.reserve(lane, job.id, target, job.queue ?? null, shards);
      if (!reserved.ok) return reserved.error.code === "job_conflict" ? fail("job_conflict", reserved.error.message, { ids: [job.id] }) : reserved;
      const part = parts.get(target) ?? { jobs: [], at: [] };
      part.jobs.push(job);
      part.at.push(i);
      parts.set(target, part);
    }
    const calls = [...parts.entries()].map(([shard, part]) => ({ shard, part, request: { jobs: part.jobs, shards, ...(batch.traceparent === undefined ? {} : { traceparent: batch.traceparent }) } }));
    const checks = await Promise.all(calls.map(({ shard, request }) => this.stub(lane, shard).checkBatch(request)));
    const refused = checks.find((c) => !c.ok);
    if (refused) return refused as Result<never>;
    const written = await Promise.all(calls.map(({ shard, request }) => this.stub(lane, shard).enqueueBatch(request)));
    const results: BatchAnswer["results"] = new Array(batch.jobs.length);
    for (const [n, answer] of written.entries()) {
      // A shard that refuses now was raced by another enqueue since its check: the refusal is the answer.
      if (!answer.ok) return answer;
      answer.value.results.forEach((result, k) => (results[calls[n]!.part.at[k]!] = result));
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

  // ---- lane-wide ----

  /** Every shard's answer, shard 0 first (`fresh`: the count read again, as a lane-wide write does). */
  async all<T>(lane: string, call: (stub: LaneStub, shard: number, shards: number) => Promise<Result<T>>, fresh = true): Promise<Result<T[]>> {
    const count = await this.shards(lane, fresh);
    if (!count.ok) return count;
    const answers = await Promise.all(Array.from({ length: count.value }, (_, i) => call(this.stub(lane, i), i, count.value)));
    const refused = answers.find((a) => !a.ok);
    return refused ? (refused as Result<never>) : ok(answers.map((a) => (a as { value: T }).value));
  }

  /** The lane's info: one shard's as it is; a sharded lane's summed (see `sumInfo`), in one fan-out. */
  async info(lane: string): Promise<Result<ShardedLaneInfo>> {
    const first = await this.stub(lane, 0).info();
    if (!first.ok) return first;
    const shards = first.value.shards ?? 1;
    this.remember(lane, shards);
    if (shards === 1) return first;
    const rest = await Promise.all(Array.from({ length: shards - 1 }, (_, i) => this.stub(lane, i + 1).info()));
    for (const info of rest) if (!info.ok) return info;
    return ok(sumInfo([first.value, ...rest.map((info) => (info as { value: LaneInfo }).value)]));
  }

  /**
   * Sets a lane's settings. `shards` first, only while every shard (of the old count and the new)
   * is empty: shards >= 1 are told first and shard 0 last, so that a router reads the new count only
   * once every shard holds it; a refusal part way sets the ones told back. Then the rest of the patch
   * on every shard, a lane `concurrency` and `rateLimit.limit` divided evenly (`divideAmong`).
   */
  async configure(lane: string, patch: LanePatch): Promise<Result<ShardedLaneInfo>> {
    const { shards: wanted, ...rest } = patch;
    if (wanted !== undefined) {
      const now = await this.shards(lane, true);
      if (!now.ok) return now;
      if (wanted !== now.value) {
        const reach = Math.max(now.value, wanted);
        const states = await Promise.all(Array.from({ length: reach }, (_, i) => this.stub(lane, i).shardState()));
        for (const state of states) if (!state.ok) return state;
        if (states.some((s) => !(s as { value: { empty: boolean } }).value.empty)) return fail("lane_not_empty", `lane ${lane} holds jobs or schedules: its shard count can change only while it is empty`);
        const told: number[] = [];
        for (const i of [...Array.from({ length: reach - 1 }, (_, k) => k + 1), 0]) {
          const set = await this.stub(lane, i).configure({ shards: wanted });
          if (!set.ok) {
            await Promise.all(told.map((t) => this.stub(lane, t).configure({ shards: now.value })));
            return set;
          }
          told.push(i);
        }
        this.remember(lane, wanted);
      }
    }
    if (Object.keys(rest).length > 0) {
      const set = await this.all(lane, (stub, i, shards) => stub.configure(shards === 1 ? rest : divided(rest, shards, i)));
      if (!set.ok) return set;
    }
    return this.info(lane);
  }

  /** A page of jobs in enqueue order: a sharded lane's pages merged by (createdAt, shard, seq), one cursor over every shard. */
  async list(lane: string, query: ListQuery): Promise<Result<JobPage>> {
    const count = await this.shards(lane, true);
    if (!count.ok) return count;
    const shards = count.value;
    if (shards === 1) return this.stub(lane, 0).listJobs(query);
    const { cursor, ...filter } = query;
    const positions = cursor === undefined ? new Array<number>(shards).fill(0) : decodeMergedCursor(cursor, shards);
    if (positions === null) return fail("invalid_request", "cursor is not one this API gave", [{ path: ["cursor"], message: "unknown cursor" }]);
    const pages = await Promise.all(positions.map((after, i) => (after < 0 ? Promise.resolve(ok({ jobs: [] as Job[], seqs: [] as number[], more: false })) : this.stub(lane, i).listShardPage(filter, after))));
    for (const page of pages) if (!page.ok) return page;
    const heads = pages.map((page) => (page as { value: { jobs: Job[]; seqs: number[]; more: boolean } }).value);
    const limit = Number(filter.limit ?? 50);
    const taken = heads.map(() => 0);
    const jobs: Job[] = [];
    while (jobs.length < limit) {
      let best = -1;
      for (let i = 0; i < shards; i++) {
        const job = heads[i]!.jobs[taken[i]!];
        if (job === undefined) continue;
        // Every shard's next job, earliest created first (ties: the lower shard).
        if (best < 0 || job.createdAt < heads[best]!.jobs[taken[best]!]!.createdAt) best = i;
      }
      if (best < 0) break;
      jobs.push(heads[best]!.jobs[taken[best]!]!);
      taken[best]!++;
    }
    const next = positions.map((after, i) => {
      if (after < 0) return -1;
      const head = heads[i]!;
      if (taken[i]! === head.jobs.length && !head.more) return -1; // this shard is done
      return taken[i]! === 0 ? after : head.seqs[taken[i]! - 1]!;
    });
    return ok({ jobs, cursor: next.every((p) => p < 0) ? null : encodeMergedCursor(next) });
  }

  /**
   * A claim. One shard: its claim, as before. Sharded: the shard that gave the most at the last look
   * first (for `CLAIM_LOOK_EVERY_MS` after that look); short of `max`, a look at every shard (`due`),
   * then claims from those with due work, the longest-waiting first, while short of `max`. A held claim with nothing
   * claimed waits on every shard at once (`awaitWork`, which claims nothing) and claims from the
   * shard that wakes it, until its `waitMs` is spent: no job is ever claimed to be given back.
   */
  async claim(lane: string, request: { kinds?: string[]; max?: number; leaseMs?: number; waitMs?: number }, hold: string | null, signal?: AbortSignal): Promise<Result<{ jobs: PulledJob[] }>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    const shards = count.value;
    if (shards === 1) return hold === null ? this.stub(lane, 0).claim(request) : this.stub(lane, 0).claim(request, hold);
    const max = request.max ?? 1;
    const now = { ...request, waitMs: 0 };
    const jobs: PulledJob[] = [];
    const hot = this.hot.get(lane);
    if (hot && hot.shard < shards && Date.now() - hot.lookedAt < CLAIM_LOOK_EVERY_MS) {
      const claimed = await this.stub(lane, hot.shard).claim({ ...now, max });
      if (!claimed.ok) return claimed;
      if (claimed.value.jobs.length === max) return claimed;
      jobs.push(...claimed.value.jobs);
    }
    const looks = await Promise.all(Array.from({ length: shards }, (_, i) => this.stub(lane, i).due()));
    for (const look of looks) if (!look.ok) return look;
    const due = looks.map((look, shard) => ({ shard, ...(look as { value: { oldestDueAt: number | null; epoch: number } }).value }));
    let most = { shard: -1, jobs: 0 };
    for (const { shard } of due.filter((d) => d.oldestDueAt !== null).sort((a, b) => a.oldestDueAt! - b.oldestDueAt!)) {
      if (jobs.length >= max) break;
      const claimed = await this.stub(lane, shard).claim({ ...now, max: max - jobs.length });
      if (!claimed.ok) return claimed;
      jobs.push(...claimed.value.jobs);
      if (claimed.value.jobs.length > most.jobs) most = { shard, jobs: claimed.value.jobs.length };
    }
    if (most.shard >= 0) this.hot.set(lane, { shard: most.shard, lookedAt: Date.now() });
    else this.hot.delete(lane);
    const waitMs = request.waitMs ?? 0;
    if (jobs.length > 0 || waitMs === 0) return ok({ jobs });
    const deadline = Date.now() + waitMs;
    const name = hold ?? crypto.randomUUID();
    const watching = new Map<number, Promise<{ shard: number; due: boolean; epoch: number }>>();
    const watch = (shard: number, epoch: number) =>
      watching.set(
        shard,
        this.stub(lane, shard)
          .awaitWork(epoch, Math.max(1, deadline - Date.now()), name)
          .then((w) => (w.ok ? { shard, ...w.value } : { shard, due: false, epoch })),
      );
    const stopped = new Promise<null>((resolve) => signal?.addEventListener("abort", () => resolve(null), { once: true }));
    try {
      for (const d of due) watch(d.shard, d.epoch);
      while (Date.now() < deadline && !signal?.aborted) {
        const woken = await Promise.race([stopped, ...watching.values()]);
        if (woken === null) break;
        watching.delete(woken.shard);
        if (woken.due) {
          const claimed = await this.stub(lane, woken.shard).claim({ ...now, max });
          if (!claimed.ok) return claimed;
          if (claimed.value.jobs.length > 0) return ok({ jobs: claimed.value.jobs });
        }
        if (Date.now() < deadline) watch(woken.shard, woken.epoch);
      }
      return ok({ jobs: [] });
    } finally {
      // The watches still held on other shards are dropped (they claim nothing either way).
      if (watching.size > 0) await Promise.all([...watching.keys()].map((shard) => this.stub(lane, shard).stopWatching(name)));
    }
  }

  /** The kept counts of a lane (`GET /v1/lanes`): one call for one shard; a sharded lane's summed. */
  async counts(lane: string): Promise<Result<LaneInfo["counts"]>> {
    const first = await this.stub(lane, 0).countsAndShards();
    if (!first.ok) return first;
    const { counts, shards } = first.value;
    this.remember(lane, shards);
    if (shards === 1) return ok(counts);
    const rest = await Promise.all(Array.from({ length: shards - 1 }, (_, i) => this.stub(lane, i + 1).counts()));
    const sum = { ...counts };
    for (const answer of rest) {
      if (!answer.ok) return answer;
      for (const [k, v] of Object.entries(answer.value)) sum[k as keyof typeof sum] += v;
    }
    return ok(sum);
  }

  /**
   * The lane's metrics (Prometheus text): one shard's as it is; a sharded lane's shards merged series
   * by series, in shard 0's order: every value summed (counts, counters, histogram buckets, sums and
   * counts) except `switchyard_oldest_due_age_seconds`, the longest wait of any shard.
   */
  async metrics(lane: string): Promise<Result<string>> {
    const texts = await this.all(lane, (stub) => stub.metrics(), false);
    if (!texts.ok) return texts;
    if (texts.value.length === 1) return ok(texts.value[0]!);
    const values = new Map<string, number>();
    const order: string[] = [];
    for (const text of texts.value) {
      for (const line of text.split("\n")) {
        if (line === "" || line.startsWith("#")) {
          if (!values.has(line)) {
            values.set(line, 0);
            order.push(line);
          }
          continue;
        }
        const at = line.lastIndexOf(" ");
        const series = line.slice(0, at);
        const value = Number(line.slice(at + 1));
        const before = values.get(series);
        if (before === undefined) order.push(series);
        values.set(series, before === undefined ? value : series.startsWith("switchyard_oldest_due_age_seconds") ? Math.max(before, value) : before + value);
      }
    }
    const lines = order.map((series) => (series === "" || series.startsWith("#") ? series : `${series} ${values.get(series)}`));
    return ok(lines.join("\n").replace(/\n*$/, "\n"));
  }

  /** Failing a lane: every shard, summed. */
  async failLane(lane: string, request: { reason: string }): Promise<Result<FailLaneAnswer>> {
    const answers = await this.all(lane, (stub) => stub.failLane(request));
    if (!answers.ok) return answers;
    return ok({ failed: answers.value.flatMap((a) => a.failed), more: answers.value.some((a) => a.more) });
  }

  /** Sweeping: every shard, summed. */
  async sweep(lane: string, request: unknown): Promise<Result<{ removed: number }>> {
    const answers = await this.all(lane, (stub) => stub.sweep(request));
    if (!answers.ok) return answers;
    return ok({ removed: answers.value.reduce((n, a) => n + a.removed, 0) });
  }

  /** The per-minute history: every shard's buckets summed minute by minute. */
  async history(lane: string, request: { windowMs?: number }): Promise<Result<HistoryAnswer>> {
    const answers = await this.all(lane, (stub) => stub.history(request), false);
    if (!answers.ok) return answers;
    const [first, ...rest] = answers.value;
    const buckets = first!.buckets.map((bucket, i) => {
      const sum = { ...bucket };
      for (const other of rest) {
        const b = other.buckets[i];
        if (b === undefined || b.at !== bucket.at) continue;
        sum.enqueued += b.enqueued;
        sum.started += b.started;
        sum.completed += b.completed;
        sum.failed += b.failed;
        sum.depth += b.depth;
      }
      return sum;
    });
    return ok({ buckets });
  }
}

/** The share of shard `index` of a lane-wide patch: `concurrency` and `rateLimit.limit` divided evenly. */
function divided(patch: LanePatch, shards: number, index: number): LanePatch {
  const share = { ...patch };
  if (patch.concurrency !== undefined) share.concurrency = divideAmong(patch.concurrency, shards, index);
  if (patch.rateLimit) share.rateLimit = { ...patch.rateLimit, limit: divideAmong(patch.rateLimit.limit, shards, index) };
  return share;
}

/**
 * A sharded lane's info: counts, stats and kinds summed, `nextWakeAt` and `oldestDueAt` the earliest,
 * `concurrency` and `rateLimit.limit` the sums of the shards' shares, the other settings shard 0's.
 */
export function sumInfo(infos: LaneInfo[]): ShardedLaneInfo {
  const first = infos[0]!;
  const sum = structuredClone(first) as ShardedLaneInfo;
  const earliest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
  for (const info of infos.slice(1)) {
    for (const [k, v] of Object.entries(info.counts)) sum.counts[k as keyof LaneInfo["counts"]] += v;
    for (const [k, v] of Object.entries(info.stats)) sum.stats[k as keyof LaneInfo["stats"]] += v;
    for (const [kind, v] of Object.entries(info.kinds)) {
      const into = (sum.kinds[kind] ??= { queued: 0, running: 0 });
      into.queued += v.queued;
      into.running += v.running;
    }
    sum.nextWakeAt = earliest(sum.nextWakeAt, info.nextWakeAt);
    sum.oldestDueAt = earliest(sum.oldestDueAt, info.oldestDueAt);
    sum.concurrency += info.concurrency;
    if (sum.rateLimit && info.rateLimit) sum.rateLimit.limit += info.rateLimit.limit;
  }
  sum.shards = infos.length;
  sum.shardList = infos.map((info, shard) => ({ shard, counts: info.counts }));
  return sum;
}
