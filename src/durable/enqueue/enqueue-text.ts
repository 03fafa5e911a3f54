/**
 * The enqueue spoken in JSON text between the RPC client and its lane (`Lane.enqueueText`), both ends
 * in one place. A new job is answered with what the client cannot know of it — its id and when it was
 * written, the enqueue's one reading of the clock (its `runAt` follows from it) — and the client
 * builds the job from the very request text it sent, with the lane's own code (`parseEnqueue`,
 * `toSpec`, `enqueuedJob`): the same job, field for field, as the lane's object answer, for a tenth of
 * the text to carry and parse. A duplicate (the stored job) and every refusal go whole.
 */
import type { EnqueueAnswer } from "../../shared/answers.js";
import { ok, type Result } from "../../shared/errors.js";
import type { Json } from "../../shared/job.js";
import { enqueuedJob, type Inserted, type JobSpec } from "../store/job-row.js";
import { parseEnqueue } from "../input.js";
import { toSpec } from "./spec.js";

/** A new job, as `Lane.enqueueText` answers it. */
export type EnqueuedNew = { status: "queued"; id: string; createdAt: number };

/** What the lane did with one enqueue: the job's spec and what its insert did. */
export type EnqueueDone = { spec: JobSpec; inserted: Inserted };

/** The lane's side: its answer as JSON text. */
export function enqueueAnswerText(done: Result<EnqueueDone>, lane: string): string {
  if (!done.ok) return JSON.stringify(done);
  const { spec, inserted } = done.value;
  if (inserted.status !== "queued" || inserted.job) return JSON.stringify(ok(enqueueAnswer(done.value, lane)));
  return `{"ok":true,"value":{"status":"queued","id":${JSON.stringify(spec.id)},"createdAt":${inserted.at}}}`;
}

/** The answer as an object, for the lane's `enqueue`: a new job built from its spec, else the job as stored. */
export function enqueueAnswer({ spec, inserted }: EnqueueDone, lane: string): EnqueueAnswer {
  if (inserted.status !== "queued") return inserted;
  return { status: "queued", job: inserted.job ?? enqueuedJob(spec, inserted.at, lane) };
}

/** The client's side: the lane's `EnqueueAnswer` (or its refusal) from its answer and the request text it was sent. */
export function readEnqueueAnswer(requestText: string, answerText: string, lane: string): Result<EnqueueAnswer> {
  const answer = JSON.parse(answerText) as Result<EnqueueAnswer | EnqueuedNew>;
  if (!answer.ok || "job" in answer.value) return answer as Result<EnqueueAnswer>;
  const { id, createdAt } = answer.value;
  // The request as the lane read it, its spec as the lane built it at `createdAt` (so `runAt` too).
  // Its payload, fresh from JSON text, is the value the lane stored, and goes into the job as it is:
  // the spec is built without it, whose serialized text the job would not use.
  const request = parseEnqueue(JSON.parse(requestText));
  const spec = request.ok ? toSpec({ ...request.value, payload: null }, createdAt, () => id, lane) : request;
  // The lane read the same text and queued it: the request cannot be refused here.
  if (!request.ok || !spec.ok) throw new Error(`lane ${lane} queued ${id} from a request its client cannot read`);
  return ok({ status: "queued", job: enqueuedJob(spec.value, createdAt, lane, (request.value.payload ?? null) as Json) });
}
