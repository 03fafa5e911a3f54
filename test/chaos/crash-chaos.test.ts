/**
 * The chaos suite (`npm run test:chaos`): the real runtime driven from Node over persisted
 * state. Producers enqueue thousands of jobs across several lanes (one sharded over 4 objects, one
 * rate limited), in-process executors and pull consumers work them, a canceller cancels some, and
 * the runtime is SIGKILLed at random moments and restarted over the same state. At rest, every
 * acknowledged enqueue exists and is settled exactly once (stored once, whichever shard holds it),
 * no result was written by an attempt that had lost its lease, no attempt claimed after a step's
 * checkpoint landed ran that step again (pull consumers' steps over HTTP, `demo.steps` in process)
 * and completed jobs keep no checkpoint, counts equal the rows, no lane keeps an alarm, and no log
 * line holds a token.
 *
 *   CHAOS_SEED=<seed> npm run test:chaos     replays a run's decisions (workload, consumers, kill moments)
 *   CHAOS_JOBS=<n> CHAOS_KILLS=<k>           size it (defaults 3000 jobs, 5 kills)
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { cancelRandomly, consume, watch, type Shared } from "./consumers.js";
import { Ledger } from "./ledger.js";
import { createPrng, sleep } from "./prng.js";
import { produce } from "./producers.js";
import { ChaosRuntime } from "./runtime.js";
import { watchSteps } from "./steps.js";
import { bucketOverflows, secretsInLog, verify } from "./verify.js";

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const JOBS = Number(process.env.CHAOS_JOBS ?? 3000);
const KILLS = Number(process.env.CHAOS_KILLS ?? 5);
const LANES = ["chaos-a", "chaos-b", "chaos-c", "chaos-d"];
/** One lane is sharded: its jobs spread over 4 objects, and none may be lost or stored twice across them. */
const SHARDED = { lane: "chaos-c", shards: 4 };
/** One lane is rate limited: no kill may let it start more than its bucket allows. */
const RATE_LIMITED = { lane: "chaos-d", rateLimit: { limit: 60, periodMs: 1_000 } };
const PRODUCERS = 3;
const CONSUMERS = 4;
/** How long producers spread their enqueues over, so that kills land while they enqueue. */
const PRODUCE_SPREAD_MS = 35_000;
/** After the last kill: in-process leases of a dead incarnation may take their 30 s to lapse. */
const DRAIN_DEADLINE_MS = 120_000;

