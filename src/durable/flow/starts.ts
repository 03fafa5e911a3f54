/**
 * What the jobs a claim just started owe flow control, written in the claim's own transaction
 * (attempts/claim.ts): each queue's bucket drawn by the jobs it started, and its last start, by which
 * round-robin orders the queues; under round-robin, the last start of a job outside any queue too
 * (those count as one queue). The lane's own bucket the claim draws once per claim (bucket.ts `draw`).
 */
import type { LaneSettingsStore } from "../store/settings.js";
import { QUEUES_STARTED_SQL } from "./queue-statements.js";

/**
 * Writes what `rows`, just started at `now`, owe their queues. `queuesMatter`: whether any queue is
 * rate limited (asked only when a fifo lane started queued jobs: nothing to draw otherwise).
 */
export function queuesStarted(sql: SqlStorage, settings: LaneSettingsStore, queuesMatter: () => boolean, rows: readonly { queue: string | null }[], now: number): void {
  const perQueue = new Map<string, number>();
  let unqueued = false;
  for (const row of rows) {
    if (row.queue === null) unqueued = true;
    else perQueue.set(row.queue, (perQueue.get(row.queue) ?? 0) + 1);
  }
  const { fairness } = settings.read();
  if (perQueue.size > 0 && (fairness === "round-robin" || queuesMatter())) sql.exec(QUEUES_STARTED_SQL, now, JSON.stringify([...perQueue]));
  if (unqueued && fairness === "round-robin") settings.unqueuedStarted(now);
}
