/**
 * Many tenants in one lane, inside the bench worker: one hot tenant's backlog beside thousands of
 * tenants with one job each, every tenant its own queue, with round-robin fairness and the lane's
 * `queueDefaults` (concurrency 1) as every queue's settings (no call per queue). Does every cold
 * tenant's job start before the hot tenant's 101st, and what does a claim cost among 10,001 queues
 * against a lane with one queue?
 */
import { createLaneClient } from "../src/client/rpc.js";
import { PULL_KIND } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { int, type Params } from "./workload-helpers.js";

const BATCH = 1000;
const HOT = "hot";
/** Rounds of claims of one, alternating between the two lanes: the ratio is their median. */
const ROUNDS = 5;

/** A paused round-robin lane whose queues follow queueDefaults concurrency 1, with `jobs` enqueued in batches. */
async function tenantLane(env: BenchEnv, name: string, jobs: (i: number) => { queue?: string }, n: number): Promise<number> {
  const lane = createLaneClient(env.PLAIN_LANE).lane(name);
  await lane.configure({ fairness: "round-robin", concurrency: 1_000, paused: true, queueDefaults: { concurrency: 1 } });
  const t0 = Date.now();
  for (let from = 0; from < n; from += BATCH) {
    await lane.enqueueBatch({ jobs: Array.from({ length: Math.min(BATCH, n - from) }, (_, k) => ({ kind: PULL_KIND, ...jobs(from + k) })) });
  }
  const ms = Date.now() - t0;
  await lane.configure({ paused: false });
  return ms;
}

export const tenantWorkloads: Record<string, (env: BenchEnv, params: Params) => Promise<object>> = {
  /**
   * `hot` jobs on one queue, enqueued first, then `cold` tenants of one job each. A pull consumer
   * first takes rounds of `single` claims of one job (timed: the claim's cost), then claims of 100 until the hot
   * tenant's 101st start, completing every job it takes (so that the hot queue may go on). Against it,
   * the same claims of one job in a lane with one queue (its jobs on one queue of concurrency 1, each
   * completed before the next claim), in alternating rounds: the ratio is their median.
   */
  async tenants(env, params) {
    const hot = int(params, "hot", 100_000);
    const cold = int(params, "cold", 10_000);
    const single = int(params, "single", 200);
    const run = String(params.run);
    const name = `tenants-${run}`;
    const setupMs = await tenantLane(env, name, (i) => ({ queue: i < hot ? HOT : `tenant-${i - hot}` }), hot + cold);
    const stub = env.PLAIN_LANE.getByName(name);
    // The claim's cost: rounds of `single` claims of one, here and in a lane of one queue (the same
    // settings, its jobs on one queue of concurrency 1), alternating so that both see the same load.
    const oneName = `tenants-one-${run}`;
    await tenantLane(env, oneName, () => ({ queue: HOT }), single * ROUNDS);
    const one = env.PLAIN_LANE.getByName(oneName);
    const starts: (string | null)[] = [];
    const ratios: number[] = [];
    let claimUs = 0;
    let oneQueueClaimUs = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const many = await stub.benchClaims(single, 1);
      const alone = await one.benchClaims(single, 1);
      starts.push(...many.queues);
      const perMany = many.us / Math.max(1, many.queues.length);
      const perOne = alone.us / Math.max(1, alone.queues.length);
      claimUs += perMany / ROUNDS;
      oneQueueClaimUs += perOne / ROUNDS;
      if (perOne > 0) ratios.push(perMany / perOne);
    }
    let hotStarts = starts.filter((q) => q === HOT).length;
    let hundredsUs = 0;
    let hundredsJobs = 0;
    const walkStart = Date.now();
    while (hotStarts < 101) {
      const page = await stub.benchClaims(1, 100);
      if (page.queues.length === 0) break; // nothing more to start: the figures below say how far it got
      hundredsUs += page.us;
      hundredsJobs += page.queues.length;
      for (const q of page.queues) {
        starts.push(q);
        if (q === HOT) hotStarts++;
      }
    }
    const walkMs = Date.now() - walkStart;
    // Positions count from 1 in the lane's start order.
    let hot101: number | null = null;
    let lastCold = 0;
    let coldStarted = 0;
    let hotSeen = 0;
    starts.forEach((q, i) => {
      if (q === HOT && ++hotSeen === 101) hot101 = i + 1;
      if (q !== HOT) {
        lastCold = i + 1;
        coldStarted++;
      }
    });
    ratios.sort((a, b) => a - b);
    return {
      hot, cold, setupMs, walkMs, started: starts.length, coldStarted,
      lastColdStartPosition: lastCold, hot101stPosition: hot101, everyColdBeforeHot101: coldStarted === cold && hot101 !== null && lastCold < hot101,
      claimOfOneUs: claimUs, oneQueueClaimOfOneUs: oneQueueClaimUs, claimCostRatios: ratios, claimCostRatio: ratios.length > 0 ? ratios[Math.floor(ratios.length / 2)]! : null,
      claimOf100PerJobUs: hundredsJobs > 0 ? hundredsUs / hundredsJobs : null,
    };
  },
};
