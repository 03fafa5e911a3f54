/**
 * Flow control in the bench, inside the bench worker: a lane's token bucket over a backlog (is the
 * sustained start rate the bucket's, and does the alarm fire no more often than the bucket needs?),
 * and round-robin fairness (how soon does a queue's single job start behind other queues' backlogs?).
 */
import { createLaneClient } from "../src/client/rpc.js";
import { unwrap } from "../src/shared/errors.js";
import { NOOP_KIND, PULL_KIND } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { int, sleep, untilSettled, type Params } from "./workload-helpers.js";

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

  /**
   * A fan-in of `groups` × `perGroup` children spread over `lanes` lanes (in-process no-ops, all due
   * at one instant a little after the flow is written): `groups` join jobs, join g in lane g waiting
   * for its `perGroup` children (spread evenly over every lane: most of them in other lanes), and a
   * parent in lane 0 waiting for the joins (a job names at most 100 dependencies: a fan-in of 1,000
   * is a join level). Per run: how long after the last child completed the parent completed (its run
   * is a no-op: its start is no later), and the notice calls between lanes it cost, per child.
   */
  async fanIn(env, params) {
    const lanes = int(params, "lanes", 10);
    const groups = int(params, "groups", 10);
    const perGroup = int(params, "perGroup", 100);
    const delayMs = int(params, "delayMs", 2_000);
    const names = Array.from({ length: lanes }, (_, i) => `fan-in-${String(params.run)}-${i}`);
    const client = createLaneClient(env.LANE);
    const childId = (g: number, k: number) => `c-${g}-${k}`;
    const laneOf = (k: number) => names[k % lanes]!;
    const t0 = Date.now();
    const runAt = t0 + delayMs;
    const byLane = new Map<string, { id: string; kind: string; runAt: number }[]>();
    for (let g = 0; g < groups; g++) {
      for (let k = 0; k < perGroup; k++) {
        const lane = laneOf(k);
        if (!byLane.has(lane)) byLane.set(lane, []);
        byLane.get(lane)!.push({ id: childId(g, k), kind: NOOP_KIND, runAt });
      }
    }
    await Promise.all([...byLane].map(([lane, jobs]) => client.lane(lane).enqueueBatch({ jobs })));
    const registeredAt = Date.now();
    await Promise.all(
      Array.from({ length: groups }, (_, g) =>
        client.lane(names[g % lanes]!).enqueue({ id: `join-${g}`, kind: NOOP_KIND, dependsOn: Array.from({ length: perGroup }, (_, k) => ({ lane: laneOf(k), id: childId(g, k) })) }),
      ),
    );
    await client.lane(names[0]!).enqueue({ id: "parent", kind: NOOP_KIND, dependsOn: Array.from({ length: groups }, (_, g) => ({ lane: names[g % lanes]!, id: `join-${g}` })) });
    const writtenMs = Date.now() - t0;
    if (Date.now() >= runAt) throw new Error(`the flow took ${writtenMs} ms to write, past its children's runAt: raise delayMs`);
    const before = await Promise.all(names.map((name) => env.LANE.getByName(name).benchOutbox()));
    const parentLane = client.lane(names[0]!);
    const deadline = Date.now() + 60_000;
    let parent = await parentLane.get("parent");
    while (parent.state !== "settled") {
      if (Date.now() > deadline) throw new Error(`the parent is still ${parent.state} after 60 s`);
      await sleep(10);
      parent = await parentLane.get("parent");
    }
    const after = await Promise.all(names.map((name) => env.LANE.getByName(name).benchOutbox()));
    let lastChild = 0;
    for (const name of names) {
      const { jobs } = await client.lane(name).list({ kind: NOOP_KIND, limit: 500 });
      for (const job of jobs) if (job.id.startsWith("c-")) lastChild = Math.max(lastChild, job.settledAt ?? Infinity);
    }
    const joins = await Promise.all(Array.from({ length: groups }, (_, g) => client.lane(names[g % lanes]!).get(`join-${g}`)));
    const joinsTold = await Promise.all(Array.from({ length: groups }, (_, g) => env.LANE.getByName(names[g % lanes]!).benchToldAt(`join-${g}`)));
    const parentTold = await env.LANE.getByName(names[0]!).benchToldAt("parent");
    const calls = after.reduce((n, a, i) => n + a.calls - before[i]!.calls, 0);
    const notices = after.reduce((n, a, i) => n + a.notices - before[i]!.notices, 0);
    const children = groups * perGroup;
    return {
      children, lanes, groups, writtenMs, registerMs: Date.now() - registeredAt,
      parentAfterLastChildMs: parent.settledAt! - lastChild,
      lastJoinAfterLastChildMs: Math.max(...joins.map((j) => j.settledAt!)) - lastChild,
      // Where the time goes: the last notice a join heard, after the last child; the joins' runs after
      // their last notice; the parent's last notice after the last join, and its run after it.
      lastJoinToldAfterLastChildMs: Math.max(...joinsTold.map((t) => t.last ?? 0)) - lastChild,
      joinRunAfterToldMs: Math.max(...joins.map((j, g) => j.settledAt! - (joinsTold[g]!.last ?? 0))),
      parentToldAfterLastJoinMs: (parentTold.last ?? 0) - Math.max(...joins.map((j) => j.settledAt!)),
      parentRunAfterToldMs: parent.settledAt! - (parentTold.last ?? 0),
      outcome: parent.outcome,
      noticeCalls: calls, notices, callsPerChild: calls / children,
    };
  },
};
