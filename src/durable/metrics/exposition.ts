/**
 * The Prometheus text exposition (format 0.0.4) of lanes' metrics (docs/api.md "Metrics"): the same
 * families for one lane (`GET /v1/lanes/{lane}/metrics`, read live) and for every lane (`GET
 * /v1/metrics`, from the reports the registry keeps). A lane's lines are rendered once per report
 * into one fragment per family (`laneFragments`), so that a scrape of every lane only joins stored
 * text and writes each lane's oldest due age, which moves with the clock.
 */
import type { Counts, LaneStats } from "../../shared/job.js";
import { mergeReports, type Histogram, type LaneReport } from "../../shared/metrics-report.js";

export type { Histogram, LaneReport };

/** The content type of the exposition. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * The upper bounds (ms) of the histograms' buckets: the `bucket` numbers of `job_histograms` (the
 * lane's migration 16, which owns them). Rendered in seconds, then `+Inf` (the count).
 */
export const HISTOGRAM_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 900000, 3600000] as const;

/** A lane's rendered lines, one fragment per family (each line ends in a newline); the oldest due age apart. */
export interface LaneFragments {
  jobs: string;
  totals: string;
  wait: string;
  run: string;
}

/** The families, in exposition order: name, type, help. */
const FAMILIES = {
  jobs: ["switchyard_jobs", "gauge", "Jobs stored in the lane now, by state (settled jobs by outcome, until retention or a sweep deletes them)."],
  totals: ["switchyard_jobs_total", "counter", "The lane's lifetime counts of events of its jobs and waitpoints (the lane's stats)."],
  oldest: ["switchyard_oldest_due_age_seconds", "gauge", "How long the longest-waiting due queued job has been due (0: none is due)."],
  wait: ["switchyard_job_wait_seconds", "histogram", "From when a job was due (its runAt, or when it was last queued, if later) to its attempt's start."],
  run: ["switchyard_job_run_seconds", "histogram", "From an attempt's start to its outcome, by outcome (a job's outcome, or retried, recovered, released, snoozed)."],
} as const;

/** The families' keys in exposition order. */
export type Family = keyof typeof FAMILIES;
export const FAMILY_ORDER: readonly Family[] = ["jobs", "totals", "oldest", "wait", "run"];

/** A family's HELP and TYPE lines. */
export function familyHeader(key: Family): string {
  const [name, type, help] = FAMILIES[key];
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
}

/** A label value escaped as the text format wants it: backslash, double quote and newline. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A sample's value: integers as they are, others with at most millisecond precision (the clocks' grain). */
function value(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Math.round(n * 1000) / 1000);
}

const BOUNDS_SECONDS = HISTOGRAM_BOUNDS_MS.map((ms) => value(ms / 1000));

/** Renders a lane's report as its fragments (docs/api.md "Metrics"). */
export function laneFragments(lane: string, report: LaneReport): LaneFragments {
  const l = `lane="${escapeLabelValue(lane)}"`;
  let jobs = "";
  for (const [state, n] of Object.entries(report.counts)) jobs += `switchyard_jobs{${l},state="${state}"} ${n}\n`;
  let totals = "";
  for (const [event, n] of Object.entries(report.stats)) totals += `switchyard_jobs_total{${l},event="${event}"} ${n}\n`;
  let wait = "";
  let run = "";
  for (const h of report.histograms) {
    const name = h.name === "wait" ? FAMILIES.wait[0] : FAMILIES.run[0];
    const labels = h.name === "wait" ? l : `${l},outcome="${escapeLabelValue(h.outcome)}"`;
    let lines = "";
    for (let i = 0; i < BOUNDS_SECONDS.length; i++) lines += `${name}_bucket{${labels},le="${BOUNDS_SECONDS[i]}"} ${h.buckets[i] ?? 0}\n`;
    lines += `${name}_bucket{${labels},le="+Inf"} ${h.count}\n${name}_sum{${labels}} ${value(h.sumMs / 1000)}\n${name}_count{${labels}} ${h.count}\n`;
    if (h.name === "wait") wait += lines;
    else run += lines;
  }
  return { jobs, totals, wait, run };
}

/** The oldest due age's line of a lane at `nowMs`. */
export function oldestLine(lane: string, earliestRunAt: number | null, nowMs: number): string {
  const age = earliestRunAt !== null && earliestRunAt <= nowMs ? (nowMs - earliestRunAt) / 1000 : 0;
  return `${FAMILIES.oldest[0]}{lane="${escapeLabelValue(lane)}"} ${value(age)}\n`;
}

/** One lane as the exposition takes it: its fragments and its earliest queued runAt. */
export interface RenderedLane {
  lane: string;
  fragments: LaneFragments;
  earliestRunAt: number | null;
}

/** The whole exposition of these lanes at `nowMs`: each family once, its HELP and TYPE, then every lane's lines. */
export function exposition(lanes: readonly RenderedLane[], nowMs: number): string {
  const parts: string[] = [];
  for (const key of FAMILY_ORDER) {
    parts.push(familyHeader(key));
    for (const r of lanes) parts.push(key === "oldest" ? oldestLine(r.lane, r.earliestRunAt, nowMs) : r.fragments[key]);
  }
  return parts.join("");
}

/** One lane's exposition at `nowMs` from its shards' reports, merged (docs/api.md "Metrics"). */
export function laneExposition(lane: string, reports: readonly LaneReport[], nowMs: number): string {
  const report = mergeReports(reports);
  return exposition([{ lane, fragments: laneFragments(lane, report), earliestRunAt: report.earliestRunAt }], nowMs);
}
