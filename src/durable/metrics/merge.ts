/**
 * A sharded lane's metrics as one lane's (docs/concepts.md "Sharded lanes"): its shards' reports
 * merged into one report. The one merge of both readers of a sharded lane's metrics: the lane's own
 * route (`GET /v1/lanes/{lane}/metrics`, which fans out to every shard) and the registry (`GET
 * /v1/metrics`, from the shards' latest reports), so that both render the same lane from the same
 * reports. Pure: the RPC client imports it too.
 */
import type { Counts, LaneStats } from "../../shared/job.js";
import { exposition, laneFragments, type Histogram, type LaneReport } from "./exposition.js";

/** Adds each number of `from` into `into`, key by key (a key `into` lacks starts at 0). */
function addInto<T extends Counts | LaneStats>(into: T, from: T): void {
  const sums = into as Record<string, number>;
  for (const [key, n] of Object.entries(from)) sums[key] = (sums[key] ?? 0) + n;
}

/** The earlier of two instants, either possibly none (null). */
function earliest(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/**
 * The lane's report from its shards' (at least one): counts, stats and every histogram's buckets,
 * sum and count summed (a histogram one shard lacks counts as empty there); the earliest queued runAt
 * of any shard. Keys in the first report's order; histograms in a lane's own order (lane-report.ts:
 * `wait` first, then `run` by outcome).
 */
export function mergeReports(reports: readonly LaneReport[]): LaneReport {
  const [first, ...rest] = reports;
  if (first === undefined) throw new Error("mergeReports: no report");
  if (rest.length === 0) return first;
  const counts = { ...first.counts };
  const stats = { ...first.stats };
  let earliestRunAt = first.earliestRunAt;
  const histograms = new Map<string, Histogram>();
  for (const report of reports) {
    if (report !== first) {
      addInto(counts, report.counts);
      addInto(stats, report.stats);
      earliestRunAt = earliest(earliestRunAt, report.earliestRunAt);
    }
    for (const h of report.histograms) {
      const key = `${h.name}\n${h.outcome}`;
      const into = histograms.get(key);
      if (into === undefined) {
        histograms.set(key, { ...h, buckets: [...h.buckets] });
        continue;
      }
      into.count += h.count;
      into.sumMs += h.sumMs;
      for (let i = 0; i < into.buckets.length; i++) into.buckets[i]! += h.buckets[i] ?? 0;
    }
  }
  const ordered = [...histograms.values()].sort((a, b) => (a.name !== b.name ? (a.name === "wait" ? -1 : 1) : a.outcome < b.outcome ? -1 : a.outcome > b.outcome ? 1 : 0));
  return { counts, stats, earliestRunAt, histograms: ordered };
}

/** One lane's exposition at `nowMs` from its shards' reports (docs/api.md "Metrics"). */
export function laneExposition(lane: string, reports: readonly LaneReport[], nowMs: number): string {
  const report = mergeReports(reports);
  return exposition([{ lane, fragments: laneFragments(lane, report), earliestRunAt: report.earliestRunAt }], nowMs);
}
