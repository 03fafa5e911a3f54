/**
 * The bulk requeue's benchmark, inside the bench worker: `n` failed jobs in one lane (COUNTS_LANE,
 * whose every alarm is timed), then a bulk requeue of them all while one producer enqueues and one
 * consumer claims, one call at a time. Reports the longest alarm run (each runs one chunk of at most
 * 500), the enqueue's and the claim's p99 before and during the bulk, and whether every job was
 * requeued exactly once: the action acted `n` times, and every one of the `n` jobs is queued or
 * running again (so none twice, and none missed). Targets: bulk-targets.ts.
 */
import { createLaneClient } from "../src/client/rpc.js";
import type { LaneClient } from "../src/client/types.js";
import type { CountsLane } from "./counts.js";
import { PULL_KIND } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { percentile, type Params } from "./workload-helpers.js";

type BulkEnv = BenchEnv & { COUNTS_LANE: DurableObjectNamespace<CountsLane> };

/**
 * Between two rounds of traffic: local workerd runs an object's due alarm only when no call to it is
 * waiting, so a producer and a consumer calling back to back without a pause hold the alarm off for
 * good (a run did: no chunk in minutes, the alarm stored and overdue).
 */
const PAUSE_MS = 2;

/** Enqueues and claims one job at a time until `until` says stop: each call's milliseconds. */
async function traffic(lane: LaneClient, until: () => Promise<boolean>): Promise<{ enqueueMs: number[]; claimMs: number[] }> {
  const enqueueMs: number[] = [];
  const claimMs: number[] = [];
  for (let i = 0; !(await until()); i++) {
    let t0 = Date.now();
    await lane.enqueue({ kind: "bench.bulk.other", payload: { i } });
    enqueueMs.push(Date.now() - t0);
    t0 = Date.now();
    await lane.claim({ kinds: [PULL_KIND], max: 1 });
    claimMs.push(Date.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  }
  return { enqueueMs, claimMs };
}

const p = (values: number[], q: number) => percentile([...values].sort((a, b) => a - b), q);

export const bulkWorkloads: Record<string, (env: BenchEnv, params: Params) => Promise<object>> = {
  async bulkRequeue(env, params) {
    const n = typeof params.n === "number" ? params.n : 100_000;
    const name = `bulk-${String(params.run)}`;
    const namespace = (env as BulkEnv).COUNTS_LANE;
    const stub = namespace.getByName(name);
    const lane = createLaneClient(namespace).lane(name);
    const fillStart = Date.now();
    for (let from = 0; from < n; from += 1000) {
      await lane.enqueueBatch({ jobs: Array.from({ length: Math.min(1000, n - from) }, (_, i) => ({ id: `f${from + i}`, kind: PULL_KIND })) });
    }
    while ((await lane.failLane({ reason: "bench" })).more);
    const fillMs = Date.now() - fillStart;
    const before = await lane.info();
    if (before.counts.failed !== n) throw new Error(`expected ${n} failed jobs, found ${before.counts.failed}`);

    // The same traffic without a bulk action, for comparison (a fixed number of rounds).
    let rounds = 0;
    const baseline = await traffic(lane, async () => ++rounds > 300);
    await stub.benchAlarmTimes();

    const t0 = Date.now();
    const { bulk } = await lane.bulk({ action: "requeue", filter: { outcome: "failed", kind: PULL_KIND } });
    let last = bulk;
    let checks = 0;
    const during = await traffic(lane, async () => {
      // Its progress read every 20 rounds (a read is a call too).
      if (++checks % 20 !== 0) return false;
      last = (await lane.getBulk(bulk.id)).bulk;
      if (Date.now() - t0 > 900_000) throw new Error(`bulk requeue unfinished after 15 minutes: ${JSON.stringify(last)}`);
      return last.state === "done";
    });
    const wallMs = Date.now() - t0;
    const alarms = (await stub.benchAlarmTimes()).sort((a, b) => a - b);
    const after = await lane.info();
    const again = after.counts.queued + after.counts.running - during.enqueueMs.length - baseline.enqueueMs.length;
    return {
      n, fillMs, wallMs, jobsPerSec: (n * 1000) / wallMs,
      bulk: last,
      // Acted n times, and the n jobs are all back (queued, or running for the claims that took them;
      // the other kind's jobs taken away): so none twice and none missed.
      requeuedOnce: last.done === n && last.skipped === 0 && after.counts.failed === 0 && again === n,
      back: again,
      alarms: { count: alarms.length, longestMs: alarms.at(-1) ?? null, p50: percentile(alarms, 50), p99: percentile(alarms, 99), longest: alarms.slice(-5) },
      duringBulk: { rounds: during.enqueueMs.length, enqueue: { p50: p(during.enqueueMs, 50), p99: p(during.enqueueMs, 99), max: p(during.enqueueMs, 100) }, claim: { p50: p(during.claimMs, 50), p99: p(during.claimMs, 99), max: p(during.claimMs, 100) } },
      baseline: { rounds: baseline.enqueueMs.length, enqueue: { p50: p(baseline.enqueueMs, 50), p99: p(baseline.enqueueMs, 99) }, claim: { p50: p(baseline.claimMs, 50), p99: p(baseline.claimMs, 99) } },
    };
  },
};
