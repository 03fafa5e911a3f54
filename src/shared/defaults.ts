/** Every tunable of the queue and its default, in one place. Validated at enqueue time. */

/** Names (lane, job id, kind, queue). */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export const MAX_PAYLOAD_BYTES = 128 * 1024;
export const MAX_BODY_BYTES = 1024 * 1024;
export const MAX_BATCH_JOBS = 1000;
/**
 * How deeply a body's arrays and objects may nest. Durable Object RPC serializes recursively and runs
 * out of stack in the low thousands, which would turn a client's body into a 500; no job needs this.
 */
export const MAX_BODY_DEPTH = 128;

export const DEFAULT_MAX_ATTEMPTS = 3;
export const MAX_ATTEMPTS_LIMIT = 100;
export const DEFAULT_BACKOFF_BASE_MS = 1_000;
export const DEFAULT_BACKOFF_MAX_MS = 300_000;
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_RECOVERIES = 3;
export const DEFAULT_RECOVERY_WINDOW_MS = 3_600_000;

export const DEFAULT_LEASE_MS = 30_000;
export const MIN_LEASE_MS = 100;
export const MAX_LEASE_MS = 3_600_000;
export const MAX_CLAIM = 100;

export const DEFAULT_CONCURRENCY = 10;
export const MAX_CONCURRENCY = 1000;

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 500;

/** Upper bound of any delay, duration or instant we accept (about 285 years of ms; fits SQLite and JSON). */
export const MAX_DURATION_MS = 9_000_000_000_000;
export const MAX_ERROR_MESSAGE_CHARS = 4096;
export const MAX_REASON_CHARS = 1024;
