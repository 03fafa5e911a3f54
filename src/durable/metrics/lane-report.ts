/**
 * What a lane's metrics are read from: its kept counts and stats (store/counts.ts), the earliest
 * queued runAt (on `jobs_run_at`) and the rows of `job_histograms` (kept by the triggers of migration
 * 16). A few rows at any number of jobs.
 */
import type { LaneCounts } from "../store/counts.js";
import { EARLIEST_QUEUED_RUN_AT_SQL } from "../store/counts.js";
import { HISTOGRAM_BOUNDS_MS, type Histogram, type LaneReport } from "./exposition.js";

const HISTOGRAMS_SQL = `SELECT name, outcome, count, sum_ms, ${HISTOGRAM_BOUNDS_MS.map((_, i) => `b${i}`).join(", ")}
  FROM job_histograms ORDER BY name DESC, outcome`;

type HistogramRow = { name: "wait" | "run"; outcome: string; count: number; sum_ms: number } & Record<`b${number}`, number>;

/** Reads the lane's report: one row of counts, one of stats, one index probe, a handful of histogram rows. */
export function readLaneReport(sql: SqlStorage, counts: LaneCounts): LaneReport {
  const histograms: Histogram[] = [];
  for (const row of sql.exec<HistogramRow>(HISTOGRAMS_SQL)) {
    histograms.push({ name: row.name, outcome: row.outcome, count: row.count, sumMs: row.sum_ms, buckets: HISTOGRAM_BOUNDS_MS.map((_, i) => row[`b${i}`] ?? 0) });
  }
  const earliestRunAt = sql.exec<{ run_at: number }>(EARLIEST_QUEUED_RUN_AT_SQL).toArray()[0]?.run_at ?? null;
  return { counts: counts.counts(), stats: counts.stats(), earliestRunAt, histograms };
}
