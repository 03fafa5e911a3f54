/**
 * The measurement loops that run INSIDE the bench worker, so RPC figures are worker → lane object and
 * not Node → HTTP. Timing note: inside workerd `Date.now()` only advances at I/O, so every interval
 * here is read around an awaited RPC or timer, never across a synchronous loop.
 */
import { createLaneClient, groupCommitCounters } from "../src/client/rpc.js";
import { enqueueGroupCounters } from "../src/worker/lane-call.js";
import type { LaneRegistry } from "../src/durable/registry.js";
import type { FloorTable } from "./bare.js";
import { NOOP_KIND, PULL_KIND, type BenchLane, type PlainLane } from "./lanes.js";
import { firesSoFar, loadLane } from "./schedules.js";
import {
  BATCH, POLL_MS, counted, int, interleaved, noopJobs, percentile, perOp, pool, preciseNow, rate, sleep, startTimes, str, sumCounters, summary, timed, untilSettled,
  type Params, type Timed,
} from "./workload-helpers.js";


export interface BenchEnv {
  LANE: DurableObjectNamespace<BenchLane>;
  PLAIN_LANE: DurableObjectNamespace<PlainLane>;
  REGISTRY: DurableObjectNamespace<LaneRegistry>;
  /** LANE's class with its recording (history and metrics) off (bench/recording.ts). */
  QUIET_LANE: DurableObjectNamespace<BenchLane>;
}

type Workload = (env: BenchEnv, params: Params) => Promise<object>;

