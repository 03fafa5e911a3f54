/**
 * Typed kinds' targets (bench/kinds.ts measures them in the worker): a batch of 1,000 jobs of a kind
 * declared with a 10-field zod schema costs at most 1.2× the same batch of an undeclared kind; the µs
 * a job the check adds is reported beside it.
 * Node runs this file by type stripping: no enums or parameter properties.
 */
import type { Target } from "./report.js";

/** The most a batch of declared jobs may cost against the same batch undeclared. */
export const KINDS_BATCH_RATIO_GOAL = 1.2;

const fmt = (v: unknown) => (typeof v === "number" ? String(Math.round(v * 100) / 100) : "?");

export function kindsTargets(results: Record<string, any>): Target[] {
  const k = results.kinds;
  if (!k || k.error) return [];
  return [
    {
      name: "typed kinds: a 1,000-job batch of a declared kind (10-field zod schema) / undeclared", measured: k.batchRatio ?? null, target: KINDS_BATCH_RATIO_GOAL, unit: "x",
      met: typeof k.batchRatio === "number" && k.batchRatio <= KINDS_BATCH_RATIO_GOAL, comparison: "<=",
      basis: `medians of ${fmt(k.rounds)} rounds: ${fmt(k.batchTypedMs)} ms declared, ${fmt(k.batchUntypedMs)} ms undeclared a batch`,
    },
    {
      name: "typed kinds: the payload check on enqueue, µs a job above an undeclared kind (batch)", measured: k.batchUsPerJobAbove ?? null, target: 0, unit: "µs", met: true, comparison: "<=", reported: true,
      basis: `single enqueues (RPC client, no group commit): ${fmt(k.singleTypedUs)} µs declared, ${fmt(k.singleUntypedUs)} µs undeclared (${fmt(k.singleUsPerJobAbove)} µs above)`,
    },
  ];
}
