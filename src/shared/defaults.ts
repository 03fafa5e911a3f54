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
/** Batch executors (in process and `batch(...)` handlers of createWorker): most jobs started together, and longest a due job waits for company. */
export const MAX_BATCH_EXECUTOR_SIZE = 100;
export const MAX_BATCH_EXECUTOR_WAIT_MS = 60_000;

export const DEFAULT_CONCURRENCY = 10;
export const MAX_CONCURRENCY = 1000;

/** Flow control: a rate limit's bounds (a token bucket of `limit` tokens refilled over `periodMs`). */
export const MAX_RATE_LIMIT = 100_000;
export const MIN_RATE_PERIOD_MS = 100;
export const MAX_RATE_PERIOD_MS = 86_400_000;
/** A queue's concurrency when never configured: a serial key. */
export const DEFAULT_QUEUE_CONCURRENCY = 1;
/** Debounce: how far one enqueue may push its job's `runAt`. */
export const MAX_DEBOUNCE_DELAY_MS = 86_400_000;
/** Dependencies: at most this many per job. */
export const MAX_DEPENDENCIES = 100;
/**
 * The run_at of a blocked job's row: past any runAt an enqueue may give (`MAX_DURATION_MS`), so that
 * no claim, wake term or due count sees it; its own runAt waits in `blocked_run_at`.
 */
export const BLOCKED_RUN_AT = 9_000_000_000_000_000;
/** The outbox: notices per RPC to one lane at most, and their backoff after a failed delivery (doubling, capped). */
export const OUTBOX_BATCH = 500;
export const OUTBOX_BACKOFF_BASE_MS = 100;
export const OUTBOX_BACKOFF_MAX_MS = 60_000;
/** How long a delivery in flight holds its notices before they may be sent again (a crash mid-delivery). */
export const OUTBOX_IN_FLIGHT_MS = 30_000;
/**
 * A stored alarm this far past its instant without having run is taken for lost (the platform can
 * hold an alarm it never scheduled, after a kill between the two) and written again.
 */
