/**
 * What a lane's metrics are read from: its kept counts and stats (store/counts.ts) and its waitpoints'
 * stats (kept in the same row: waitpoints/waitpoint-statements.ts), the earliest
 * queued runAt (on `jobs_run_at`) and the rows of `job_histograms` (migration 16, kept by the store's
 * upkeep, store/upkeep.ts: a row per histogram, outcome and bucket). A few dozen rows at any number of jobs.
 */
import type { LaneCounts } from "../store/counts.js";
import { EARLIEST_QUEUED_RUN_AT_SQL } from "../store/counts-statements.js";
import { HISTOGRAM_BOUNDS_MS, type Histogram, type LaneReport } from "./exposition.js";
import { COUNTS_SQL as WAITPOINT_COUNTS_SQL } from "../waitpoints/waitpoint-statements.js";
import type { WaitpointStats } from "../../shared/job.js";
import { HISTOGRAMS_SQL } from "./report-statements.js";

type HistogramRow = { name: "wait" | "run"; outcome: string; bucket: number; count: number; sum_ms: number };

/** Reads the lane's report: one row of counts, one of stats, one of waitpoints' stats, one index probe, a few dozen histogram rows. */
export function readLaneReport(sql: SqlStorage, counts: LaneCounts): LaneReport {
  const histograms: Histogram[] = [];
  let h: Histogram | undefined;
  for (const row of sql.exec<HistogramRow>(HISTOGRAMS_SQL)) {
    if (h?.name !== row.name || h.outcome !== row.outcome) {
      h = { name: row.name, outcome: row.outcome, count: 0, sumMs: 0, buckets: HISTOGRAM_BOUNDS_MS.map(() => 0) };
      histograms.push(h);
    }
    // A row counts its bucket's observations alone: they are at or under its bound and every later one.
    h.count += row.count;
    h.sumMs += row.sum_ms;
    for (let i = row.bucket; i < h.buckets.length; i++) h.buckets[i]! += row.count;
  }
  const earliestRunAt = sql.exec<{ run_at: number }>(EARLIEST_QUEUED_RUN_AT_SQL).toArray()[0]?.run_at ?? null;
  const { waitpointsCompleted, waitpointsTimedOut } = sql.exec<WaitpointStats>(WAITPOINT_COUNTS_SQL).one();
  // The stats as the lane's info says them: the jobs', then the waitpoints'.
  return { counts: counts.counts(), stats: { ...counts.stats(), waitpointsCompleted, waitpointsTimedOut }, earliestRunAt, histograms };
}
