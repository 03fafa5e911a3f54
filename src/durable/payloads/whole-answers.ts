/**
 * Answers that carry one job carry its payload and result whole (docs/api.md "Big payloads"): a job
 * read from its row says only `payloadRef`/`resultRef` for a value held in R2, and these read the
 * values back before such an answer leaves the lane. An answer with no reference in it is returned as
 * it is, in its own turn: a job whose values are in its row pays two property reads.
 */
import type { Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import type { EnqueueDone } from "../enqueue/enqueue-text.js";
import type { PayloadStore } from "./payload-store.js";

type Refs = Pick<Job, "payload" | "payloadRef" | "result" | "resultRef">;

function holds(job: unknown): job is Refs {
  return typeof job === "object" && job !== null && ((job as Refs).payloadRef != null || (job as Refs).resultRef != null);
}

/** An answer that is a job or `{job}`, made whole (a claim's `{jobs}`: `wholeJobs`, when it asked for one). */
export function wholeAnswer<T>(payloads: PayloadStore, answer: Result<T>): Result<T> | Promise<Result<T>> {
  if (!answer.ok) return answer;
  const value = answer.value as unknown;
  if (holds(value)) return payloads.whole(value).then((job) => ({ ok: true, value: job as T }));
  if (typeof value !== "object" || value === null) return answer;
  const { job } = value as { job?: unknown };
  if (holds(job)) return payloads.whole(job).then((whole) => ({ ok: true, value: { ...value, job: whole } as T }));
  return answer;
}

/** A claim's jobs when it asked for one (`max` 1): whole, as an answer of one job (a page of several leaves them out). */
export function wholeJobs<J extends Refs>(payloads: PayloadStore, jobs: J[], max: number): J[] | Promise<J[]> {
  if (max !== 1 || jobs.length !== 1 || !holds(jobs[0])) return jobs;
  return payloads.whole(jobs[0]).then((job) => [job]);
}

/** An enqueue's answer whose job is the stored one (a duplicate, a debounce, a job blocked at once), made whole. */
export function wholeDone(payloads: PayloadStore, done: Result<EnqueueDone>): Result<EnqueueDone> | Promise<Result<EnqueueDone>> {
  if (!done.ok || !("job" in done.value.inserted) || !holds(done.value.inserted.job)) return done;
  const { inserted } = done.value;
  return payloads.whole(inserted.job!).then((job) => ({ ok: true, value: { ...done.value, inserted: { ...inserted, job } as typeof inserted } }));
}
