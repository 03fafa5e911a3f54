/** An enqueue request with every default applied: the job's spec, whose fields (but `runAt`) are its identity. */
import {
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_MAX_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_RECOVERIES,
  DEFAULT_RECOVERY_WINDOW_MS,
  DEFAULT_TIMEOUT_MS,
} from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import { serializeJson } from "../../shared/json.js";
import type { EnqueueRequest } from "../../shared/schemas.js";
import type { JobSpec } from "../store/job-row.js";

/**
 * The spec of a validated request; a payload too large (or not JSON) is refused. Without `runAt` or
 * `delayMs`, a debounced job waits its `debounce.delayMs`; with `ttlMs`, it expires at its runAt +
 * ttlMs; a debounce's deadline is its first enqueue + `maxDelayMs`.
 */
export function toSpec(request: EnqueueRequest, now: number, newId: () => string): Result<JobSpec> {
  const payload = serializeJson(request.payload, "payload");
  if (!payload.ok) return payload;
  const { debounce } = request;
  const runAt = request.runAt ?? now + (request.delayMs ?? debounce?.delayMs ?? 0);
  const ttlMs = request.ttlMs ?? null;
  return ok({
    id: request.id ?? newId(),
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
  });
}
