/**
 * The sharded lanes' targets (bench/shards.ts's workloads, run by run.ts): workerd's CPU per job on a
 * 4-shard lane against one shard, a claim with work in one of 16 shards, the info of 64 shards.
 */
import type { Target } from "./report.js";

type Results = Record<string, any>;

/** µs of workerd CPU per job of a workload that the process watch measured alone. */
function cpuPerJobUs(results: Results, name: string, n: number): number | null {
  const r = results[name];
  const cores = r?.process?.cpuCores;
  return typeof cores === "number" && typeof r?.watchedMs === "number" ? Math.round(((cores * r.watchedMs) / n) * 1000 * 10) / 10 : null;
}

/** `shardN`: the jobs of each grouped enqueue and drain; `soloN`: of each enqueue with group commit off. */
export function shardTargets(results: Results, shardN: number, soloN: number): Target[] {
  const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : Math.round((a / b) * 100) / 100);
  const cost = (phase: string) => ({ one: cpuPerJobUs(results, `${phase}1`, shardN), four: cpuPerJobUs(results, `${phase}4`, shardN) });
  const target = (name: string, measured: number | null, goal: number, basis: string): Target => ({ name, measured, target: goal, unit: "x", met: measured !== null && measured <= goal, comparison: "<=", basis });
  const reported = (name: string, measured: number | null, basis: string): Target => ({ name, measured, target: 0, unit: "x", met: true, comparison: ">=", reported: true, basis });
  const enqueue = cost("shardEnqueue");
  const solo = { one: cpuPerJobUs(results, "shardEnqueueSolo1", soloN), four: cpuPerJobUs(results, "shardEnqueueSolo4", soloN) };
  const drain = cost("shardDrain");
  const c1 = results.shardClaim1?.medianMs ?? null;
  const c16 = results.shardClaim16?.medianMs ?? null;
  const info = results.shardInfo;
  return [
    target("sharded lane: CPU per job, 4 shards / 1 shard, 16-producer single enqueue, one call each (group commit off: routing's own cost)", ratio(solo.four, solo.one), 1.2, `${solo.one ?? "?"} / ${solo.four ?? "?"} us of workerd CPU per job (1 / 4 shards), ${soloN} jobs`),
    // Reported, no longer a target: with group commit on, 16 producers' groups split four ways hold a
    // quarter as many jobs, so on one local thread each job carries up to four times a call's share.
    reported("sharded lane: CPU per job, 4 shards / 1 shard, 16-producer single enqueue (group commit on)", ratio(enqueue.four, enqueue.one), `${enqueue.one ?? "?"} / ${enqueue.four ?? "?"} us of workerd CPU per job (1 / 4 shards), ${shardN} jobs`),
    target("sharded lane: CPU per job, 4 shards / 1 shard, drain (4 consumers, claims of 100, batch acks)", ratio(drain.four, drain.one), 1.2, `${drain.one ?? "?"} / ${drain.four ?? "?"} us of workerd CPU per job (1 / 4 shards), ${shardN} jobs`),
    target("sharded lane: a claim with work in 1 of 16 shards / a 1-shard claim, median", ratio(c16, c1), 2, `${c1?.toFixed(2) ?? "?"} / ${c16?.toFixed(2) ?? "?"} ms median (1 / 16 shards)`),
    { name: "sharded lane: GET info of a 64-shard lane, median", measured: info?.sixtyFour?.medianMs ?? null, target: 0, unit: "ms", met: true, comparison: ">=", reported: true, basis: `${info?.sixtyFour?.objectCallsPerRead ?? "?"} object calls in ${info?.sixtyFour?.rounds ?? "?"} rounds (shard 0, then the other 63 at once); 1 shard: ${info?.one?.medianMs?.toFixed(2) ?? "?"} ms` },
  ];
}
