/**
 * What a bulk action does to the jobs of one chunk, each as its single route would: `requeue` as
 * `POST …/requeue` (settled failed, cancelled or interrupted jobs), `cancel` as `POST …/cancel` with
 * the action's reason (queued and blocked jobs settle `cancelled`, running ones are asked to stop),
 * `delete` as a sweep (settled jobs a sweep would not keep, through the one deletion path, with what
 * they own). A matching job it cannot act on is counted skipped. Runs in the chunk's transaction.
 */
import type { Cancels } from "../attempts/cancel.js";
import type { Dispatcher } from "../attempts/dispatcher.js";
import type { SwitchyardEnv } from "../env.js";
import { deleteJobs, type DeletedJob } from "../store/deletion.js";
import type { JobStore } from "../store/job-store.js";
import type { BulkRow, ReachedJob } from "./bulk-statements.js";

/** The parts a chunk acts through: the routes' own. */
export interface ChunkParts {
  readonly store: JobStore;
  readonly cancels: Cancels;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
}

/** Acts on `jobs`; the ids of running jobs now cancel-requested go to `aborts` (aborted after the commit). */
export function actOn(sql: SqlStorage, parts: ChunkParts, bulk: BulkRow, jobs: readonly ReachedJob[], aborts: string[]): { done: number; skipped: number } {
  let done = 0;
  switch (bulk.action) {
    case "requeue":
      for (const job of jobs) if (job.state === "settled" && job.outcome !== "completed" && parts.store.requeue(job.id).ok) done++;
      break;
    case "cancel":
      for (const job of jobs) {
        // A running job already asked to stop, or a settled one, is not acted on again.
        if (!(job.state === "queued" || job.state === "blocked" || (job.state === "running" && job.cancel_requested === 0))) continue;
        const answer = parts.cancels.cancel(job.id, bulk.reason);
        if (!answer.ok) continue;
        done++;
        if (answer.value.status === "cancelling") aborts.push(job.id);
      }
      break;
    case "delete": {
      const gone: DeletedJob[] = jobs.filter((job) => job.state === "settled" && job.kept === 0).map(({ seq, id }) => ({ seq, id }));
      done = deleteJobs(sql, gone);
      break;
    }
  }
  return { done, skipped: jobs.length - done };
}