it(`survives ${KILLS} hard kills under load with nothing lost and nothing settled twice`, async () => {
  console.log(`chaos: seed=${SEED} jobs=${JOBS} kills=${KILLS} (replay: CHAOS_SEED=${SEED} npm run test:chaos)`);
  const started = Date.now();
  const rng = createPrng(SEED);
  const stateDir = mkdtempSync(join(tmpdir(), "switchyard-chaos-"));
  const logLines: string[] = [];
  const bearer = `chaos-${randomBytes(16).toString("hex")}`;
  // Which incarnation printed each line: one printed just before a kill may tell of a write it lost.
  const incarnations: number[] = [];
  const runtime = new ChaosRuntime(stateDir, bearer, (line, incarnation) => {
    logLines.push(line);
    incarnations.push(incarnation);
  });
  const ledger = new Ledger();
  const shared: Shared = { runtime, ledger, lanes: LANES, stopping: false, killsDone: false };
  try {
    await runtime.start();
    // Room for leases of a dead incarnation while the rest keeps flowing.
    for (const lane of LANES) expect((await runtime.settle("PATCH", `/v1/lanes/${lane}`, { concurrency: 40 })).status).toBe(200);
    expect((await runtime.settle("PATCH", `/v1/lanes/${RATE_LIMITED.lane}`, { rateLimit: RATE_LIMITED.rateLimit })).status).toBe(200);
    expect((await runtime.settle("PATCH", `/v1/lanes/${SHARDED.lane}`, { shards: SHARDED.shards })).status).toBe(200);

    const workers = [
      ...Array.from({ length: CONSUMERS }, (_, i) => consume(shared, `consumer-${i}`, rng.fork(`consumer-${i}`))),
      cancelRandomly(shared, rng.fork("cancel"), 500),
      watch(shared, 1_500),
      watchSteps(shared, 400),
    ];
    const perProducer = Math.ceil(JOBS / PRODUCERS);
    const producers = Array.from({ length: PRODUCERS }, (_, index) =>
      produce(runtime, ledger, rng.fork(`producer-${index}`), {
        index,
        jobs: Math.min(perProducer, JOBS - index * perProducer),
        lanes: LANES,
        spreadMs: PRODUCE_SPREAD_MS,
      }),
    );
    const killer = (async () => {
      const kills = rng.fork("kills");
      for (let k = 0; k < KILLS; k++) {
        await sleep(kills.int(3_000, 12_000));
        await runtime.killAndRestart();
      }
      shared.killsDone = true;
    })();
    await Promise.all([...producers, killer]);
    const lastRestart = Date.now();
    console.log(`chaos: ${ledger.acked.size} enqueues acknowledged, ${runtime.kills} kills survived, draining`);

    // At rest: every lane holds exactly its acknowledged jobs, none of them queued, running or completing.
    const perLane = new Map(LANES.map((lane) => [lane, [...ledger.acked].filter((k) => k.startsWith(`${lane}/`)).length]));
    for (;;) {
      let busy = 0;
      for (const lane of LANES) {
        const info = await runtime.settle("GET", `/v1/lanes/${lane}`);
        const c = info.body.counts;
        const total = Object.values(c as Record<string, number>).reduce((a, b) => a + b, 0);
        busy += c.queued + c.running + c.completing + Math.abs(total - perLane.get(lane)!);
      }
      if (busy === 0) break;
      if (Date.now() - lastRestart > DRAIN_DEADLINE_MS) break;
      if ((Date.now() - lastRestart) % 15_000 < 1_000) console.log(`chaos: draining, ${busy} jobs to go`);
      await sleep(1_000);
    }
    shared.stopping = true;
    await Promise.all(workers);

    const verdict = await verify(runtime, ledger, LANES, logLines, incarnations);
    const leaks = secretsInLog(logLines, bearer, new Set(ledger.tokens.keys()));
    const bucket = bucketOverflows(logLines, incarnations, RATE_LIMITED.lane, RATE_LIMITED.rateLimit);
    // CHAOS_LOG=<file>: every line the runtime printed, with its incarnation, to read a failure by.
    if (process.env.CHAOS_LOG) writeFileSync(process.env.CHAOS_LOG, logLines.map((line, i) => `${incarnations[i]} ${line}`).join("\n"));
    console.log(`chaos: rate-limited ${RATE_LIMITED.lane} (${RATE_LIMITED.rateLimit.limit} per ${RATE_LIMITED.rateLimit.periodMs} ms): ${bucket.starts} starts (${bucket.retracted} start lines retracted by a later incarnation), bucketExceeded=${bucket.overflows.length}`);
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    console.log(`chaos: outcomes ${JSON.stringify(verdict.outcomes)} phantomSettleLines=${verdict.phantomSettles} tally ${JSON.stringify(ledger.tally)} stale ${JSON.stringify(ledger.staleAnswers)} logLines=${logLines.length} ${seconds}s`);
    for (const problem of [...verdict.problems, ...leaks, ...bucket.overflows].slice(0, Number(process.env.CHAOS_PROBLEMS ?? 40))) console.log(`chaos: PROBLEM ${problem}`);
    console.log(
      `chaos: enqueued=${verdict.enqueued} settled=${verdict.settled} lost=${verdict.lost} settledTwice=${verdict.settledTwice} kills=${runtime.kills} seed=${SEED}`,
    );
    expect(runtime.kills).toBeGreaterThanOrEqual(Math.min(KILLS, 3));
    expect({ lost: verdict.lost, settledTwice: verdict.settledTwice }).toEqual({ lost: 0, settledTwice: 0 });
    expect(verdict.settled).toBe(verdict.enqueued);
    expect(verdict.problems).toEqual([]);
    expect(leaks).toEqual([]);
    expect(bucket.starts).toBeGreaterThan(0);
    expect(bucket.overflows).toEqual([]);
  } finally {
    shared.stopping = true;
    await runtime.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
});
