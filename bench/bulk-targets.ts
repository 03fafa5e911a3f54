/**
 * The bulk requeue's targets (bench/bulk.ts measures it in the worker): the longest alarm run while
 * it requeues every job, each job requeued exactly once, and the enqueue's and claim's p99 meanwhile
 * (reported, beside the same traffic's p99 without it).
 * Node runs this file by type stripping: no enums or parameter properties.
 */
import type { Target } from "./report.js";

/** The goal of the longest alarm run during a bulk action (one chunk of at most 500 jobs). */
export const BULK_ALARM_GOAL_MS = 50;

const fmt = (v: unknown) => (typeof v === "number" ? String(Math.round(v * 100) / 100) : "?");

export function bulkTargets(results: Record<string, any>): Target[] {
  const b = results.bulk;
  if (!b || b.error) return [];
  const size = `${b.n} failed jobs`;
  const during = (what: "enqueue" | "claim") => `p50 ${fmt(b.duringBulk?.[what]?.p50)}, max ${fmt(b.duringBulk?.[what]?.max)} ms over ${b.duringBulk?.rounds ?? "?"} calls; without a bulk action p50 ${fmt(b.baseline?.[what]?.p50)} / p99 ${fmt(b.baseline?.[what]?.p99)} ms`;
  return [
    {
      name: `bulk requeue of ${size}: the longest alarm run`, measured: b.alarms?.longestMs ?? null, target: BULK_ALARM_GOAL_MS, unit: "ms",
      met: typeof b.alarms?.longestMs === "number" && b.alarms.longestMs <= BULK_ALARM_GOAL_MS, comparison: "<=",
      basis: `${b.alarms?.count ?? "?"} alarms (p50 ${fmt(b.alarms?.p50)}, p99 ${fmt(b.alarms?.p99)} ms; the five longest ${Array.isArray(b.alarms?.longest) ? b.alarms.longest.map(fmt).join(", ") : "?"} ms), ${fmt(b.wallMs)} ms in all (${fmt(b.jobsPerSec)} jobs/s)`,
    },
    {
      name: `bulk requeue of ${size}: jobs requeued exactly once`, measured: b.requeuedOnce ? 1 : 0, target: 1, unit: "bool", met: b.requeuedOnce === true, comparison: ">=",
      basis: `done ${b.bulk?.done ?? "?"}, skipped ${b.bulk?.skipped ?? "?"}, jobs back ${b.back ?? "?"}`,
    },
    { name: `bulk requeue of ${size}: enqueue p99 during it`, measured: b.duringBulk?.enqueue?.p99 ?? null, target: 0, unit: "ms", met: true, comparison: ">=", reported: true, basis: during("enqueue") },
    { name: `bulk requeue of ${size}: claim p99 during it`, measured: b.duringBulk?.claim?.p99 ?? null, target: 0, unit: "ms", met: true, comparison: ">=", reported: true, basis: during("claim") },
  ];
}