export const ALARM_OVERDUE_GRACE_MS = 5_000;
/** A step of the alarm that throws is tried again after a backoff: from the base, doubling per failure, capped. */
export const ALARM_STEP_BACKOFF_BASE_MS = 1_000;
export const ALARM_STEP_BACKOFF_MAX_MS = 60_000;
/** Snooze: the longest delay (a year). */
export const MAX_SNOOZE_MS = 31_536_000_000;
/** TTL: expired jobs settled per alarm (the wake asks again at once while more are due). */
export const EXPIRY_BATCH = 500;

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
 * A page of jobs (a list, a claim's answer) holds at most this much JSON (docs/api.md): fewer jobs when
 * they are large, never none while one is there. Far under the 32 MiB of a Durable Object RPC answer
 * and gentle on a Worker's 128 MB of memory.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/** Sweep: how many settled jobs one call deletes when it does not say. */
export const DEFAULT_SWEEP_LIMIT = 10_000;
export const MAX_SWEEP_LIMIT = 100_000;

/** Lease recovery: expired leases handled per statement batch (the alarm loops until a batch is short). */
export const RECOVERY_BATCH = 500;
/** Outcome delivery: `completing` jobs read per page (a flush reads pages until every one is in hand, or the cap is). */
export const COMPLETING_BATCH = 100;
/** Outcome delivery: at most this many outcomes are handed to the hook at once; the rest wait for one to finish. */
export const MAX_OUTCOMES_IN_HAND = 1_000;

/** Lease of an in-process attempt; the dispatcher renews it every third of it while the executor runs. */
export const DISPATCH_LEASE_MS = 30_000;

/**
 * How long the dispatcher keeps its renewal timer and keep-alive after the last attempt ends:
 * jobs that come one after another share one busy spell instead of setting both up per job.
 */
export const DISPATCH_IDLE_AFTER_MS = 500;
/**
 * An aborted in-process attempt keeps its concurrency slot until its executor returns (docs/api.md). One
 * that has not returned this long after its abort is logged `executor.stuck` and its slot is given
 * back; its job still never gets a second in-process executor while the first has not returned.
 */
export const ABORT_GRACE_MS = 30_000;

/** Retention (docs/api.md "The lane"): a settled job is deleted once it has been settled this long, unless the lane says otherwise. */
export const DEFAULT_COMPLETED_RETENTION_MS = 7 * 24 * 3_600_000;
export const DEFAULT_FAILED_RETENTION_MS = 30 * 24 * 3_600_000;
/** Jobs one retention pass (one alarm) deletes at most, so that no alarm holds the lane for long (≤ 50 ms). */
export const RETENTION_BATCH = 1000;
/**
 * Retention wakes this long after the next horizon rather than at it, so that one pass takes the
 * jobs that expire close together instead of an alarm for each (docs/api.md: within seconds of the horizon).
 */
export const RETENTION_SLACK_MS = 1000;
/** Failing a lane: jobs settled per call at most (docs/api.md). */
export const FAIL_LANE_BATCH = 500;
/** Purging a queue: jobs deleted per transaction; the lane serves other calls between them. */
export const PURGE_BATCH = 1000;
/** Schedules (docs/api.md "Schedules"). A schedule's name is a name of at most 100 characters. */
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;
/**
 * A job id: a name, or the id of a schedule's fire, `<schedule name>@<T>` (T in epoch ms), or a
 * dead-letter copy's `<lane>.<id>` (of any of these; at most 4,096 characters: shared/dead-letters.ts).
 * `@` is reserved for fires and a copy's id may be longer than a name: every route that takes a job
 * id accepts them, no enqueue can choose one.
 */
export const JOB_ID_PATTERN =
  /^(?:[A-Za-z0-9][A-Za-z0-9._:-]{0,127}|[A-Za-z0-9][A-Za-z0-9._:-]{0,99}@(?:0|[1-9][0-9]{0,15})|(?=.{1,4096}$)[A-Za-z0-9][A-Za-z0-9._:-]*\.[A-Za-z0-9][A-Za-z0-9._:-]*(?:@(?:0|[1-9][0-9]{0,15}))?)$/;
/** The shortest interval of an `everyMs` schedule. */
export const MIN_SCHEDULE_EVERY_MS = 1_000;
/** A cron schedule's time zone when it names none. */
export const DEFAULT_SCHEDULE_TIMEZONE = "UTC";
/** An IANA time zone name is short; anything longer is not one. */
export const MAX_TIMEZONE_CHARS = 64;
export const MAX_CRON_CHARS = 256;
/** Fires per alarm run: when more are due, the alarm comes back at once for the rest. */
export const SCHEDULE_FIRE_BATCH = 500;
/** Lanes the belt (the front worker's cron) checks at once, per page of the registry. */
export const BELT_PAGE = 100;
/** Long-poll claims (`waitMs`): the longest a claim may be held waiting for a claimable job. */
export const MAX_CLAIM_WAIT_MS = 30_000;
/**
 * Held claims per lane object: far more consumers than one lane's throughput needs, and a bound on
 * what a flush may ask (one claim statement per distinct set of kinds waited for). A claim that would
 * wait beyond them is answered at once, as with `waitMs` 0 (often `{"jobs": []}`), so the earlier
 * ones keep their place in arrival order; `createWorker` backs off on such an early empty answer.
 */
export const MAX_CLAIM_WAITERS = 256;
/** Held reads (`?waitMs` on a read or an enqueue): the longest one request may wait for its job to settle. */
export const MAX_JOB_WAIT_MS = 30_000;
/**
 * Held reads per lane object. One costs a few hundred bytes and no CPU until its job settles, so the
 * bound is memory's, not the flush's; a read beyond it is answered at once (`busy`), and the front
 * worker and the RPC client ask again a moment later until their `waitMs` is spent.
 */
export const MAX_HELD_READS = 5_000;
/** How long a caller whose held read was answered `busy` waits before asking again. */
export const HELD_READ_RETRY_MS = 250;
/**
 * How many answered long-poll claims the lane remembers (their jobs and tokens) in case the front
 * worker reports that the client left before the answer reached it: those jobs are released at once
 * rather than run out their lease. Only the last few matter: that report comes within milliseconds.
 */
export const ABANDONED_CLAIM_MEMORY = 256;
/** Batch acks: items per request. */
export const MAX_ACKS = 100;
/**
 * Live events (docs/api.md "Live events"): a socket hears the lane's counts at most this often while
 * they change (a lane's own sockets, durable/events/sockets.ts, and a sharded lane's relay, worker/events-relay.ts).
 */
export const COUNTS_INTERVAL_MS = 1_000;

// ---- the pull-worker runtime (src/client/worker.ts) ----

/** Handlers a worker runs at once, unless told. */
export const DEFAULT_WORKER_CONCURRENCY = 10;
/** How long a worker's claim is held in the lane when nothing is claimable (its `waitMs`). */
export const DEFAULT_WORKER_WAIT_MS = 20_000;
/** A request of a worker gives up this long after it was sent (a held claim: after its wait). */
export const WORKER_REQUEST_TIMEOUT_MS = 15_000;
/** A worker whose requests fail waits this long before the next claim, doubling up to the max. */
export const WORKER_BACKOFF_MIN_MS = 250;
export const WORKER_BACKOFF_MAX_MS = 30_000;
/** Acks a worker coalesces go in requests of at most this many bytes (the API takes 1 MiB). */
export const WORKER_ACK_BODY_BYTES = 900 * 1024;
/** Ack requests a worker keeps in flight at once; more acks wait and go together. */
export const WORKER_ACK_REQUESTS = 2;
/** An ack request that fails (network, 5xx) is sent again this many times before its acks are given up. */
export const WORKER_ACK_RETRIES = 3;
/** `stop()` without `graceMs`: how long running handlers may take to finish. */
export const DEFAULT_STOP_GRACE_MS = 30_000;
/** After the grace, how long `stop()` waits for aborted handlers to return before it resolves anyway. */
export const WORKER_ABORT_WAIT_MS = 1_000;
/** A checkpoint's value, serialized, is at most this many bytes (docs/api.md: 413 above). */
export const MAX_CHECKPOINT_BYTES = 128 * 1024;
/** A job holds at most this many checkpoint names (docs/api.md: 409 `checkpoint_limit` beyond). */
export const MAX_CHECKPOINTS_PER_JOB = 1000;
/** A job's checkpoint values, serialized, are at most this many bytes in all (409 `checkpoint_limit` beyond). */
export const MAX_CHECKPOINT_BYTES_PER_JOB = 1024 * 1024;
/** A job's progress, serialized, is at most this many bytes (docs/api.md: 413 above). */
export const MAX_PROGRESS_BYTES = 16 * 1024;
/** A stream chunk, serialized, is at most this many bytes (docs/api.md "Results": 413 above). */
export const MAX_STREAM_CHUNK_BYTES = 64 * 1024;
/** A job's stream holds at most this many chunks (409 `stream_limit` beyond). */
export const MAX_STREAM_CHUNKS_PER_JOB = 1000;
/** A job's stream chunks, serialized, are at most this many bytes in all (409 `stream_limit` beyond). */
export const MAX_STREAM_BYTES_PER_JOB = 1024 * 1024;
/** A stream write carries 1..this many chunks. */
export const MAX_STREAM_CHUNKS_PER_WRITE = 100;
/** A job keeps its last this many progress events in its stream (older ones drop out of replays). */
export const MAX_STREAM_PROGRESS_EVENTS = 100;
/** How long the lane holds a stream reader's call for new events before it answers with none (the front worker asks again). */
export const STREAM_HOLD_MS = 25_000;
/**
 * Held stream readers per lane object, bounded as held reads are (memory's bound, not the flush's): a
 * reader beyond it is answered at once (`busy`), and the SSE route asks again after `STREAM_BUSY_RETRY_MS`.
 */
export const MAX_HELD_STREAM_READERS = 5_000;
/** How long the SSE route waits before asking again a lane that held none of its reader's call (`busy`). */
export const STREAM_BUSY_RETRY_MS = 1_000;
/** A job keeps the last this many failed attempts in `errors`. */
export const MAX_JOB_ERRORS = 20;
