/**
 * The many-tenants targets (bench/tenants.ts measures them in the worker): every cold tenant's job
 * starts before the hot tenant's 101st, and a claim among 10,001 queues costs at most 1.2× a claim in
 * a lane with one queue.
 * Node runs this file by type stripping: no enums or parameter properties.
 */
import type { Target } from "./report.js";

/** The most a claim among many tenants' queues may cost against a lane with one queue. */
export const TENANT_CLAIM_RATIO_GOAL = 1.2;

const fmt = (v: unknown) => (typeof v === "number" ? String(Math.round(v * 100) / 100) : "?");

export function tenantsTargets(results: Record<string, any>): Target[] {
  const t = results.tenants;
  if (!t || t.error) return [];
  const shape = `${fmt(t.hot)} hot jobs on one queue, ${fmt(t.cold)} tenants of one job, round-robin, queueDefaults concurrency 1`;
  return [
    {
      name: "many tenants: the last cold tenant's start, before the hot tenant's 101st", measured: t.lastColdStartPosition ?? null, target: (t.hot101stPosition ?? 1) - 1, unit: "position",
      met: t.everyColdBeforeHot101 === true, comparison: "<=",
      basis: `${shape}; ${fmt(t.coldStarted)} cold started; the hot tenant's 101st start at ${fmt(t.hot101stPosition)}; set up in ${fmt(t.setupMs)} ms, walked in ${fmt(t.walkMs)} ms`,
    },
    {
      name: "many tenants: a claim's cost / the same claim in a lane with one queue, median of rounds", measured: t.claimCostRatio ?? null, target: TENANT_CLAIM_RATIO_GOAL, unit: "x",
      met: typeof t.claimCostRatio === "number" && t.claimCostRatio <= TENANT_CLAIM_RATIO_GOAL, comparison: "<=",
      basis: `claims of one: ${fmt(t.claimOfOneUs)} µs among ${fmt(t.cold + 1)} queues, ${fmt(t.oneQueueClaimOfOneUs)} µs with one queue (means); rounds ${Array.isArray(t.claimCostRatios) ? t.claimCostRatios.map(fmt).join(" / ") : "?"}; claims of 100: ${fmt(t.claimOf100PerJobUs)} µs a job`,
    },
  ];
}
