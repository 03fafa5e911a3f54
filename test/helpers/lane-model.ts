/**
 * What a lane's rows say it should answer, recomputed in plain TypeScript for the property tests:
 * queue heads, the wake of docs/concepts.md, the counts.
 */
import type { JobRow } from "../../src/durable/store/job-row.js";
import { DEFAULT_COMPLETED_RETENTION_MS, DEFAULT_FAILED_RETENTION_MS, RETENTION_SLACK_MS } from "../../src/shared/defaults.js";
import type { Counts, Retention } from "../../src/shared/job.js";

export interface ModelLane {
  now: number;
  jobs: JobRow[];
  concurrency: number;
  paused: boolean;
  /** Default: the defaults of defaults.ts. */
  retention?: Retention;
}

/** A queued job may start if nothing of its queue runs or completes and no queued job of its queue is ahead of it. */
export function isHead(job: JobRow, jobs: JobRow[]): boolean {
  if (job.queue === null) return true;
  return !jobs.some(
    (other) =>
      other.queue === job.queue &&
      (other.state === "running" ||
        other.state === "completing" ||
        (other.state === "queued" && (other.priority > job.priority || (other.priority === job.priority && other.seq < job.seq)))),
  );
}

/**
 * The wake of docs/concepts.md for a lane without executors, recomputed from the rows: leases, future heads
 * when a job may start, and the next retention pass (the first horizon plus the slack, or now once that has passed).
 */
export function expectedWake(s: ModelLane): number | null {
  const running = s.jobs.filter((j) => j.state === "running");
  const candidates = running.map((j) => j.lease_until!);
  if (!s.paused && running.length < s.concurrency) {
    for (const job of s.jobs) if (job.state === "queued" && job.run_at > s.now && isHead(job, s.jobs)) candidates.push(job.run_at);
  }
  const retention = s.retention ?? { completedMs: DEFAULT_COMPLETED_RETENTION_MS, failedMs: DEFAULT_FAILED_RETENTION_MS };
  const expiries = s.jobs.flatMap((j) => {
    if (j.state !== "settled") return [];
    const ms = j.outcome === "completed" ? retention.completedMs : retention.failedMs;
    return ms === null ? [] : [j.settled_at! + ms];
  });
  if (expiries.length > 0) {
    const first = Math.min(...expiries);
    candidates.push(Math.max(s.now, first + RETENTION_SLACK_MS));
  }
  return candidates.length > 0 ? Math.min(...candidates) : null;
}

export function countsOf(jobs: JobRow[]): Counts {
  const counts: Counts = { blocked: 0, queued: 0, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 };
  for (const job of jobs) counts[job.state === "settled" ? job.outcome! : job.state]++;
  return counts;
}
