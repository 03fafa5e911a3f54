/**
 * The enqueue spoken in JSON text between a caller (the RPC client, the front worker's group commit)
 * and its lane (`Lane.enqueueText`): the answer's format and the caller's reading of it. A new job is
 * answered with what the caller cannot know of it — its id and when it was written, the enqueue's one
 * reading of the clock (its `runAt` follows from it) — and the caller builds the job from its own
 * request with the lane's own code (`parseEnqueue`, `toSpec`, `enqueuedJob`): the same job, field for
 * field, as the lane's object answer, for a tenth of the text to carry and parse. A duplicate (the
 * stored job) and every refusal go whole.
 */
import type { EnqueueAnswer } from "./answers.js";
import { parseEnqueue, type TracedEnqueueRequest } from "./enqueue-input.js";
import { ok, type Result } from "./errors.js";
import type { Json } from "./job.js";
import { enqueuedJob, toSpec } from "./job-spec.js";

/** A new job, as `Lane.enqueueText` answers it. */
type EnqueuedNew = { status: "queued"; id: string; createdAt: number };

/** The lane's answer of a new job, as text: `{ ok: true, value: EnqueuedNew }`. */
export function enqueuedNewText(id: string, createdAt: number): string {
  return `{"ok":true,"value":{"status":"queued","id":${JSON.stringify(id)},"createdAt":${createdAt}}}`;
}

/**
 * The caller's side: the lane's `EnqueueAnswer` (or its refusal) from its answer text and what the
 * caller sent. `sent` is the request text itself, read again here (for a new job only), or the request
 * as the caller already holds it read and validated as the lane reads it (a route's body, checked by the
 * lane's schema, its trace context as stored), whose JSON text it sent: its payload, a JSON value read
 * from JSON text, goes into the job as it is.
 */
export function readEnqueueAnswer(answerText: string, lane: string, sent: string | TracedEnqueueRequest): Result<EnqueueAnswer> {
  const answer = JSON.parse(answerText) as Result<EnqueueAnswer | EnqueuedNew>;
  if (!answer.ok || "job" in answer.value) return answer as Result<EnqueueAnswer>;
  const { id, createdAt } = answer.value;
  // The request as the lane read it, its spec as the lane built it at `createdAt` (so `runAt` too).
  // Its payload is the value the lane stored and goes into the job as it is: the spec is built
  // without it, whose serialized text the job would not use.
  const request = typeof sent === "string" ? parseEnqueue(JSON.parse(sent)) : ok(sent);
  const spec = request.ok ? toSpec({ ...request.value, payload: null }, createdAt, () => id, lane) : request;
  // The lane read the same text and queued it: the request cannot be refused here.
  if (!request.ok || !spec.ok) throw new Error(`lane ${lane} queued ${id} from a request its caller cannot read`);
  return ok({ status: "queued", job: enqueuedJob(spec.value, createdAt, lane, (request.value.payload ?? null) as Json) });
}
