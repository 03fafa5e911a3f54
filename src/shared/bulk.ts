/**
 * Bulk actions (docs/api.md "Bulk actions"): requeue, cancel or delete the jobs of a lane that match
 * a filter, in bounded chunks across alarm wakes. Their shape and limits (the request's checks are
 * bulk-schemas.ts).
 */
import type { JobState, Outcome } from "./job.js";

export const BULK_ACTIONS = ["requeue", "cancel", "delete"] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

export const BULK_STATES = ["running", "done"] as const;
export type BulkState = (typeof BULK_STATES)[number];

/** At most this many matching jobs are acted on in one turn (one transaction) of a bulk action. */
export const BULK_CHUNK = 500;

/**
 * At most this many jobs (by enqueue order) are looked at in one turn: a filter that matches few
 * jobs of many still ends its turn quickly, and the cursor moves past what it looked at.
 */
export const BULK_SCAN = 5_000;

/** A finished bulk action is kept this long after it finished (7 days), then removed by the lane. */
export const BULK_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/** The longest bulk id a lane accepts from its router (a UUID is 36). */
export const BULK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export interface BulkFilter {
  state?: JobState;
  outcome?: Outcome;
  kind?: string;
  queue?: string;
  createdAfter?: number;
  createdBefore?: number;
}

export interface Bulk {
  id: string;
  action: BulkAction;
  filter: BulkFilter;
  state: BulkState;
  /** null while it runs; `done` + `skipped` once it has finished. */
  matched: number | null;
  done: number;
  skipped: number;
  createdAt: number;
  finishedAt: number | null;
}

/**
 * A sharded lane's bulk action as one: every shard's under the same id, summed; running while any
 * shard's runs; `createdAt` the earliest, `finishedAt` the latest once every shard has finished.
 */
export function sumBulks(bulks: readonly Bulk[]): Bulk {
  const first = bulks[0]!;
  const running = bulks.some((b) => b.state === "running");
  const sum = (pick: (b: Bulk) => number) => bulks.reduce((n, b) => n + pick(b), 0);
  const done = sum((b) => b.done);
  const skipped = sum((b) => b.skipped);
  return {
    ...first,
    state: running ? "running" : "done",
    matched: running ? null : done + skipped,
    done,
    skipped,
    createdAt: Math.min(...bulks.map((b) => b.createdAt)),
    finishedAt: running ? null : Math.max(...bulks.map((b) => b.finishedAt ?? 0)),
  };
}
