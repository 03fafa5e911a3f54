/**
 * Batch executors against single-job executors (docs/benchmarks.md "Batches"): the same drain of a
 * backlog of `n` no-op jobs (10,000 in a full run, enqueued while the lane is paused, timed from its
 * resume) at the same concurrency (100), once on the bench's LANE with
 * its single-job no-op executor, once on a lane whose kind has a batch executor of size 100 (waitMs 0:
 * a drain always has 100 due). Rounds alternate which goes first; each figure is the median round's.
 * Statements and commits (explicit transactions) a job come from each lane's own counters. Never deployed.
 */
import { createLaneClient } from "../src/client/rpc.js";
import { batchExecutor } from "../src/durable/attempts/batch-executor.js";
import { BenchLane, NOOP_KIND } from "./lanes.js";
import { int, perOp, untilSettled, type Params } from "./workload-helpers.js";

export const BATCH_KIND = "bench.batch";
export const BENCH_BATCH_SIZE = 100;

/** BATCH_LANE: the bench's LANE class, its one executor a batch executor of size 100 that completes every job. */
export class BatchBenchLane extends BenchLane {
  static override options = {
    ...BenchLane.options,
    executors: { [BATCH_KIND]: batchExecutor({ size: BENCH_BATCH_SIZE, waitMs: 0, run: (jobs) => jobs.map(() => ({ ok: true as const })) }) },
  };
}

interface BatchesEnv {
  LANE: DurableObjectNamespace<BenchLane>;
  BATCH_LANE: DurableObjectNamespace<BatchBenchLane>;
}

const ENQUEUE_BATCH = 1000;

/** One drain of a backlog of `n` jobs of `kind` on lane `name` of `namespace`: ms from the resume to the last settled, and its per-job cost. */
async function drain(namespace: DurableObjectNamespace<BenchLane>, name: string, kind: string, n: number, concurrency: number) {
  const client = createLaneClient(namespace).lane(name);
  const stub = namespace.getByName(name);
  // The backlog is enqueued while the lane is paused: the figure is the drain's alone, not the inserts'.
  await client.configure({ concurrency, paused: true });
  for (let from = 0; from < n; from += ENQUEUE_BATCH) {
    await client.enqueueBatch({ jobs: Array.from({ length: Math.min(ENQUEUE_BATCH, n - from) }, (_, k) => ({ kind, payload: { i: from + k } })) });
  }
  await stub.benchCounters();
  const t0 = Date.now();
  await client.configure({ paused: false });
  const done = await untilSettled([stub], n);
  const ms = done.at - t0;
  const completed = done.counts.reduce((sum, c) => sum + c.completed, 0);
  return { ms, jobsPerSec: ms > 0 ? (n * 1000) / ms : null, completed, perJob: perOp(await stub.benchCounters(), n) };
}

type Drained = Awaited<ReturnType<typeof drain>>;
const medianOf = (runs: Drained[]) => [...runs].sort((a, b) => (a.jobsPerSec ?? 0) - (b.jobsPerSec ?? 0))[Math.floor(runs.length / 2)]!;

export const batchWorkloads: Record<string, (env: never, params: Params) => Promise<object>> = {
  async batches(env: BatchesEnv, params) {
    const n = int(params, "n", 10_000);
    const rounds = int(params, "rounds", 3);
    const concurrency = int(params, "concurrency", BENCH_BATCH_SIZE);
    const run = String(params.run);
    const single: Drained[] = [];
    const batched: Drained[] = [];
    for (let round = 0; round < rounds; round++) {
      const steps = [
        async () => single.push(await drain(env.LANE, `batches-single-${round}-${run}`, NOOP_KIND, n, concurrency)),
        async () => batched.push(await drain(env.BATCH_LANE as unknown as DurableObjectNamespace<BenchLane>, `batches-batch-${round}-${run}`, BATCH_KIND, n, concurrency)),
      ];
      if (round % 2 === 1) steps.reverse();
      for (const step of steps) await step();
    }
    const s = medianOf(single);
    const b = medianOf(batched);
    return { n, rounds, concurrency, size: BENCH_BATCH_SIZE, single: s, batch: b, ratio: s.jobsPerSec && b.jobsPerSec ? b.jobsPerSec / s.jobsPerSec : null };
  },
};
