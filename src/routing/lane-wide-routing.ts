/**
 * A sharded lane's lane-wide calls (docs/concepts.md "Sharded lanes"): every shard's answer fanned out
 * and merged (info, settings, job lists, counts, failing, sweeping, history).
 */
import type { FailLaneAnswer, JobPage } from "../shared/answers.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { HistoryAnswer } from "../shared/history.js";
import type { Counts, Job, LaneInfo } from "../shared/job.js";
import { FailLaneRequest, SweepRequest, type LanePatch, type ListQuery } from "../shared/schemas.js";
import { selfDeadLetter } from "../shared/dead-letters.js";
import { DEFAULT_SWEEP_LIMIT, FAIL_LANE_BATCH } from "../shared/defaults.js";
import { divideAmong } from "../shared/shards.js";
import { JobRouting } from "./job-routing.js";
import { sweepWaitpoints } from "./waitpoint-routing.js";
import type { LanePeer } from "./peer.js";

/** The sum of a lane's shards, with each shard's counts: what `GET /v1/lanes/{lane}` answers for a sharded lane. */
export type ShardedLaneInfo = LaneInfo;

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

/** Lane-wide calls: on top of the routing of one job (job-routing.ts). */
export class LaneWideRouting<P extends LanePeer> extends JobRouting<P> {
  // ---- lane-wide ----

