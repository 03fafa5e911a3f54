/**
 * Batch executors' target (bench/batches.ts measures it in the worker): a drain of 10,000 jobs by a
 * batch executor of size 100 runs at least 3× the jobs/s of the same drain by single-job executors;
 * statements and commits a job of both are reported beside it.
 * Node runs this file by type stripping: no enums or parameter properties.
 */
import type { Target } from "./report.js";

/** The least a batch drain's jobs/s may be against the single-job drain's. */
export const BATCHES_RATIO_GOAL = 3;

const fmt = (v: unknown) => (typeof v === "number" ? String(Math.round(v * 100) / 100) : "?");

export function batchesTargets(results: Record<string, any>): Target[] {
  const r = results.batches;
  if (!r || r.error) return [];
  const cost = (d: any) => `${fmt(d?.jobsPerSec)} jobs/s, ${fmt(d?.perJob?.statements)} statements and ${fmt(d?.perJob?.transactions)} commits a job`;
  return [
    {
      name: `batch executor (size ${fmt(r.size)}) drain / single-job executor drain, ${fmt(r.n)} jobs at concurrency ${fmt(r.concurrency)}`, measured: r.ratio ?? null, target: BATCHES_RATIO_GOAL, unit: "ratio",
      met: typeof r.ratio === "number" && r.ratio >= BATCHES_RATIO_GOAL, comparison: ">=",
      basis: `median of ${fmt(r.rounds)} rounds each: batch ${cost(r.batch)}; single ${cost(r.single)}`,
    },
  ];
}
