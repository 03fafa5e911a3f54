/**
 * Sharded lanes in the bench, inside the bench worker (docs/benchmarks.md "Sharded lanes"): what a
 * job costs on a 4-shard lane against one shard (enqueue and drain, each its own workload so that the
 * process watch measures its CPU alone), a claim on a 16-shard lane whose work sits in one shard
 * against a 1-shard claim, and the info of a 64-shard lane. Locally every shard shares one thread, so
 * these are costs, not throughput: the production model is in docs/benchmarks.md.
 */
import { createLaneClient } from "../src/client/rpc.js";
import { shardOf } from "../src/shared/shards.js";
import { PULL_KIND } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { int, type Params } from "./workload-helpers.js";

const PRODUCERS = 16;
const CONSUMERS = 4;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** A queue name whose shard is `target` of `shards`. */
function queueOn(target: number, shards: number): string {
  for (let n = 0; ; n++) if (shardOf(`q-${n}`, shards) === target) return `q-${n}`;
}

/** The concurrency of the lanes `shardEnqueue` fills: the most a lane may have (on 4 shards, 250 each: room for two of the 4 consumers' claims of 100 at once on one shard). */
const DRAIN_CONCURRENCY = 1_000;

export const shardWorkloads: Record<string, (env: BenchEnv, params: Params) => Promise<object>> = {
  /**
   * `n` single enqueues from 16 concurrent producers (RPC client, group commit on; `solo`: off, one
   * call each) into a lane of `shards`.
   */
  async shardEnqueue(env, params) {
    const n = int(params, "n", 10_000);
    const shards = int(params, "shards", 1);
    const lane = createLaneClient(env.LANE, { groupCommit: params.solo !== true }).lane(String(params.lane));
    // The drain that follows (`shardDrain`) must be bound by neither lane's concurrency, so that the CPU
    // per job compares routing and not how many jobs a claim may take: the lane's concurrency is split
    // among its shards, so both lanes get room for every consumer's claims of 100 on every shard.
    await lane.configure(shards > 1 ? { shards, concurrency: DRAIN_CONCURRENCY } : { concurrency: DRAIN_CONCURRENCY });
    let next = 0;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: PRODUCERS }, async () => {
        while (next < n) {
          next++;
          await lane.enqueue({ kind: PULL_KIND, payload: { i: next } });
        }
      }),
    );
    const ms = Date.now() - t0;
    return { n, shards, ms, jobsPerSec: (n * 1000) / ms };
  },

  /** Drains the lane `shardEnqueue` filled: 4 pull consumers, claims of 100 and batch acks, until `n` are completed. */
  async shardDrain(env, params) {
    const n = int(params, "n", 10_000);
    const lane = createLaneClient(env.LANE).lane(String(params.lane));
    let done = 0;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: CONSUMERS }, async () => {
        while (done < n) {
          const { jobs } = await lane.claim({ kinds: [PULL_KIND], max: 100 });
          if (jobs.length === 0) {
            if ((await lane.info()).counts.queued === 0) break;
            continue;
          }
          await lane.acks({ acks: jobs.map((job) => ({ op: "complete" as const, id: job.id, token: job.lease.token })) });
          done += jobs.length;
        }
      }),
    );
    const ms = Date.now() - t0;
    return { n: done, ms, jobsPerSec: (done * 1000) / ms };
  },

  /**
   * `k` claims, each of the one job of a lane of `shards` (enqueued on its last shard beforehand,
   * untimed), then completed: the median time of a claim, with work in one shard of many.
   */
  async shardClaim(env, params) {
    const k = int(params, "k", 200);
    const shards = int(params, "shards", 1);
    const lane = createLaneClient(env.LANE).lane(`shard-claim-${shards}-${String(params.run)}`);
    if (shards > 1) await lane.configure({ shards, concurrency: Math.max(10, shards) });
    const queue = queueOn(shards - 1, shards);
    await lane.claim({ kinds: [PULL_KIND] }); // the router's count, read before the timed claims
    const times: number[] = [];
    for (let i = 0; i < k; i++) {
      await lane.enqueue({ kind: PULL_KIND, queue });
      const t0 = performance.now();
      const { jobs } = await lane.claim({ kinds: [PULL_KIND] });
      times.push(performance.now() - t0);
      if (jobs.length !== 1) throw new Error(`claim ${i} took ${jobs.length} jobs`);
      await lane.complete(jobs[0]!.id, { token: jobs[0]!.lease.token });
    }
    return { k, shards, medianMs: median(times), p90Ms: [...times].sort((a, b) => a - b)[Math.floor(times.length * 0.9)] };
  },

  /** The info of a lane of `shards`, each shard holding a job: median of `k` reads, and the object calls one read makes. */
  async shardInfo(env, params) {
    const k = int(params, "k", 50);
    const shards = int(params, "shards", 64);
    const lane = createLaneClient(env.LANE).lane(`shard-info-${shards}-${String(params.run)}`);
    if (shards > 1) await lane.configure({ shards, concurrency: Math.max(10, shards) });
    for (let i = 0; i < shards; i++) await lane.enqueue({ kind: PULL_KIND, queue: queueOn(i, shards) });
    const times: number[] = [];
    let queued = 0;
    for (let i = 0; i < k; i++) {
      const t0 = performance.now();
      queued = (await lane.info()).counts.queued;
      times.push(performance.now() - t0);
    }
    // One call to shard 0 (its info says the count), then one call to each other shard, all at once.
    return { k, shards, queued, medianMs: median(times), objectCallsPerRead: shards, rounds: shards > 1 ? 2 : 1 };
  },
};
