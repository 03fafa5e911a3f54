/**
 * The histograms of jobs' waits and runs (docs/operations.md "Metrics"): a row of `job_histograms`
 * (migration 16) per histogram, outcome and bucket, with that bucket's own count and sum in ms (the
 * cumulative buckets are summed when read: lane-report.ts), kept by the store (store/upkeep.ts) in the
 * transaction of the statement that starts or ends attempts: one upsert of the buckets it touched.
 * A wait runs from the later of the job's runAt and when it was last queued (enqueued, queued again,
 * its dependencies done: the row's updated_at, which nothing else moves while it is queued) to its
 * start; a run from the attempt's start to its end, labelled by how it ended: the job's outcome, or
 * how it went back to queued (retried, recovered, snoozed, released).
 */
import { recordHistograms } from "../store/upkeep.js";

/**
 * At start-up: whether the store observes waits and runs (store/upkeep.ts). The rows stay either way
 * (counters a scrape reads as they were); with recording off, a transition pays nothing for them.
 */
export function startHistograms(storage: DurableObjectStorage, on: boolean): void {
  recordHistograms(storage.sql, on);
}
