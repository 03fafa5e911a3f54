/**
 * An enqueue request with every default applied: the job's spec, whose fields (but `runAt`) are its
 * identity; and the job a new spec is once written. Shared: the lane builds its answer from them, and
 * a caller that reads a new job's id and creation time builds the same job from its own request.
 */
import {
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_MAX_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_RECOVERIES,
  DEFAULT_RECOVERY_WINDOW_MS,
  DEFAULT_TIMEOUT_MS,
  MAX_PAYLOAD_BYTES,
} from "./defaults.js";
import type { TracedEnqueueRequest } from "./enqueue-input.js";
import { fail, ok, type Result } from "./errors.js";
import type { DependsOnItem, Job, Json } from "./job.js";
import { exceedsBytes, serializeJson } from "./json.js";
import type { EnqueueRequest } from "./schemas.js";

/** A validated, defaulted enqueue request, ready to insert. Every field is part of the job's identity but `runAt`. */
export interface JobSpec {
  id: string;
  kind: string;
  /** The payload as JSON text. */
  payload: string;
  queue: string | null;
  priority: number;
  runAt: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number;
  maxRecoveries: number;
  recoveryWindowMs: number;
  /** Not started by `expiresAt` (= runAt + ttlMs): settled cancelled, "expired". */
  ttlMs: number | null;
  expiresAt: number | null;
  /** The request's debounce, as JSON text (part of the identity), and its key and deadline apart. */
  debounce: string | null;
  debounceKey: string | null;
  /** The latest runAt a debounced push may set: the first enqueue + maxDelayMs (null: no cap). */
  debounceDeadline: number | null;
  /** The jobs and waitpoints it waits for, each lane named (its own lane too), as JSON text (part of the identity); null: none. */
  dependsOn: string | null;
  /** What a dependency that does not complete does to it (null: it has none). */
  dependencyFailure: "fail" | "ignore" | null;
  /** The W3C trace context of the enqueue (validated; not part of the identity), or null. */
  traceparent: string | null;
  /** Set when the payload's JSON is over 128 KiB and the lane keeps such payloads in R2: `payload` is the text to hold there. */
  heldPayload?: true;
}

/**
 * The spec of a validated request; a payload too large (or not JSON) is refused. Without `runAt` or
 * `delayMs`, a debounced job waits its `debounce.delayMs`; with `ttlMs`, it expires at its runAt +
 * ttlMs; a debounce's deadline is its first enqueue + `maxDelayMs`.
 */
export function toSpec(request: TracedEnqueueRequest, now: number, newId: () => string, lane: string, heldLimit?: number): Result<JobSpec> {
  const payload = serializeJson(request.payload, "payload", heldLimit);
  if (!payload.ok) return payload;
  const { debounce } = request;
  const runAt = request.runAt ?? now + (request.delayMs ?? debounce?.delayMs ?? 0);
  const ttlMs = request.ttlMs ?? null;
  const id = request.id ?? newId();
  const dependsOn = dependencies(request, id, lane);
  if (!dependsOn.ok) return dependsOn;
  return ok({
    id,
    kind: request.kind,
    payload: payload.value,
    queue: request.queue ?? null,
    priority: request.priority ?? 0,
    runAt,
    maxAttempts: request.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    backoffBaseMs: request.backoff?.baseMs ?? DEFAULT_BACKOFF_BASE_MS,
    backoffMaxMs: request.backoff?.maxMs ?? DEFAULT_BACKOFF_MAX_MS,
    timeoutMs: request.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxRecoveries: request.recovery?.maxRecoveries ?? DEFAULT_MAX_RECOVERIES,
    recoveryWindowMs: request.recovery?.windowMs ?? DEFAULT_RECOVERY_WINDOW_MS,
    ttlMs,
    expiresAt: ttlMs === null ? null : runAt + ttlMs,
    // Canonical text, so that the same debounce compares equal however its request spelled it.
    debounce: debounce ? JSON.stringify({ key: debounce.key, delayMs: debounce.delayMs, maxDelayMs: debounce.maxDelayMs ?? null }) : null,
    debounceKey: debounce?.key ?? null,
    debounceDeadline: debounce?.maxDelayMs === undefined ? null : now + debounce.maxDelayMs,
    dependsOn: dependsOn.value,
    dependencyFailure: dependsOn.value === null ? null : (request.dependencyFailure ?? "fail"),
    traceparent: request.traceparent ?? null,
    // Measured once more only when the lane holds big payloads (the 413's measure said "under 16 MiB").
    ...(heldLimit !== undefined && exceedsBytes(payload.value, MAX_PAYLOAD_BYTES) ? { heldPayload: true as const } : {}),
  });
}

/**
 * A request's dependencies, each lane named (the enqueue's own by default), as canonical JSON text;
 * null for none. The same job twice, or the job itself, is refused naming the item.
 */
function dependencies(request: EnqueueRequest, id: string, lane: string): Result<string | null> {
  if (request.dependsOn === undefined) return ok(null);
  const seen = new Set<string>();
  const refs: DependsOnItem[] = [];
  for (const [i, dep] of request.dependsOn.entries()) {
    const ref = "id" in dep ? { lane: dep.lane ?? lane, id: dep.id } : { lane: dep.lane ?? lane, waitpoint: dep.waitpoint };
    const key = "id" in ref ? `${ref.lane}\u0000${ref.id}` : `${ref.lane}\u0000\u0000${ref.waitpoint}`;
    const refused = "id" in ref && ref.lane === lane && ref.id === id ? "names the job itself" : seen.has(key) ? `names the same ${"id" in ref ? "job" : "waitpoint"} as an earlier item` : null;
    if (refused) return fail("invalid_request", `invalid request: dependsOn.${i}: dependsOn[${i}] ${refused}`, [{ path: ["dependsOn", i], message: `dependsOn[${i}] ${refused}` }]);
    seen.add(key);
    refs.push(ref);
  }
  return ok(JSON.stringify(refs));
}

/**
 * The job a new enqueue wrote at `at`, as the enqueue answers it: built from its spec, never read
 * back, field for field (and key for key) the stored row's job (the store's `toJob`). `payload`: the
 * payload's value, when the caller has it already (else parsed from the spec's text).
 */
export function enqueuedJob(spec: JobSpec, at: number, lane: string, payload: Json = JSON.parse(spec.payload) as Json): Job {
  return {
    id: spec.id,
    lane,
    kind: spec.kind,
    payload,
    payloadRef: null,
    queue: spec.queue,
    priority: spec.priority,
    runAt: spec.runAt,
    state: "queued",
    outcome: null,
    attempts: 0,
    generation: 0,
    maxAttempts: spec.maxAttempts,
    timeoutMs: spec.timeoutMs,
    result: null,
    resultRef: null,
    error: null,
    errors: [],
    progress: null,
    cancelRequested: false,
    lease: null,
    expiresAt: spec.expiresAt,
    dependsOn: spec.dependsOn === null ? [] : (JSON.parse(spec.dependsOn) as DependsOnItem[]),
    traceparent: spec.traceparent,
    createdAt: at,
    updatedAt: at,
    settledAt: null,
  };
}