  /** Every shard's answer, shard 0 first (`fresh`: the count read again, as a lane-wide write does). */
  async all<T>(lane: string, call: (stub: P, shard: number, shards: number) => Promise<Result<T>>, fresh = true): Promise<Result<T[]>> {
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
   * on every shard, a lane `concurrency` and `rateLimit.limit` split so that the shares sum to the
   * asked value (`divided`). A new count carries the lane's settings over: they are set anew on every
   * shard of it, the asked values split again. A value below one per shard of the count it will be
   * split among is refused before anything changes (`belowOnePerShard`).
   */
  async configure(lane: string, patch: LanePatch): Promise<Result<ShardedLaneInfo>> {
    const self = selfDeadLetter(lane, patch);
    if (self) return self;
    const { shards: wanted, ...rest } = patch;
    const now = await this.shards(lane, true);
    if (!now.ok) return now;
    const shards = wanted ?? now.value;
    let settings: LanePatch = rest;
    if (wanted !== undefined && wanted !== now.value) {
      const current = await this.info(lane);
      if (!current.ok) return current;
      const { concurrency, rateLimit, paused, fairness, retention, deadLetter } = current.value;
      settings = { concurrency, rateLimit, paused, fairness, deadLetter, ...rest, retention: { ...retention, ...rest.retention } };
      settings.queueDefaults = { ...current.value.queueDefaults, ...rest.queueDefaults };
    }
    const refused = belowOnePerShard(settings, shards);
    if (refused) return refused;
    if (wanted !== undefined && wanted !== now.value) {
      const reach = Math.max(now.value, wanted);
      const states = await Promise.all(Array.from({ length: reach }, (_, i) => this.stub(lane, i).shardState()));
      for (const state of states) if (!state.ok) return state;
      if (states.some((s) => !(s as { value: { empty: boolean } }).value.empty)) return fail("lane_not_empty", `lane ${lane} holds jobs or waitpoints: its shard count can change only while it holds none`);
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
    if (Object.keys(settings).length > 0) {
      const set = await this.all(lane, (stub, i, count) => stub.configure(count === 1 ? settings : divided(settings, count, i)), false); // the count was read above
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

  /** The kept counts of a lane (`GET /v1/lanes`): one call for one shard; a sharded lane's summed. */
  async counts(lane: string): Promise<Result<LaneInfo["counts"]>> {
    const first = await this.stub(lane, 0).countsAndShards();
    if (!first.ok) return first;
    const { counts, shards } = first.value;
    this.remember(lane, shards);
    if (shards === 1) return ok(counts);
    const rest = await Promise.all(Array.from({ length: shards - 1 }, (_, i) => this.stub(lane, i + 1).counts()));
    const all = [counts];
    for (const answer of rest) {
      if (!answer.ok) return answer;
      all.push(answer.value);
    }
    return ok(sumCounts(all));
  }

  /**
   * Failing a lane: at most `FAIL_LANE_BATCH` a call in all, as one object. Every shard's counts are
   * read, the batch is shared out, running jobs first (shard by shard), then queued ones, and each
   * shard fails its share (running first, then queued in enqueue order). `more`: any shard holds
   * some. A share never exceeds what its shard was given, so a count that moved meanwhile changes
   * which jobs go, never how many.
   */
  async failLane(lane: string, request: { reason: string }): Promise<Result<FailLaneAnswer>> {
    const count = await this.shards(lane, true);
    if (!count.ok) return count;
    if (count.value === 1 || !FailLaneRequest.safeParse(request).success) return this.stub(lane, 0).failLane(request);
    const counts = await this.all(lane, (stub) => stub.counts());
    if (!counts.ok) return counts;
    let left = FAIL_LANE_BATCH;
    const take = (n: number) => {
      const taken = Math.min(n, left);
      left -= taken;
      return taken;
    };
    const running = counts.value.map((c) => take(c.running));
    const shares = counts.value.map((c, i) => running[i]! + take(c.queued));
    const answers = await Promise.all(
      shares.map((limit, i) => (limit === 0 ? Promise.resolve(null) : this.stub(lane, i).failLane({ reason: request.reason, limit }))),
    );
    const failed: string[][] = [];
    let more = false;
    for (const [i, answer] of answers.entries()) {
      if (answer === null) {
        const c = counts.value[i]!;
        more ||= c.blocked + c.queued + c.running > 0;
        failed.push([]);
        continue;
      }
      if (!answer.ok) return answer;
      more ||= answer.value.more;
      failed.push(answer.value.failed);
    }
    // Each shard's running ones come first in its answer: every shard's, then every shard's queued.
    const runningFirst = [...failed.flatMap((ids, i) => ids.slice(0, running[i])), ...failed.flatMap((ids, i) => ids.slice(running[i]))];
    return ok({ failed: runningFirst, more });
  }

  /**
   * Sweeping: at most the request's `limit` (default `DEFAULT_SWEEP_LIMIT`) in all, as one object:
   * shard by shard, each asked for what remains.
   */
  async sweep(lane: string, request: unknown): Promise<Result<{ removed: number; waitpointsRemoved: number }>> {
    const jobs = await this.sweepJobs(lane, request);
    if (!jobs.ok) return jobs;
    // The jobs' sweep took the request, so it is valid; the same horizon and limit for waitpoints.
    const { settledBefore, limit } = SweepRequest.parse(request);
    const waitpoints = await sweepWaitpoints(this, lane, settledBefore, limit ?? DEFAULT_SWEEP_LIMIT);
    return waitpoints.ok ? ok({ removed: jobs.value.removed, waitpointsRemoved: waitpoints.value.removed }) : waitpoints;
  }

  private async sweepJobs(lane: string, request: unknown): Promise<Result<{ removed: number }>> {
    const count = await this.shards(lane, true);
    if (!count.ok) return count;
    const parsed = SweepRequest.safeParse(request);
    // One shard, or a request a shard will refuse: shard 0 answers it.
    if (count.value === 1 || !parsed.success) return this.stub(lane, 0).sweep(request);
    let left = parsed.data.limit ?? DEFAULT_SWEEP_LIMIT;
    for (let i = 0; i < count.value && left > 0; i++) {
      const answer = await this.stub(lane, i).sweep({ settledBefore: parsed.data.settledBefore, limit: left });
      if (!answer.ok) return answer;
      left -= answer.value.removed;
    }
    return ok({ removed: (parsed.data.limit ?? DEFAULT_SWEEP_LIMIT) - left });
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

/** The share of shard `index` of a lane-wide patch: `concurrency` and `rateLimit.limit` split so that the shares sum to the asked value. */
function divided(patch: LanePatch, shards: number, index: number): LanePatch {
  const share = { ...patch };
  if (patch.concurrency !== undefined) share.concurrency = divideAmong(patch.concurrency, shards, index);
  if (patch.rateLimit) share.rateLimit = { ...patch.rateLimit, limit: divideAmong(patch.rateLimit.limit, shards, index) };
  return share;
}

/**
 * The refusal of a lane-wide `concurrency` or `rateLimit.limit` below one per shard: each shard needs
 * at least one to start anything, and a share of one each would run more than was asked.
 */
function belowOnePerShard(settings: LanePatch, shards: number): Result<never> | null {
  const low: { path: (string | number)[]; message: string }[] = [];
  const need = (what: string, value: number) => `${what} ${value} is split among ${shards} shards, each needing at least one: it must be at least ${shards}`;
  if (settings.concurrency !== undefined && settings.concurrency < shards) low.push({ path: ["concurrency"], message: need("concurrency", settings.concurrency) });
  if (settings.rateLimit && settings.rateLimit.limit < shards) low.push({ path: ["rateLimit", "limit"], message: need("rateLimit.limit", settings.rateLimit.limit) });
  if (low.length === 0) return null;
  return fail("invalid_request", `a lane of ${shards} shards needs its concurrency and rateLimit.limit at least ${shards} (one per shard): ${low.map((l) => l.message).join("; ")}`, low);
}

/**
 * A sharded lane's info: counts, stats and kinds summed, `nextWakeAt` and `oldestDueAt` the earliest,
 * `concurrency` and `rateLimit.limit` the sums of the shards' shares, the other settings shard 0's.
 */
/** Shards' counts summed, state by state. */
export function sumCounts(all: readonly Counts[]): Counts {
  const sum = { ...all[0]! };
  for (const counts of all.slice(1)) for (const [k, v] of Object.entries(counts)) sum[k as keyof Counts] += v;
  return sum;
}

export function sumInfo(infos: LaneInfo[]): ShardedLaneInfo {
  const first = infos[0]!;
  const sum = structuredClone(first) as ShardedLaneInfo;
  const earliest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
  sum.counts = sumCounts(infos.map((info) => info.counts));
  for (const info of infos.slice(1)) {
    for (const [k, v] of Object.entries(info.stats)) sum.stats[k as keyof LaneInfo["stats"]] += v;
    for (const [kind, v] of Object.entries(info.kinds)) {
      const into = (sum.kinds[kind] ??= { queued: 0, running: 0 });
      into.queued += v.queued;
      into.running += v.running;
    }
    sum.nextWakeAt = earliest(sum.nextWakeAt, info.nextWakeAt);
    sum.oldestDueAt = earliest(sum.oldestDueAt, info.oldestDueAt);
    sum.concurrency += info.concurrency;
    sum.waitpoints.pending += info.waitpoints.pending;
    if (sum.rateLimit && info.rateLimit) sum.rateLimit.limit += info.rateLimit.limit;
  }
  sum.shards = infos.length;
  sum.shardList = infos.map((info, shard) => ({ shard, counts: info.counts }));
  return sum;
}
