/** An enqueue request with every default applied: the job's spec, whose fields (but `runAt`) are its identity. */
import {
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_MAX_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_RECOVERIES,
  DEFAULT_RECOVERY_WINDOW_MS,
  DEFAULT_TIMEOUT_MS,
} from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import { serializeJson } from "../../shared/json.js";
import type { EnqueueRequest } from "../../shared/schemas.js";
import type { TracedEnqueueRequest } from "../input.js";
import type { JobSpec } from "../store/job-row.js";

/**
 * The spec of a validated request; a payload too large (or not JSON) is refused. Without `runAt` or
 * `delayMs`, a debounced job waits its `debounce.delayMs`; with `ttlMs`, it expires at its runAt +
 * ttlMs; a debounce's deadline is its first enqueue + `maxDelayMs`.
 */
export function toSpec(request: TracedEnqueueRequest, now: number, newId: () => string, lane: string): Result<JobSpec> {
  const payload = serializeJson(request.payload, "payload");
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
  });
}

/**
 * A request's dependencies, each lane named (the enqueue's own by default), as canonical JSON text;
 * null for none. The same job twice, or the job itself, is refused naming the item.
 */
function dependencies(request: EnqueueRequest, id: string, lane: string): Result<string | null> {
  if (request.dependsOn === undefined) return ok(null);
  const seen = new Set<string>();
  const refs: { lane: string; id: string }[] = [];
  for (const [i, dep] of request.dependsOn.entries()) {
    const ref = { lane: dep.lane ?? lane, id: dep.id };
    const key = `${ref.lane}\u0000${ref.id}`;
    const refused = ref.lane === lane && ref.id === id ? "names the job itself" : seen.has(key) ? "names the same job as an earlier item" : null;
    if (refused) return fail("invalid_request", `invalid request: dependsOn.${i}: dependsOn[${i}] ${refused}`, [{ path: ["dependsOn", i], message: `dependsOn[${i}] ${refused}` }]);
    seen.add(key);
    refs.push(ref);
  }
  return ok(JSON.stringify(refs));
}
