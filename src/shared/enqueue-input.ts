/**
 * An enqueue request as a lane reads it: the body of docs/api.md, and beside its fields what the
 * routing layer and the front worker put there (the trace context, the shard count it was routed by,
 * reservations' nonces). Shared, so that a caller can read a request exactly as its lane did.
 */
import { z, type ZodType } from "zod";
import { fail, ok, type Result } from "./errors.js";
import { MAX_SHARDS } from "./shards.js";
import { BatchEnqueueRequest, EnqueueRequest, simpleBatchEnqueueRequest, simpleEnqueueRequest, toIssues } from "./schemas.js";
import { parseTraceparent, TRACEPARENT_FORMAT } from "./trace.js";

/** `input` by `schema`, or the refusal naming each issue (`invalid_request`). */
export function parse<T>(schema: ZodType<T>, input: unknown): Result<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return ok(parsed.data);
  const details = toIssues(parsed.error);
  return fail("invalid_request", `invalid request: ${details.map((d) => `${d.path.join(".") || "(body)"}: ${d.message}`).join("; ")}`, details);
}

/**
 * An enqueue as a lane takes it: the request of docs/api.md, and the W3C trace context its producer
 * sent (over HTTP the `traceparent` header, which the front worker puts here), as stored: valid, and
 * of a later version only its first 55 characters.
 */
export type TracedEnqueueRequest = EnqueueRequest & { traceparent?: string; shards?: number; reservation?: string; keyReservation?: string };

/** A batch as a lane takes it: the request, and one trace context for all its jobs. */
export type TracedBatchRequest = Omit<BatchEnqueueRequest, "jobs"> & { jobs: (BatchEnqueueRequest["jobs"][number] & { reservation?: string; keyReservation?: string })[]; traceparent?: string; shards?: number };

/**
 * An enqueue request: a plain `{ kind, payload?, id? }` without zod (`simpleEnqueueRequest`), any
 * other by its schema; a `traceparent` beside its fields is checked apart (it is not a body field).
 */
export function parseEnqueue(input: unknown): Result<TracedEnqueueRequest> {
  const simple = simpleEnqueueRequest(input);
  if (simple) return ok(simple);
  return withShards(input, (input) => withNonce("keyReservation", input, (input) => withNonce("reservation", input, (input) => withTrace(input, (request) => {
    const plain = simpleEnqueueRequest(request);
    return plain ? ok(plain) : parse(EnqueueRequest, request);
  }))));
}

/** A batch enqueue request, and the `traceparent` beside its `jobs` (for every job of it), if any; plain jobs only without zod (`simpleBatchEnqueueRequest`). */
export function parseBatchEnqueue(input: unknown): Result<TracedBatchRequest> {
  return withShards(input, (input) => withReservations(input, (input) => withTrace(input, (request) => {
    const simple = simpleBatchEnqueueRequest(request);
    return simple ? ok(simple) : parse(BatchEnqueueRequest, request);
  })));
}

/** A reservation's nonce (of an id or a debounce key), as a router or a shard sends it. */
export const ReservationNonce = z.string().min(1).max(64);

/**
 * A nonce beside a request's fields, as `field`: an id's reservation (`reservation`), or a debounce
 * key's (`keyReservation`: what the router reserved the key under on the key's own shard).
 */
function withNonce<T extends object, F extends string>(field: F, input: unknown, read: (request: unknown) => Result<T>): Result<T & { [K in F]?: string }> {
  if (typeof input !== "object" || input === null || !Object.hasOwn(input, field)) return read(input);
  const { [field]: given, ...request } = input as Record<string, unknown>;
  const nonce = parse(ReservationNonce, given);
  if (!nonce.ok) return fail("invalid_request", `invalid request: ${field}: ${nonce.error.message}`, [{ path: [field], message: "must be a reservation's nonce" }]);
  const parsed = read(request);
  return parsed.ok ? ok({ ...parsed.value, [field]: nonce.value } as T & { [K in F]?: string }) : parsed;
}

/**
 * A batch's `reservations` (its ids') and `keyReservations` (its debounce keys') beside its `jobs`
 * (one per job, null: none), each put on its job as `reservation` and `keyReservation`.
 */
function withReservations(input: unknown, read: (request: unknown) => Result<BatchEnqueueRequest & { traceparent?: string }>): Result<TracedBatchRequest> {
  return withNonces("keyReservations", "keyReservation", input, (input) => withNonces("reservations", "reservation", input, read));
}

function withNonces(field: string, onJob: string, input: unknown, read: (request: unknown) => Result<TracedBatchRequest>): Result<TracedBatchRequest> {
  if (typeof input !== "object" || input === null || !Object.hasOwn(input, field)) return read(input);
  const { [field]: given, ...request } = input as Record<string, unknown>;
  const parsed = read(request);
  if (!parsed.ok) return parsed;
  const nonces = parse(z.array(ReservationNonce.nullable()).length(parsed.value.jobs.length), given);
  if (!nonces.ok) return fail("invalid_request", `invalid request: ${field}: ${nonces.error.message}`, [{ path: [field], message: "must be one nonce or null per job" }]);
  return ok({ ...parsed.value, jobs: parsed.value.jobs.map((job, i) => (nonces.value[i] === null ? job : { ...job, [onJob]: nonces.value[i]! })) });
}

/**
 * `read` of an object without its `shards`, then that count added: the shard count the router
 * routed by, beside the request's fields (not a body field; docs/concepts.md "Sharded lanes"). A shard
 * of a sharded lane refuses a job routed by another count (`wrong_shard`).
 */
function withShards<T extends object>(input: unknown, read: (request: unknown) => Result<T>): Result<T & { shards?: number }> {
  if (typeof input !== "object" || input === null || !Object.hasOwn(input, "shards")) return read(input);
  const { shards, ...request } = input as { shards: unknown };
  if (typeof shards !== "number" || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    return fail("invalid_request", `invalid request: shards: must be an integer 1..${MAX_SHARDS}`, [{ path: ["shards"], message: `must be 1..${MAX_SHARDS}` }]);
  }
  const parsed = read(request);
  return parsed.ok ? ok({ ...parsed.value, shards }) : parsed;
}

/** `read` of an object without its `traceparent`, then that trace context (valid, as stored) added to what it read. */
function withTrace<T extends object>(input: unknown, read: (request: unknown) => Result<T>): Result<T & { traceparent?: string }> {
  if (typeof input !== "object" || input === null || !Object.hasOwn(input, "traceparent")) return read(input);
  const { traceparent, ...request } = input as { traceparent: unknown };
  let stored: string | null = null; // null (or undefined) says: none
  if (traceparent !== undefined && traceparent !== null) {
    const trace = typeof traceparent === "string" ? parseTraceparent(traceparent) : null;
    if (!trace) return fail("invalid_request", `invalid request: traceparent: must be ${TRACEPARENT_FORMAT}`, [{ path: ["traceparent"], message: `must be ${TRACEPARENT_FORMAT}` }]);
    stored = trace.traceparent;
  }
  const parsed = read(request);
  if (!parsed.ok || stored === null) return parsed;
  return ok({ ...parsed.value, traceparent: stored });
}
