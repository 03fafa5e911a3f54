/**
 * A lane trusts no caller: every RPC argument is validated again here, with the same schemas as the
 * HTTP routes, and a bad one is an `invalid_request` answer (data, not a throw: RPC keeps only an
 * error's message).
 */
import { z, type ZodType } from "zod";
import { fail, ok, type Result } from "../shared/errors.js";
import { parse } from "../shared/enqueue-input.js";
import { MAX_SHARDS } from "../shared/shards.js";
import { JobId, Name, ScheduleName, toIssues } from "../shared/schemas.js";

// The enqueue's reading is shared (a caller reads its request as the lane did); the lane's files name it from here.
export { parse, parseBatchEnqueue, parseEnqueue, ReservationNonce, type TracedBatchRequest, type TracedEnqueueRequest } from "../shared/enqueue-input.js";

/** A shard's index within its lane. */
export const ShardIndex = z.number().int().min(0).max(MAX_SHARDS - 1);

/** The value of a JSON text, or the refusal: what a method spoken in JSON text (`Lane.enqueueText`) reads. */
export function parseJsonText(text: unknown): Result<unknown> {
  try {
    if (typeof text === "string") return ok(JSON.parse(text) as unknown);
  } catch {
    // refused below
  }
  return fail("invalid_request", "invalid request: not JSON text", []);
}

/** A job id (a schedule's `<name>@<T>` too), valid, or the refusal. */
export function parseId(id: unknown): Result<string> {
  const name = JobId.safeParse(id);
  return name.success ? ok(name.data) : fail("invalid_request", "invalid job id", toIssues(name.error, ["id"]));
}

/** A job id and a request about it, both valid, or the first refusal. */
export function parseJobCall<T>(id: unknown, schema: ZodType<T>, input: unknown): Result<{ id: string; request: T }> {
  const name = parseId(id);
  if (!name.ok) return name;
  const request = parse(schema, input);
  return request.ok ? ok({ id: name.value, request: request.value }) : request;
}

/** A name of `what` (a queue, …), valid, or the refusal. */
export function parseName(value: unknown, what: string): Result<string> {
  const name = Name.safeParse(value);
  return name.success ? ok(name.data) : fail("invalid_request", `invalid ${what} name`, toIssues(name.error, [what]));
}

/** A schedule's name, valid, or the refusal. */
export function parseScheduleName(name: unknown): Result<string> {
  const parsed = ScheduleName.safeParse(name);
  return parsed.success ? ok(parsed.data) : fail("invalid_request", "invalid schedule name", toIssues(parsed.error, ["name"]));
}
/** The front worker's name for a held claim (a UUID it makes): only ever sent over RPC. */
export const HoldName = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, "a hold name is 1..64 letters, digits or dashes");
