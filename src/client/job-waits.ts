/**
 * Waiting for a job from a client (docs/api.md "Results", "Clients"): `wait` and `enqueueAndWait`, the
 * same for the HTTP and the RPC client. Each request waits at most 30000 ms in the lane (`waitMs`) and
 * is asked again until the job is settled or `timeoutMs` has passed; then the job is answered as it
 * stands (unsettled is no error).
 */
import type { EnqueueAnswer } from "../shared/answers.js";
import { HELD_READ_RETRY_MS, MAX_JOB_WAIT_MS } from "../shared/defaults.js";
import { QueueError } from "../shared/errors.js";
import type { Job } from "../shared/job.js";
import type { EnqueueRequest } from "../shared/schemas.js";
import type { EnqueueOptions, WaitOptions } from "./types.js";

/** What a client's waits call: an enqueue (its answer held up to `waitMs` where the client can), and a held read. */
export interface WaitCalls {
  enqueue(request: EnqueueRequest, options: EnqueueOptions, waitMs: number): Promise<EnqueueAnswer>;
  read(id: string, waitMs: number): Promise<Job>;
}

/** How long a wait lasts: `timeoutMs` (an integer ≥ 0), default 30000. */
function timeoutOf(options: WaitOptions): number {
  const timeoutMs = options.timeoutMs ?? MAX_JOB_WAIT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
    throw new QueueError("invalid_request", "timeoutMs must be an integer ≥ 0", [{ path: ["timeoutMs"], message: "an integer ≥ 0" }]);
  }
  return timeoutMs;
}

/** Job `id` once settled, or as it stands at `deadline` (epoch ms), in held reads of at most 30000 ms. */
async function settled(calls: WaitCalls, id: string, deadline: number): Promise<Job> {
  for (;;) {
    const waitMs = Math.min(MAX_JOB_WAIT_MS, Math.max(0, deadline - Date.now()));
    const asked = Date.now();
    const job = await calls.read(id, waitMs);
    if (job.state === "settled" || Date.now() >= deadline) return job;
    // Answered unsettled long before its wait was spent (a server that does not hold reads): not at once again.
    if (Date.now() - asked < waitMs / 2) await new Promise((resolve) => setTimeout(resolve, Math.min(HELD_READ_RETRY_MS, deadline - Date.now())));
  }
}

export function jobWaits(calls: WaitCalls) {
  return {
    wait: async (id: string, options: WaitOptions = {}): Promise<Job> => settled(calls, id, Date.now() + timeoutOf(options)),
    enqueueAndWait: async (request: EnqueueRequest, options: EnqueueOptions & WaitOptions = {}): Promise<EnqueueAnswer> => {
      const timeoutMs = timeoutOf(options);
      const deadline = Date.now() + timeoutMs;
      const { timeoutMs: _, ...enqueueOptions } = options;
      const answer = await calls.enqueue(request, enqueueOptions, Math.min(timeoutMs, MAX_JOB_WAIT_MS));
      if (answer.job.state === "settled" || Date.now() >= deadline) return answer;
      return { ...answer, job: await settled(calls, answer.job.id, deadline) };
    },
  };
}
