/**
 * Group commit's share (docs/benchmarks.md "Group commit"): what one more caller adds to a group's
 * call, against what one more job adds to a batch. In each round, alternating which goes first: one
 * group of 1,000 callers at once, ten groups of 100 callers one after another (the same 1,000 jobs),
 * and one 1,000-job batch. Ten groups pay the call's fixed cost ten times, one group once, so
 *
 *   fixed = (ten groups − one group) / 9,   marginal = (one group − fixed) / 1,000   µs a job,
 *
 * and a batch's µs a job is its call over its 1,000 jobs. Each caller still awaits its own enqueue and
 * gets its own job back; the batch answers ids and statuses.
 */
import { createLaneClient, groupCommitCounters } from "../src/client/rpc.js";
import { PULL_KIND } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { int, type Params } from "./workload-helpers.js";


const GROUP = 1000;
const SMALL = 100;

function median(values: number[]): number | null {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? null : sorted[Math.floor(sorted.length / 2)]!;
}

/** ms of `task` (Date.now() moves at I/O in workerd: every task here awaits RPCs). */
async function ms(task: () => Promise<unknown>): Promise<number> {
  const t0 = Date.now();
  await task();
  return Date.now() - t0;
}

export const groupShareWorkloads: Record<string, (env: BenchEnv, params: Params) => Promise<object>> = {
  async groupShare(env, params) {
    const rounds = int(params, "rounds", 10);
    const run = String(params.run);
    const grouped = createLaneClient(env.PLAIN_LANE).lane(`group-share-${run}`);
    const batched = createLaneClient(env.PLAIN_LANE).lane(`group-share-batch-${run}`);
    await grouped.enqueue({ kind: PULL_KIND, payload: { warm: true } }); // the first enqueue registers the lane
    await batched.enqueueBatch({ jobs: [{ kind: PULL_KIND, payload: { warm: true } }] });
    let i = 0;
    // Every caller's enqueue begins in the same turn: the group's leader takes them all (client/group-commit.ts).
    const callers = (n: number) => Promise.all(Array.from({ length: n }, () => grouped.enqueue({ kind: PULL_KIND, payload: { i: i++ } })));
    const before = groupCommitCounters(env.PLAIN_LANE);
    const one: number[] = [];
    const ten: number[] = [];
    const batch: number[] = [];
    const steps = [
      async () => one.push(await ms(() => callers(GROUP))),
      async () => ten.push(await ms(async () => { for (let g = 0; g < GROUP / SMALL; g++) await callers(SMALL); })),
      async () => batch.push(await ms(() => batched.enqueueBatch({ jobs: Array.from({ length: GROUP }, () => ({ kind: PULL_KIND, payload: { i: i++ } })) }))),
    ];
    for (let round = 0; round < rounds; round++) for (let s = 0; s < steps.length; s++) await steps[(s + round) % steps.length]!();
    const after = groupCommitCounters(env.PLAIN_LANE);
    // Each round's own figures, then their medians: a burst of load skews one round, not the figure.
    const perRound = one.map((oneMs, r) => {
      const fixedMs = (ten[r]! - oneMs) / (GROUP / SMALL - 1);
      return { oneMs, tenMs: ten[r]!, batchMs: batch[r]!, fixedUs: fixedMs * 1000, marginalUs: ((oneMs - fixedMs) * 1000) / GROUP, batchUsPerJob: (batch[r]! * 1000) / GROUP };
    });
    const marginalUs = median(perRound.map((r) => r.marginalUs));
    const batchUsPerJob = median(perRound.map((r) => r.batchUsPerJob));
    const calls = after.calls - before.calls;
    const items = after.items - before.items;
    return {
      rounds,
      marginalUs,
      batchUsPerJob,
      ratio: marginalUs !== null && batchUsPerJob ? marginalUs / batchUsPerJob : null,
      ratios: perRound.map((r) => (r.batchUsPerJob ? r.marginalUs / r.batchUsPerJob : null)),
      fixedUs: median(perRound.map((r) => r.fixedUs)),
      groupOfThousandUsPerJob: median(perRound.map((r) => (r.oneMs * 1000) / GROUP)),
      perRound,
      // A round's groups: one of 1,000 and ten of 100 (more calls: a group split by the client's limits).
      groups: { calls, items, expectedCalls: rounds * (1 + GROUP / SMALL), largest: after.largest },
    };
  },
};
