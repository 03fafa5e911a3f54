/**
 * A lane's metrics report (what it sends the registry and renders for its own route,
 * durable/metrics/exposition.ts), and a sharded lane's as one lane's (docs/concepts.md "Sharded
 * lanes"): its shards' reports merged into one report. The one merge of both readers of a sharded
 * lane's metrics: the lane's own route (`GET /v1/lanes/{lane}/metrics`, which fans out to every
 * shard) and the registry (`GET /v1/metrics`, from the shards' latest reports), so that both render
 * the same lane from the same reports.
 */
import type { Counts, LaneStats, WaitpointStats } from "./job.js";

/** Stats a report of an older lane may lack. */
type LaterStats = WaitpointStats & Pick<LaneStats, "deadLettered">;

/** One histogram of a lane: its cumulative bucket counts (one per bound), sum and count. */
export interface Histogram {
  /** `wait`: due → started; `run`: started → the attempt's outcome. */
  name: "wait" | "run";
  /** The attempt's outcome (run); "" for wait. */
  outcome: string;
  count: number;
  sumMs: number;
  /** Cumulative: observations at or under each bound (durable/metrics/exposition.ts `HISTOGRAM_BOUNDS_MS`). */
  buckets: number[];
}

/** What a lane reports to the registry, and renders for its own metrics. */
export interface LaneReport {
  counts: Counts;
  /**
   * The lane's stats, as its info says them. The waitpoints' are absent from a report stored by the
   * registry before lanes counted them: `mergeReports` reads them as 0.
   */
  stats: Omit<LaneStats, "deadLettered"> & Partial<LaterStats>;
  /** The earliest runAt of a queued job, due or not (null: none): the oldest due age follows from it and the clock. */
  earliestRunAt: number | null;
  histograms: Histogram[];
  /**
   * The lane's shard count as the reporting object holds it (absent: 1). The registry sums a lane's
   * shards by it (durable/registry.ts); rendering ignores it.
   */
  shards?: number;
}

/** Adds each number of `from` into `into`, key by key (a key `into` lacks starts at 0). */
function addInto<T extends Counts | LaneReport["stats"]>(into: T, from: T): void {
  const sums = into as Record<string, number>;
  for (const [key, n] of Object.entries(from)) sums[key] = (sums[key] ?? 0) + n;
}

/** The earlier of two instants, either possibly none (null). */
function earliest(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/** Stats a report of an older lane lacks, each read as 0 (key order: the lane's info's). */
const LATER_STATS: LaterStats = { deadLettered: 0, waitpointsCompleted: 0, waitpointsTimedOut: 0 };

/** A report's stats with every later one (`LATER_STATS`) it lacks at 0. */
function fullStats(stats: LaneReport["stats"]): LaneStats & WaitpointStats {
  const full = { ...stats } as LaneStats & WaitpointStats;
  for (const key of Object.keys(LATER_STATS) as (keyof LaterStats)[]) full[key] ??= 0;
  return full;
}

/**
 * The lane's report from its shards' (at least one): counts, stats and every histogram's buckets,
 * sum and count summed (a histogram one shard lacks counts as empty there, a stat an older report
 * lacks as 0: `LATER_STATS`); the earliest queued runAt
 * of any shard. Keys in the first report's order; histograms in a lane's own order (lane-report.ts:
 * `wait` first, then `run` by outcome).
 */
export function mergeReports(reports: readonly LaneReport[]): LaneReport {
  const [first, ...rest] = reports;
  if (first === undefined) throw new Error("mergeReports: no report");
  if (rest.length === 0) return { ...first, stats: fullStats(first.stats) };
  const counts = { ...first.counts };
  const stats = fullStats(first.stats);
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
