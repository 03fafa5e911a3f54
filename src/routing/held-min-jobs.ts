/**
 * A sharded lane's held claim with `minJobs` (docs/api.md "Pull consumers"): the claimable jobs of
 * every shard count. The router sums each shard's count (`claimable`, which claims nothing); short of
 * `minJobs`, it waits on every shard at once (`awaitWork`, as any held claim across shards does) and
 * counts again when one of them flushes; once the sum reaches `minJobs`, or the wait is over, it claims
 * across the shards as a claim without a wait does (up to `max`; at the deadline, what is claimable).
 * Until then it takes nothing anywhere: no job is claimed to be given back.
 */
import { ok, type Result } from "../shared/errors.js";
import type { PulledJob } from "../shared/job.js";
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

/** What `gather` needs of the router: a shard's stub, and its claim without a wait. */
export interface GatherRouter<P extends LanePeer> {
  stub(lane: string, index: number): P;
  claim(lane: string, request: ClaimOfShards, hold: string | null, signal?: AbortSignal): Promise<Result<{ jobs: PulledJob[] }>>;
}

export async function gather<P extends LanePeer>(
  router: GatherRouter<P>,
  lane: string,
  shards: number,
  request: ClaimOfShards,
  signal?: AbortSignal,
): Promise<Result<{ jobs: PulledJob[] }>> {
  const minJobs = request.minJobs ?? 1;
  const deadline = Date.now() + (request.waitMs ?? 0);
  const { minJobs: _held, ...now } = { ...request, waitMs: 0 };
  const watches = new ShardWatches((shard) => router.stub(lane, shard), deadline, crypto.randomUUID(), signal);
  try {
    // Epoch -1 names no flush: a shard with a due job answers its first watch at once, and is counted again.
    for (let shard = 0; shard < shards; shard++) watches.watch(shard, -1);
    for (;;) {
      const counts = await Promise.all(Array.from({ length: shards }, (_, i) => router.stub(lane, i).claimable({ ...now, minJobs: Math.min(minJobs, now.max ?? 1) })));
      let total = 0;
      for (const count of counts) {
        if (!count.ok) return count;
        total += count.value.claimable;
      }
      if (total >= minJobs || Date.now() >= deadline || signal?.aborted) break;
      const woken = await watches.next();
      if (woken === null) break;
      if (Date.now() < deadline) watches.watch(woken.shard, woken.epoch);
    }
  } finally {
    await watches.stop();
  }
  if (signal?.aborted) return ok({ jobs: [] });
  return router.claim(lane, now, null, signal);
}
