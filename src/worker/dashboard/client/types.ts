/**
 * The API's shapes as the page reads them: the shared types, plus fields that API.md describes and
 * that a server may not send yet (they are shown when present, so the page takes them as they land).
 */
import type { Counts, Job as SharedJob, LaneInfo as SharedLaneInfo } from "../../../shared/job.js";

export type { Counts };

export interface AttemptError {
  attempt: number;
  generation: number;
  message: string;
  at: number;
}

export type Job = SharedJob & {
  errors?: AttemptError[];
  progress?: unknown;
};

export type LaneInfo = SharedLaneInfo & {
  stats?: Record<string, number>;
  retention?: { completedMs: number | null; failedMs: number | null };
  oldestDueAt?: number | null;
};

export interface Page<T> {
  cursor: string | null;
  items: T[];
}

export const COUNT_KEYS = ["queued", "running", "completing", "completed", "failed", "cancelled", "interrupted"] as const satisfies readonly (keyof Counts)[];
export const STATES = ["queued", "running", "completing", "settled"] as const;
export const OUTCOMES = ["completed", "failed", "cancelled", "interrupted"] as const;
