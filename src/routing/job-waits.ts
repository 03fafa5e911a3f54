/**
 * Waiting for a job (docs/api.md "Results", `?waitMs`): the held read of its shard (routed by the job's
 * id, as every call about one job is), asked again when that shard holds as many reads as it may.
 * The front worker's routes and the RPC client both wait through here.
 */
import { HELD_READ_RETRY_MS } from "../shared/defaults.js";
import { ok, type Result } from "../shared/errors.js";
import type { Job } from "../shared/job.js";
import type { JobRouting } from "./job-routing.js";
import { acrossResets } from "./lane-retry.js";
import type { Answer, ShardPeer } from "./peer.js";

/**
 * A lane's answer to a held read: the job once settled, or as it stands when `waitMs` passed.
 * `busy`: the lane held no read (it holds as many as it may) and answered at once.
 */
export type HeldJob = { job: Job; busy: boolean };

/** What a held read calls on a job's shard. */
export interface JobWaitPeer extends ShardPeer {
  awaitJob(id: string, waitMs: number): Answer<HeldJob>;
}

/**
 * Job `id` once it is settled, or as it stands once `waitMs` has passed; a lane too busy to hold the
 * read is asked again every `HELD_READ_RETRY_MS` until then (or until `signal` says the caller left).
 */
export async function waitForJob<P extends JobWaitPeer>(router: JobRouting<P>, lane: string, id: string, waitMs: number, signal?: AbortSignal): Promise<Result<Job>> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    // Asked again after a reset of the lane with what is left of the wait (at its end, a plain read).
    const answer = await acrossResets(() => router.byId(lane, id, async (stub) => stub.awaitJob(id, Math.max(0, deadline - Date.now()))), signal);
    if (!answer.ok) return answer;
    const { job, busy } = answer.value;
    if (!busy || job.state === "settled" || signal?.aborted) return ok(job);
    const pause = Math.min(HELD_READ_RETRY_MS, deadline - Date.now());
    if (pause <= 0) return ok(job);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
