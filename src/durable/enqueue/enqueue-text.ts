/**
 * The lane's side of the enqueue spoken in JSON text (`Lane.enqueueText`; the format and the caller's
 * reading are shared/enqueue-text.ts): a new job answered by its id and creation time, a duplicate
 * (the stored job) and every refusal whole.
 */
import type { EnqueueAnswer } from "../../shared/answers.js";
import { enqueuedNewText } from "../../shared/enqueue-text.js";
import { ok, type Result } from "../../shared/errors.js";
import { enqueuedJob } from "../../shared/job-spec.js";
import type { Json } from "../../shared/job.js";
import type { Inserted, JobSpec } from "../store/job-row.js";

/** What the lane did with one enqueue: the job's spec and what its insert did. */
export type EnqueueDone = { spec: JobSpec; inserted: Inserted; payload?: Json };

/** The lane's answer as JSON text. */
export function enqueueAnswerText(done: Result<EnqueueDone>, lane: string): string {
  if (!done.ok) return JSON.stringify(done);
  const { spec, inserted } = done.value;
  if (inserted.status !== "queued" || inserted.job || inserted.cancelling) return JSON.stringify(ok(enqueueAnswer(done.value, lane)));
  return enqueuedNewText(spec.id, inserted.at);
}

/** The answer as an object, for the lane's `enqueue`: a new job built from its spec, else the job as stored. */
export function enqueueAnswer({ spec, inserted, payload }: EnqueueDone, lane: string): EnqueueAnswer {
  if (inserted.status !== "queued") return inserted;
  // A payload held in R2: the spec points at it, and the answer carries the value it was sent.
  const job = inserted.job ?? (payload === undefined ? enqueuedJob(spec, inserted.at, lane) : enqueuedJob(spec, inserted.at, lane, payload));
  return inserted.cancelling ? { status: "queued", job, cancelling: inserted.cancelling } : { status: "queued", job };
}
