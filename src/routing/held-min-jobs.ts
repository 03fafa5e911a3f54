/**
 * A sharded lane's held claim with `minJobs` (docs/api.md "Pull consumers"): the claimable jobs of
 * every shard count. The router sums each shard's count (`claimable`, which claims nothing); short of
 * `minJobs`, it watches every shard at once with the count it saw there (`awaitWork` with a count,
 * answered only when that count grows), and adds up again each time one answers. Once the sum reaches
 * `minJobs`, or the wait is over, it claims from the shards that had some (up to `max`; at the
 * deadline, what is claimable). Until then it takes nothing anywhere.
 *
 * Another claim may take jobs between the count and the claim: then the claim, short of `minJobs`
 * before its deadline, gives back what it took (released, attempts given back) and counts and waits
 * on. Its claims carry its hold's name, so that a client that leaves has them released
 * (`abandonClaim`); every call rides out a shard's reset (lane-retry.ts), counted and claimed again.
 */
import type { AcksAnswer } from "../shared/answers.js";
import { ok, type Result } from "../shared/errors.js";
import { heldMinJobs } from "../shared/schemas.js";
import type { PulledJob } from "../shared/job.js";
import { acrossResets } from "./lane-retry.js";
import { ShardWatches } from "./shard-watches.js";
import type { LanePeer } from "./peer.js";

/** A claim as the router takes it. */
export interface ClaimOfShards {
  kinds?: string[];
  max?: number;
  leaseMs?: number;
  waitMs?: number;
  minJobs?: number;
}

/** Whether a sharded lane's claim is gathered here: held for more than one job. */
export function gathers(request: ClaimOfShards): boolean {
  return heldMinJobs(request) > 1;
}

/** What `gather` needs of the router: a shard's stub. */
export interface GatherRouter<P extends LanePeer> {
  stub(lane: string, index: number): P;
}

/** Jobs claimed on one shard (to give back there). */
type Taken = { shard: number; jobs: PulledJob[] };

export async function gather<P extends LanePeer>(
  router: GatherRouter<P>,
  lane: string,
  shards: number,
  request: ClaimOfShards,
  hold: string | null,
  signal?: AbortSignal,
): Promise<Result<{ jobs: PulledJob[] }>> {
  const minJobs = request.minJobs ?? 1;
  const deadline = Date.now() + (request.waitMs ?? 0);
  const { minJobs: _held, ...now } = { ...request, waitMs: 0 };
  // Each shard counts up to minJobs: more there changes nothing for this claim.
  const counted = { ...now, minJobs: Math.min(minJobs, now.max ?? 1) };
  const shard = (i: number) => router.stub(lane, i);
  const watches = new ShardWatches(shard, deadline, hold ?? crypto.randomUUID(), signal);
  try {
    for (;;) {
      const counts = await Promise.all(Array.from({ length: shards }, (_, i) => acrossResets(() => shard(i).claimable(counted), signal)));
      const seen: number[] = [];
      for (const count of counts) {
        if (!count.ok) return count;
        seen.push(count.value.claimable);
      }
      const sum = () => seen.reduce((a, b) => a + b, 0);
      if (sum() < minJobs) for (let i = 0; i < shards; i++) watches.watch(i, 0, { request: counted, seen: seen[i]! });
      while (sum() < minJobs && Date.now() < deadline && !signal?.aborted) {
        const woken = await watches.next();
        if (woken === null) break;
        if (woken.claimable !== undefined) seen[woken.shard] = woken.claimable;
        // Watched again only while still short: a claim that now has its minJobs stops its watches at once.
        if (sum() < minJobs && Date.now() < deadline) watches.watch(woken.shard, 0, { request: counted, seen: seen[woken.shard]! });
      }
      if (signal?.aborted) return ok({ jobs: [] });
      const taken = await claimFrom(router, lane, now, seen, hold, signal);
      if (!taken.ok) return taken;
      const jobs = taken.value.flatMap((t) => t.jobs);
      if (!signal?.aborted && (jobs.length >= minJobs || Date.now() >= deadline)) return ok({ jobs });
      // Another claim took some since the count (or the client left): what this one took goes back.
      const given = await giveBack(router, lane, taken.value, signal);
      if (!given.ok) return given;
      if (signal?.aborted) return ok({ jobs: [] });
      // It counts again, and waits on.
      await watches.stop();
    }
  } finally {
    await watches.stop();
  }
}

/** Claims from the shards that counted some, the most first, while short of `max`; each claim under `hold`. */
async function claimFrom<P extends LanePeer>(router: GatherRouter<P>, lane: string, now: ClaimOfShards, seen: number[], hold: string | null, signal?: AbortSignal): Promise<Result<Taken[]>> {
  const max = now.max ?? 1;
  const taken: Taken[] = [];
  let total = 0;
  const order = seen.map((count, shard) => ({ shard, count })).filter((s) => s.count > 0).sort((a, b) => b.count - a.count);
  for (const { shard } of order) {
    if (total >= max || signal?.aborted) break;
    const request = { ...now, max: max - total };
    const claimed = await acrossResets(() => router.stub(lane, shard).claim(request, hold ?? undefined), signal);
    if (!claimed.ok) return claimed;
    taken.push({ shard, jobs: claimed.value.jobs });
    total += claimed.value.jobs.length;
  }
  return ok(taken);
}

/** Releases what was taken, one batch of acks a shard (a job's release gives back its attempt). */
async function giveBack<P extends LanePeer>(router: GatherRouter<P>, lane: string, taken: Taken[], signal?: AbortSignal): Promise<Result<void>> {
  const answers = await Promise.all(
    taken
      .filter((t) => t.jobs.length > 0)
      .map((t) => acrossResets(() => router.stub(lane, t.shard).acks({ acks: t.jobs.map((j) => ({ op: "release", id: j.id, token: j.lease.token })) }), signal)),
  );
  for (const answer of answers as Result<AcksAnswer>[]) if (!answer.ok) return answer;
  return ok(undefined);
}
