/**
 * What a bulk action does to the jobs of one chunk, each as its single route would: `requeue` as
 * `POST …/requeue` (settled failed, cancelled or interrupted jobs), `cancel` as `POST …/cancel` with
 * the action's reason (queued and blocked jobs settle `cancelled`, running ones are asked to stop),
 * `delete` as a sweep (settled jobs a sweep would not keep, through the one deletion path, with what
 * they own). The routes' statements over the chunk's jobs at once where a chunk holds many (a
 * route's call per job would outlast an alarm's turn). A matching job it cannot act on is counted
 * skipped. Runs in the chunk's transaction.
 */
import type { Cancels } from "../attempts/cancel.js";
import type { Dispatcher } from "../attempts/dispatcher.js";
import type { SwitchyardEnv } from "../env.js";
import { deleteJobs, type DeletedJob } from "../store/deletion.js";
import type { JobStore } from "../store/job-store.js";
import { keepUpkeep } from "../store/upkeep.js";
import { CANCEL_CHUNK_SQL, REQUEUE_CHUNK_SQL, type BulkRow, type ChangedJob, type ReachedJob } from "./bulk-statements.js";

/** The parts a chunk acts through: the routes' own. */
export interface ChunkParts {
  readonly store: JobStore;
  readonly cancels: Cancels;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
}

/** Acts on `jobs`; the ids of running jobs now cancel-requested go to `aborts` (aborted after the commit). */
export function actOn(sql: SqlStorage, parts: ChunkParts, bulk: BulkRow, jobs: readonly ReachedJob[], now: number, aborts: string[]): { done: number; skipped: number } {
  let done = 0;
  switch (bulk.action) {
    case "requeue":
      done = requeue(sql, parts.store, jobs, now);
      break;
    case "cancel":
      done = cancelQueued(sql, parts.store, bulk.reason, jobs.filter((job) => job.shown === "queued" || job.shown === "blocked"), now);
      // Running jobs are few (the lane's slots): each through the route's own cancel. One already
      // asked to stop is not acted on again; a settled one is not acted on at all.
      for (const job of jobs) {
        if (job.shown !== "running" || job.cancel_requested === 1) continue;
        const answer = parts.cancels.cancel(job.id, bulk.reason);
        if (!answer.ok) continue;
        done++;
        if (answer.value.status === "cancelling") aborts.push(job.id);
      }
      break;
    case "delete": {
      const gone: DeletedJob[] = jobs.filter((job) => job.shown === "settled" && job.kept === 0).map(({ seq, id }) => ({ seq, id }));
      done = deleteJobs(sql, gone);
      break;
    }
  }
  return { done, skipped: jobs.length - done };
}

/**
 * The requeue route's change to every requeueable job of the chunk in one statement, its upkeep
 * written once for all (a route's requeue reads its row, writes it and its upkeep, and builds its
 * answer: 500 of those would outlast an alarm's turn), each job's transition told as the route tells it.
 */
function requeue(sql: SqlStorage, store: JobStore, jobs: readonly ReachedJob[], now: number): number {
  const candidates = jobs.filter((job) => job.shown === "settled" && job.outcome !== "completed");
  if (candidates.length === 0) return 0;
  const before = new Map(candidates.map((job) => [job.seq, job]));
  const requeued = sql.exec<ChangedJob>(REQUEUE_CHUNK_SQL, JSON.stringify(candidates.map((job) => job.seq)), now).toArray();
  keepUpkeep(sql, requeued.map((row) => ({ old: before.get(row.seq)!, new: row })), now);
  for (const row of requeued) store.emit(row, "settled", null, now);
  return requeued.length;
}

/** The cancel route's settlement of queued and blocked jobs, for all of the chunk's in one statement (as `requeue`). */
function cancelQueued(sql: SqlStorage, store: JobStore, reason: string | null, jobs: readonly ReachedJob[], now: number): number {
  if (jobs.length === 0) return 0;
  const before = new Map(jobs.map((job) => [job.seq, job]));
  const to = store.endState();
  const settled = sql.exec<ChangedJob>(CANCEL_CHUNK_SQL, JSON.stringify(jobs.map((job) => job.seq)), "queued", to, reason, to === "settled" ? now : null, now).toArray();
  keepUpkeep(sql, settled.map((row) => ({ old: before.get(row.seq)!, new: row })), now);
  for (const row of settled) store.emit(row, before.get(row.seq)!.shown, null, now);
  return settled.length;
}
