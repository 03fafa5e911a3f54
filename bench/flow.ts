/**
 * Flow control in the bench, inside the bench worker: a lane's token bucket over a backlog (is the
 * sustained start rate the bucket's, and does the alarm fire no more often than the bucket needs?),
 * and round-robin fairness (how soon does a queue's single job start behind other queues' backlogs?).
 */
import { createLaneClient } from "../src/client/rpc.js";
import { unwrap } from "../src/shared/errors.js";
import { NOOP_KIND, PULL_KIND } from "./lanes.js";
import { untilSettled, type BenchEnv } from "./workloads.js";

type Params = Record<string, unknown>;
const int = (params: Params, key: string, fallback: number) => (typeof params[key] === "number" ? (params[key] as number) : fallback);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const BATCH = 1000;

export const flowWorkloads: Record<string, (env: BenchEnv, params: Params) => Promise<object>> = {
  /**
   * A bucket of `limit` per second over a backlog of `n` no-op in-process jobs (concurrency 64, so
   * that the bucket is what binds): after the first burst has gone, the starts and the alarms the
   * lane ran over `windowMs`. Then the limit is lifted and the rest drains.
   */
  async bucket(env, params) {
    const n = int(params, "n", 10_000);
    const limit = int(params, "limit", 100);
    const windowMs = int(params, "windowMs", 10_000);
    const name = `bucket-${String(params.run)}`;
    const lane = createLaneClient(env.LANE).lane(name);
    const stub = env.LANE.getByName(name);
    await lane.configure({ concurrency: 64, rateLimit: { limit, periodMs: 1_000 } });
    for (let from = 0; from < n; from += BATCH) {
      await lane.enqueueBatch({ jobs: Array.from({ length: Math.min(BATCH, n - from) }, (_, i) => ({ kind: NOOP_KIND, payload: { i: from + i } })) });
    }
    await sleep(1_500); // the burst of `limit` and the first refills
    const claimed = async () => (await lane.info()).stats.claimed;
    await stub.benchCounters();
    const before = await claimed();
    const t0 = Date.now();
    await sleep(windowMs);
    const after = await claimed();
    const ms = Date.now() - t0;
    const alarms = (await stub.benchCounters()).alarms;
    await lane.configure({ rateLimit: null });
    await untilSettled([stub], n);
    return { n, limit, windowMs: ms, starts: after - before, startsPerSec: ((after - before) * 1000) / ms, alarms, alarmsPerSec: (alarms * 1000) / ms };
  },

  /**
   * Round-robin over `queues` queues: `perQueue` jobs in each of all but the last, enqueued first,
   * then the last queue's one job; a pull consumer claims 100 at a time. The figure: how many jobs
   * started before the last queue's job (with fifo, all of them would).
   */
  async roundRobin(env, params) {
    const queues = int(params, "queues", 1_000);
    const perQueue = int(params, "perQueue", 100);
    const name = `round-robin-${String(params.run)}`;
    const lane = createLaneClient(env.PLAIN_LANE).lane(name);
    await lane.configure({ fairness: "round-robin", concurrency: 1_000, paused: true });
    const total = (queues - 1) * perQueue;
    let jobs: { kind: string; queue: string }[] = [];
    const t0 = Date.now();
    for (let i = 0; i < total; i++) {
      jobs.push({ kind: PULL_KIND, queue: `q${i % (queues - 1)}` });
      if (jobs.length === BATCH) {
        await lane.enqueueBatch({ jobs });
        jobs = [];
      }
    }
    jobs.push({ kind: PULL_KIND, queue: "last" });
    await lane.enqueueBatch({ jobs: jobs.map((j, i) => (i === jobs.length - 1 ? { ...j, id: "the-last-one" } : j)) });
    const enqueueMs = Date.now() - t0;
    await lane.configure({ paused: false });
    let started = 0;
    let position: number | null = null;
    const claimStart = Date.now();
    while (position === null && started < total + 1) {
      const claimed = unwrap(await env.PLAIN_LANE.getByName(name).claim({ max: 100, leaseMs: 600_000 })).jobs;
      if (claimed.length === 0) break; // every queue at its one running job: nothing more to claim
      const at = claimed.findIndex((j) => j.id === "the-last-one");
      if (at >= 0) position = started + at + 1;
      started += claimed.length;
    }
    const claimMs = Date.now() - claimStart;
    return { queues, perQueue, jobs: total + 1, enqueueMs, startedBeforeIt: position === null ? null : position - 1, position, claimMs, claims: Math.ceil(started / 100) };
  },
};
