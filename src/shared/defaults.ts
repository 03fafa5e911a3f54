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

/** Bounds of the enqueue spec's other numbers. */
export const MIN_PRIORITY = -1_000_000;
export const MAX_PRIORITY = 1_000_000;
export const MAX_RECOVERIES_LIMIT = 1000;

/** Lease tokens a client may send back: at most this long. */
export const MAX_TOKEN_CHARS = 256;
/** A claim may name at most this many kinds. */
export const MAX_CLAIM_KINDS = 100;
/** A list cursor is short; anything longer is not one this API gave. */
export const MAX_CURSOR_CHARS = 64;

/**
 * A page of jobs (a list, a claim's answer) holds at most this much JSON (API.md): fewer jobs when
 * they are large, never none while one is there. Far under the 32 MiB of a Durable Object RPC answer
 * and gentle on a Worker's 128 MB of memory.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/** Sweep: how many settled jobs one call deletes when it does not say. */
export const DEFAULT_SWEEP_LIMIT = 10_000;
export const MAX_SWEEP_LIMIT = 100_000;

/** Lease recovery: expired leases handled per statement batch (the alarm loops until a batch is short). */
export const RECOVERY_BATCH = 500;
/** Outcome delivery: `completing` jobs read per flush. */
export const COMPLETING_BATCH = 100;

/** Lease of an in-process attempt; the dispatcher renews it every third of it while the executor runs. */
export const DISPATCH_LEASE_MS = 30_000;
/**
 * An aborted in-process attempt keeps its concurrency slot until its executor returns (API.md). One
 * that has not returned this long after its abort is logged `executor.stuck` and its slot is given
 * back; its job still never gets a second in-process executor while the first has not returned.
 */
export const ABORT_GRACE_MS = 30_000;

/** Schedules (API.md "Schedules"). A schedule's name is a name of at most 100 characters. */
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;
/**
 * A job id: a name, or the id of a schedule's fire, `<schedule name>@<T>` (T in epoch ms). `@` is
 * reserved for those: every route that takes a job id accepts them, no enqueue can choose one.
 */
export const JOB_ID_PATTERN = /^(?:[A-Za-z0-9][A-Za-z0-9._:-]{0,127}|[A-Za-z0-9][A-Za-z0-9._:-]{0,99}@(?:0|[1-9][0-9]{0,15}))$/;
/** The shortest interval of an `everyMs` schedule. */
export const MIN_SCHEDULE_EVERY_MS = 1_000;
/** A cron schedule's time zone when it names none. */
export const DEFAULT_SCHEDULE_TIMEZONE = "UTC";
/** An IANA time zone name is short; anything longer is not one. */
export const MAX_TIMEZONE_CHARS = 64;
export const MAX_CRON_CHARS = 256;
/** Fires per alarm run: when more are due, the alarm comes back at once for the rest. */
export const SCHEDULE_FIRE_BATCH = 500;
/** A page of schedules holds at most this many (and at most `MAX_PAGE_BYTES` of JSON): every list's `limit` bound. */
export const MAX_SCHEDULE_PAGE = MAX_LIST_LIMIT;
/** Lanes the belt (the front worker's cron) checks at once, per page of the registry. */
export const BELT_PAGE = 100;
