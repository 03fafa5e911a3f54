/**
 * Typed kinds' cost on enqueue (docs/benchmarks.md "Typed kinds"): a lane that declares one kind with
 * a zod schema of 10 fields, enqueued to with the same payload under that kind and under a kind it
 * does not declare (which pays one map lookup). Batches of 1,000 jobs of each, alternating which goes
 * first, and single enqueues through the RPC client in alternating chunks: the medians, their ratio,
 * and the µs a job the check adds. Never deployed.
 */
import { z } from "zod";
import { createLaneClient } from "../src/client/rpc.js";
import { defineLane } from "../src/durable/lane.js";
import { int, type Params } from "./workload-helpers.js";

export const TYPED_KIND = "bench.typed";
export const UNTYPED_KIND = "bench.untyped";

/** Ten fields of the common types: strings, integers, a boolean, a number, an enum, an array, an optional. */
const tenFields = z.object({
  a: z.string(), b: z.string().max(100), c: z.int(), d: z.int().min(0), e: z.boolean(),
  f: z.number(), g: z.string().optional(), h: z.enum(["x", "y", "z"]), i: z.array(z.int()), j: z.string().min(1),
});

/** KINDS_LANE: no executors (nothing runs but the enqueues), one declared kind. */
export class KindsBenchLane extends defineLane({ kinds: { [TYPED_KIND]: { payload: tenFields } }, log: false }) {}

interface KindsEnv {
  KINDS_LANE: DurableObjectNamespace<KindsBenchLane>;
}


const BATCH = 1000;
const payload = (n: number) => ({ a: "tenant-7", b: "email", c: n, d: n % 100, e: n % 2 === 0, f: n / 3, g: "note", h: "y", i: [1, 2, 3], j: `job-${n}` });

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/** ms of `task` (Date.now() moves at I/O in workerd: every task here awaits RPCs). */
async function ms(task: () => Promise<unknown>): Promise<number> {
  const t0 = Date.now();
  await task();
  return Date.now() - t0;
}

export const kindWorkloads: Record<string, (env: never, params: Params) => Promise<object>> = {
  async kinds(env: KindsEnv, params) {
    const rounds = int(params, "rounds", 20);
    const singles = int(params, "singles", 2000);
    const run = String(params.run);
    let n = 0;
    const jobs = (kind: string) => Array.from({ length: BATCH }, () => ({ kind, payload: payload(n++) }));
    const batchLane = { typed: createLaneClient(env.KINDS_LANE).lane(`kinds-batch-typed-${run}`), untyped: createLaneClient(env.KINDS_LANE).lane(`kinds-batch-untyped-${run}`) };
    const singleLane = { typed: createLaneClient(env.KINDS_LANE, { groupCommit: false }).lane(`kinds-single-typed-${run}`), untyped: createLaneClient(env.KINDS_LANE, { groupCommit: false }).lane(`kinds-single-untyped-${run}`) };
    for (const lane of [...Object.values(batchLane), ...Object.values(singleLane)]) await lane.enqueue({ kind: UNTYPED_KIND, payload: payload(n++) }); // registered, migrated
    const typed: number[] = [];
    const untyped: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const steps = [async () => typed.push(await ms(() => batchLane.typed.enqueueBatch({ jobs: jobs(TYPED_KIND) }))), async () => untyped.push(await ms(() => batchLane.untyped.enqueueBatch({ jobs: jobs(UNTYPED_KIND) })))];
      if (round % 2 === 1) steps.reverse();
      for (const step of steps) await step();
    }
    // Single enqueues, one after another, in alternating chunks of 100: each kind's total over its count.
    const chunk = 100;
    let singleTyped = 0;
    let singleUntyped = 0;
    for (let done = 0; done < singles; done += chunk) {
      const one = (kind: string) => ms(async () => { for (let i = 0; i < chunk; i++) await (kind === TYPED_KIND ? singleLane.typed : singleLane.untyped).enqueue({ kind, payload: payload(n++) }); });
      if ((done / chunk) % 2 === 0) { singleTyped += await one(TYPED_KIND); singleUntyped += await one(UNTYPED_KIND); }
      else { singleUntyped += await one(UNTYPED_KIND); singleTyped += await one(TYPED_KIND); }
    }
    const typedMs = median(typed);
    const untypedMs = median(untyped);
    return {
      rounds, batchJobs: BATCH, fields: 10,
      batchTypedMs: typedMs, batchUntypedMs: untypedMs, batchRatio: typedMs / untypedMs,
      /** What the check adds to a job of a batch, µs: the medians' difference over the batch's jobs. */
      batchUsPerJobAbove: ((typedMs - untypedMs) * 1000) / BATCH,
      singles, singleTypedUs: (singleTyped * 1000) / singles, singleUntypedUs: (singleUntyped * 1000) / singles,
      singleUsPerJobAbove: ((singleTyped - singleUntyped) * 1000) / singles,
      batchTypedRounds: typed, batchUntypedRounds: untyped,
    };
  },
};