export const workloads: Record<string, Workload> = {
  /**
   * Does Date.now() move inside a synchronous loop here? In production it moves only at I/O; under
   * local workerd it moves, and the in-object profile relies on that.
   */
  async clock() {
    const a = Date.now();
    let x = 0;
    for (let i = 0; i < 5e7; i++) x += i;
    const b = Date.now();
    await sleep(1);
    // The smallest step performance.now() takes: its resolution here.
    const p0 = performance.now();
    let p1 = p0;
    for (let i = 0; i < 1e8 && p1 === p0; i++) p1 = performance.now();
    return { syncLoopMs: b - a, afterIoMs: Date.now() - a, performanceStepMs: p1 - p0, x: x > 0 };
  },

  /** The floor of the HTTP workloads: a request that reaches the worker and does nothing. */
  async noop() {
    return {};
  },

  /** The floor: an empty RPC and a one-row-writing RPC to a lane object, sequential and 16 at once. */
  async floor(env, params) {
    const n = int(params, "n", 2000);
    const run = str(params, "run");
    const out: Record<string, unknown> = {};
    for (const concurrency of [1, 16]) {
      const empty = env.PLAIN_LANE.getByName(`floor-empty-${concurrency}-${run}`);
      await empty.benchPing(); // the object exists and is migrated before timing starts
      out[`empty_c${concurrency}`] = await timed(n, concurrency, () => empty.benchPing());
      const write = env.PLAIN_LANE.getByName(`floor-write-${concurrency}-${run}`);
      await write.benchPing();
      out[`write_c${concurrency}`] = await timed(n, concurrency, (i) => write.benchWrite(`w-${i}`));
    }
    return out;
  },

  /**
   * Raw SQLite inside one lane object: INSERT, UPDATE by primary key, claim-shaped UPDATE … RETURNING,
   * each on the lane's `jobs` and on the bare table (bare.ts) in alternating rounds, so that a noisy
   * machine's drift weighs on both alike: the ratio of the two is what the lane's schema costs.
   */
  async sqlite(env, params) {
    const n = int(params, "n", 50_000);
    const rounds = int(params, "rounds", 5);
    const chunk = Math.ceil(n / rounds);
    const lane = env.PLAIN_LANE.getByName(`sqlite-${str(params, "run")}`);
    await lane.benchSqlInsert(0, "none", "bare"); // the object migrated and the bare table created before timing starts
    // Which table goes first alternates by round: a call's writes can leave work (a WAL checkpoint) to the call after it.
    const both = async (statement: (table: FloorTable, round: number) => Promise<number>) => {
      const sums = { jobs: { ops: 0, ms: 0 }, bare: { ops: 0, ms: 0 } };
      for (let round = 0; round < rounds; round++) {
        for (const table of round % 2 === 0 ? (["jobs", "bare"] as const) : (["bare", "jobs"] as const)) {
          const t = await counted(() => statement(table, round));
          sums[table].ops += t.ops;
          sums[table].ms += t.ms;
        }
      }
      const total = (t: { ops: number; ms: number }): Timed => ({ ...t, opsPerSec: rate(t.ops, t.ms) });
      return { a: total(sums.jobs), b: total(sums.bare) };
    };
    const insert = await both((table, round) => lane.benchSqlInsert(chunk, `raw${round}`, table));
    const update = await both((table, round) => lane.benchSqlUpdate(chunk, table, round * chunk));
    const plans = await lane.benchPlans();
    const claim = await both((table) => lane.benchSqlClaim(chunk, table));
    return { n: chunk * rounds, rounds, insert: insert.a, update: update.a, claim: claim.a, bare: { insert: insert.b, update: update.b, claim: claim.b }, plans };
  },

  /**
   * The raw claim rate again, beside each repetition of a drain (run.ts): `n` rows inserted untimed
   * into a fresh probe lane, then `n` claim-shaped UPDATEs timed, as the sqlite workload's claim phase.
   * Its bare twin: a claim-shaped UPDATE and an UPDATE by primary key on the bare table (bare.ts), the
   * floor of a claim and a completion, over at least 20,000 rows so that whole milliseconds read it
   * to a few percent.
   */
  async claimFloor(env, params) {
    const n = int(params, "n", 20_000);
    const lane = env.PLAIN_LANE.getByName(`claim-floor-${str(params, "run")}`);
    await lane.benchSqlInsert(n, "raw");
    const floor = await counted(() => lane.benchSqlClaim(n));
    const bareN = int(params, "bareN", Math.max(n, 20_000));
    await lane.benchSqlInsert(bareN, "bare", "bare");
    const claim = await counted(() => lane.benchSqlClaim(bareN, "bare"));
    const update = await counted(() => lane.benchSqlUpdate(bareN, "bare"));
    return { ...floor, bare: { claim, update } };
  },

  /** Where the time goes inside the object: the pieces of enqueue, claim and complete, µs per op. */
  async profile(env, params) {
    const lane = env.PLAIN_LANE.getByName(`profile-${str(params, "run")}`);
    await lane.benchPing();
    return lane.benchProfile(int(params, "n", 1000));
  },

  /** Workload 1: one job per call through the RPC client, into a lane with no executors. */
  async enqueueRpc(env, params) {
    const n = int(params, "n", 2000);
    const concurrency = int(params, "concurrency", 1);
    // Rounds of 100 calls: a burst of load on this shared machine lasts long enough to skew a round of
    // 400 calls of one side alone (0.80–0.97 over runs of the same code with 5 rounds).
    const rounds = int(params, "rounds", 20);
    const run = str(params, "run");
    const name = `enqueue-c${concurrency}-${run}`;
    // One call per enqueue (group commit off): the cost of a call above the floor. The group commit
    // workload measures the same calls grouped.
    const lane = createLaneClient(env.PLAIN_LANE, { groupCommit: false }).lane(name);
    const stub = env.PLAIN_LANE.getByName(name);
    const floor = env.PLAIN_LANE.getByName(`enqueue-floor-c${concurrency}-${run}`);
    await lane.enqueue({ kind: PULL_KIND, payload: { warm: true } }); // the first enqueue registers the lane
    await floor.benchPing();
    await stub.benchCounters();
    await floor.benchCounters();
    const chunk = Math.ceil(n / rounds);
    // While schedules fire in `loadLane` (bench/schedules-run.ts): the fires that land inside each
    // side's timed rounds, read between rounds (outside the timing), so that the report says what load
    // the ratio saw (local workerd holds alarms back while RPCs come back to back).
    const load = typeof params.loadLane === "string" ? loadLane(env, params.loadLane) : null;
    const firesInRounds = { enqueue: 0, write: 0 };
    const counting = (side: keyof typeof firesInRounds, measure: (round: number) => Promise<Timed>) =>
      load
        ? async (round: number) => {
            const before = await firesSoFar(load);
            const figures = await measure(round);
            firesInRounds[side] += (await firesSoFar(load)) - before;
            return figures;
          }
        : measure;
    const { a: enqueue, b: write } = await interleaved(
      rounds,
      counting("enqueue", (round) => timed(chunk, concurrency, (i) => lane.enqueue({ kind: PULL_KIND, payload: { i: round * chunk + i } }))),
      counting("write", (round) => timed(chunk, concurrency, (i) => floor.benchWrite(`w-${round * chunk + i}`))),
    );
    return {
      enqueue: { ...enqueue, perOp: perOp(await stub.benchCounters(), enqueue.ops) },
      write: { ...write, perOp: perOp(await floor.benchCounters(), write.ops) },
      rounds,
      ...(load ? { firesInRounds } : {}),
    };
  },

  /**
   * Group commit: single enqueues through the RPC client from `concurrency` producers, each awaiting
   * its own call, with group commit on and off, in interleaved rounds into two lanes with no
   * executors; the groups formed (calls and the enqueues they carried) on the grouped side.
   */
  async groupCommit(env, params) {
    const n = int(params, "n", 20_000);
    const concurrency = int(params, "concurrency", 16);
    const rounds = int(params, "rounds", 10);
    const run = str(params, "run");
    const grouped = createLaneClient(env.PLAIN_LANE).lane(`group-on-c${concurrency}-${run}`);
    const alone = createLaneClient(env.PLAIN_LANE, { groupCommit: false }).lane(`group-off-c${concurrency}-${run}`);
    await grouped.enqueue({ kind: PULL_KIND, payload: { warm: true } });
    await alone.enqueue({ kind: PULL_KIND, payload: { warm: true } });
    const chunk = Math.ceil(n / rounds);
    const before = groupCommitCounters(env.PLAIN_LANE);
    const { a: on, b: off } = await interleaved(
      rounds,
      (round) => timed(chunk, concurrency, (i) => grouped.enqueue({ kind: PULL_KIND, payload: { i: round * chunk + i } })),
      (round) => timed(chunk, concurrency, (i) => alone.enqueue({ kind: PULL_KIND, payload: { i: round * chunk + i } })),
    );
    const after = groupCommitCounters(env.PLAIN_LANE);
    const calls = after.calls - before.calls;
    const items = after.items - before.items;
    const stored = (await grouped.info()).counts.queued;
    return { concurrency, on, off, ratio: on.opsPerSec !== null && off.opsPerSec ? on.opsPerSec / off.opsPerSec : null, groups: { calls, items, meanSize: calls > 0 ? items / calls : null, largest: after.largest }, stored };
  },

  /** The front worker's group commit in this isolate so far: calls to lanes, the enqueues they carried. */
  async httpGroups() {
    return enqueueGroupCounters();
  },

  /** Workload 2: batch enqueue, 1000 jobs per call; raw INSERTs of as many rows in between, in a probe lane. */
  async batch(env, params) {
    const total = int(params, "total", 100_000);
    const rounds = int(params, "rounds", Math.max(1, Math.round(total / 10_000)));
    const run = str(params, "run");
    const name = `batch-${run}`;
    const lane = createLaneClient(env.PLAIN_LANE).lane(name);
    const stub = env.PLAIN_LANE.getByName(name);
    const probe = env.PLAIN_LANE.getByName(`batch-floor-${run}`);
    await lane.info();
    await probe.benchPing();
    await stub.benchCounters();
    const calls = Math.ceil(total / rounds / BATCH);
    const { a: batch, b: rawInsert } = await interleaved(
      rounds,
      (round) =>
        timed(calls, 1, (c) => {
          const from = (round * calls + c) * BATCH;
          return lane.enqueueBatch({ jobs: noopJobs(from, BATCH, PULL_KIND) });
        }).then((t) => ({ ...t, ops: t.ops * BATCH })),
      (round) => timed(1, 1, () => probe.benchSqlInsert(calls * BATCH, `r${round}`)).then((t) => ({ ...t, ops: calls * BATCH })),
    );
    return { jobs: batch.ops, calls: calls * rounds, ms: batch.ms, jobsPerSec: batch.opsPerSec, perJob: perOp(await stub.benchCounters(), batch.ops), rawInsert, rounds };
  },

  /** Workload 3 (and 8 per lane): enqueue `n` no-op jobs in batches, time from first enqueue to all settled. */
  async drain(env, params) {
    const perLane = int(params, "n", 20_000);
    const lanes = int(params, "lanes", 1);
    const concurrency = int(params, "concurrency", 16);
    const run = str(params, "run");
    const steps = int(params, "steps", 0); // each job records this many checkpoints (bench/steps.ts)
    // With `recording: "off"`, on the same lane class with its recording off (bench/recording.ts).
    const quiet = params.recording === "off";
    const namespace = quiet ? env.QUIET_LANE : env.LANE;
    const names = Array.from({ length: lanes }, (_, l) => `drain-c${concurrency}-l${lanes}-${l}-${run}${steps ? `-s${steps}` : ""}${params.limit ? "-rl" : ""}${quiet ? "-quiet" : ""}${params.enqueueFirst ? "-ef" : ""}`);
    const clients = names.map((name) => createLaneClient(namespace).lane(name));
    const stubs = names.map((name) => namespace.getByName(name));
    // With `limit`, the lane has a rate limit of that many jobs per 100 ms: set high, it never bites, and the drain pays only its draws.
    const limit = int(params, "limit", 0);
    const rateLimit = limit > 0 ? { limit, periodMs: 100 } : null;
    // With `enqueueFirst`, every job is in while the lane is paused, and the clock starts at the resume: claims and completions alone.
    const enqueueFirst = params.enqueueFirst === true;
    await Promise.all(clients.map((c) => c.configure({ concurrency, rateLimit, paused: enqueueFirst })));
    await Promise.all(stubs.map((s) => s.benchWhatIf({ skipAlarmWrites: params.skipAlarmWrites === true })));
    await Promise.all(stubs.map((s) => s.benchCounters()));
    const start = Date.now();
    let t0 = start;
    let enqueuedAt = 0;
    await Promise.all(
      clients.map(async (client) => {
        for (let from = 0; from < perLane; from += BATCH) {
          const jobs = noopJobs(from, Math.min(BATCH, perLane - from));
          await client.enqueueBatch({ jobs: steps ? jobs.map((job) => ({ ...job, payload: { ...job.payload, steps } })) : jobs });
        }
        enqueuedAt = Math.max(enqueuedAt, Date.now());
      }),
    );
    if (enqueueFirst) {
      await Promise.all(stubs.map((s) => s.benchCounters())); // the enqueues' statements are not the drain's
      t0 = Date.now();
      await Promise.all(clients.map((c) => c.configure({ paused: false })));
    }
    const done = await untilSettled(stubs, perLane * lanes);
    const ms = done.at - t0;
    const completed = done.counts.reduce((sum, c) => sum + c.completed, 0);
    // The polls' own statements (info: counts, settings, wake) are in these counters too: a few per poll.
    const counters = sumCounters(await Promise.all(stubs.map((s) => s.benchCounters())));
    return {
      lanes, perLane, jobs: perLane * lanes, concurrency, ms, enqueueMs: enqueuedAt - start, enqueueFirst, jobsPerSec: rate(perLane * lanes, ms),
      completed, polls: done.polls, pollMs: POLL_MS, perJob: perOp(counters, perLane * lanes),
    };
  },

  /**
   * One job per call through the RPC client into a lane with a no-op executor at
   * concurrency 16, from the first enqueue to the last executor start; the one-row-writing RPC (the
   * floor) in rounds in between, as for workload 1.
   */
  async single(env, params) {
    const n = int(params, "n", 2000);
    const rounds = int(params, "rounds", 5);
    const run = str(params, "run");
    const floor = env.PLAIN_LANE.getByName(`single-floor-${run}`);
    await floor.benchPing();
    const chunk = Math.ceil(n / rounds);
    const names: string[] = [];
    const { a: single, b: write } = await interleaved(
      rounds,
      async (round) => {
        const name = `single-${round}-${run}`;
        names.push(name);
        const lane = createLaneClient(env.LANE).lane(name);
        await lane.configure({ concurrency: 16 });
        await lane.enqueue({ kind: NOOP_KIND, payload: { warm: true } }); // registers the lane before timing
        await untilSettled([env.LANE.getByName(name)], 1);
        await env.LANE.getByName(name).benchCounters();
        const t0 = Date.now();
        for (let i = 0; i < chunk; i++) await lane.enqueue({ kind: NOOP_KIND, payload: { t: Date.now() } });
        await untilSettled([env.LANE.getByName(name)], chunk + 1);
        const lastStart = Math.max(...(await startTimes(lane)).map((t) => t.start));
        return { ops: chunk, ms: lastStart - t0, opsPerSec: rate(chunk, lastStart - t0) };
      },
      (round) => timed(chunk, 1, (i) => floor.benchWrite(`w-${round * chunk + i}`)),
    );
    const counters = sumCounters(await Promise.all(names.map((name) => env.LANE.getByName(name).benchCounters())));
    return { single: { ...single, perOp: perOp(counters, single.ops) }, write, rounds };
  },

  /** `queues` serial queues × `perQueue` jobs at lane concurrency 16, first enqueue to all settled. */
  async serialQueues(env, params) {
    const queues = int(params, "queues", 16);
    const perQueue = int(params, "perQueue", 1000);
    const name = `serial-${str(params, "run")}`;
    const lane = createLaneClient(env.LANE).lane(name);
    const stub = env.LANE.getByName(name);
    await lane.configure({ concurrency: 16 });
    await stub.benchCounters();
    const total = queues * perQueue;
    const t0 = Date.now();
    for (let from = 0; from < total; from += BATCH) {
      const jobs = Array.from({ length: Math.min(BATCH, total - from) }, (_, i) => ({ kind: NOOP_KIND, payload: null, queue: `q${(from + i) % queues}` }));
      await lane.enqueueBatch({ jobs });
    }
    const done = await untilSettled([stub], total);
    const ms = done.at - t0;
    return { queues, perQueue, jobs: total, ms, jobsPerSec: rate(total, ms), perJob: perOp(await stub.benchCounters(), total) };
  },

  /** Workload 5: jobs enqueued `gapMs` apart into an idle lane; enqueue call → executor start. */
  async latency(env, params) {
    const n = int(params, "n", 500);
    const gapMs = int(params, "gapMs", 10);
    const name = `latency-${str(params, "run")}`;
    const lane = createLaneClient(env.LANE).lane(name);
    await lane.info();
    const roundTrips: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = Date.now();
      const tp = preciseNow();
      await lane.enqueue({ kind: NOOP_KIND, payload: { t, tp } });
      roundTrips.push(preciseNow() - tp);
      await sleep(gapMs);
    }
    await untilSettled([env.LANE.getByName(name)], n);
    const times = await startTimes(lane);
    // With performance.now() on both sides (the call and the executor's start), to fractions of a ms;
    // whole-ms Date.now() figures kept beside them.
    const precise = times.flatMap((t) => (t.startPrecise !== null && t.calledPrecise !== null ? [t.startPrecise - t.calledPrecise] : []));
    return {
      n, gapMs, startDelayMs: summary(precise), startDelayWholeMs: summary(times.map((t) => t.start - t.called)),
      createdToStartMs: summary(times.map((t) => t.start - t.created)), enqueueRoundTripMs: summary(roundTrips),
    };
  },

  /** Workload 6: producers enqueue for `durationMs` while the executors run; first start and drain lag. */
  async stream(env, params) {
    const durationMs = int(params, "durationMs", 10_000);
    const producers = int(params, "producers", 4);
    const concurrency = int(params, "concurrency", 16);
    const name = `stream-${str(params, "run")}`;
    const lane = createLaneClient(env.LANE).lane(name);
    await lane.configure({ concurrency });
    let enqueued = 0;
    const t0 = Date.now();
    const stopAt = t0 + durationMs;
    await Promise.all(
      Array.from({ length: producers }, async () => {
        while (Date.now() < stopAt) {
          await lane.enqueue({ kind: NOOP_KIND, payload: { t: Date.now() } });
          enqueued++;
        }
      }),
    );
    const streamEnd = Date.now();
    const done = await untilSettled([env.LANE.getByName(name)], enqueued);
    const times = await startTimes(lane);
    const starts = times.map((t) => t.start);
    const firstStart = Math.min(...starts);
    return {
      durationMs: streamEnd - t0,
      producers,
      concurrency,
      enqueued,
      enqueuePerSec: rate(enqueued, streamEnd - t0),
      firstStartMs: firstStart - t0,
      startedDuringStream: starts.filter((s) => s <= streamEnd).length,
      drainLagMs: done.at - streamEnd,
      startDelayMs: summary(times.map((t) => t.start - t.called)),
    };
  },

  /** Workloads 4 and 7, setup: grow a lane's backlog of pull-only jobs to `size` queued jobs with batch enqueue. */
  async fill(env, params) {
    const size = int(params, "size", 1000);
    const name = str(params, "lane");
    // The pull workload fills a LANE (the app's binding); growth fills a PLAIN_LANE.
    const lane = params.binding === "LANE" ? createLaneClient(env.LANE).lane(name) : createLaneClient(env.PLAIN_LANE).lane(name);
    const info = await lane.configure({ concurrency: 1000 });
    const t0 = Date.now();
    let added = 0;
    for (let queued = info.counts.queued; queued < size; queued += BATCH) {
      const count = Math.min(BATCH, size - queued);
      await lane.enqueueBatch({ jobs: noopJobs(queued, count, PULL_KIND) });
      added += count;
    }
    const ms = Date.now() - t0;
    return { added, ms, jobsPerSec: rate(added, ms) };
  },

  /** Workload 7, measure: enqueue and claim cost at the lane's current backlog (claims completed after, untimed). */
  async growth(env, params) {
    const ops = int(params, "ops", 500);
    const lane = createLaneClient(env.PLAIN_LANE).lane(str(params, "lane"));
    const stub = env.PLAIN_LANE.getByName(str(params, "lane"));
    const before = await lane.info();
    await stub.benchCounters();
    const enqueue = await timed(ops, 1, (i) => lane.enqueue({ kind: PULL_KIND, payload: { g: i } }));
    const enqueueCost = perOp(await stub.benchCounters(), ops);
    const claimed: { id: string; token: string }[] = [];
    const claim = await timed(ops, 1, async () => {
      const { jobs } = await lane.claim({ max: 1, kinds: [PULL_KIND] });
      for (const job of jobs) claimed.push({ id: job.id, token: job.lease.token });
    });
    const claimCost = perOp(await stub.benchCounters(), ops);
    await pool(claimed.length, 16, (i) => lane.complete(claimed[i]!.id, { token: claimed[i]!.token }));
    // info() counts every row: its cost is the one that grows with the backlog (median of 5).
    const infoTimes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      await lane.info();
      infoTimes.push(Date.now() - t0);
    }
    const infoMs = summary(infoTimes).p50;
    const wake = await stub.benchWake(20);
    return { queued: before.counts.queued, enqueue: { ...enqueue, perOp: enqueueCost }, claim: { ...claim, perOp: claimCost }, claimed: claimed.length, infoMs, wake };
  },
};
