/**
 * The pull-worker runtime: runs a lane's jobs outside Cloudflare — a GPU box, a private
 * network, a long CPU run — over the HTTP API, in Node ≥ 20 or inside a Worker (plain `fetch`, no
 * `cloudflare:*`).
 *
 * ```ts
 * const worker = createWorker({
 *   url: "https://queue.example.com", token: process.env.QUEUE_TOKEN!, lane: "tenant-7",
 *   handlers: { "video.encode": async (payload, ctx) => encode(payload, { signal: ctx.signal }) },
 * });
 * process.on("SIGTERM", async () => console.log(await worker.stop({ graceMs: 10_000 })));
 * ```
 *
 * Claims are long-polled (`waitMs`: the lane answers one the moment a job is claimable) and sized to
 * the free slots, one in flight per 100 slots; each job runs in an `Attempt` (worker-attempt.ts:
 * renewal, abort, its one outcome); outcomes are coalesced into batch acks (ack-batcher.ts).
 */
import {
  DEFAULT_LEASE_MS,
  DEFAULT_STOP_GRACE_MS,
  DEFAULT_WORKER_CONCURRENCY,
  DEFAULT_WORKER_WAIT_MS,
  MAX_CLAIM,
  MAX_CLAIM_WAIT_MS,
  MAX_CONCURRENCY,
  MAX_LEASE_MS,
  MIN_LEASE_MS,
  WORKER_ABORT_WAIT_MS,
  WORKER_BACKOFF_MAX_MS,
  WORKER_BACKOFF_MIN_MS,
  WORKER_REQUEST_TIMEOUT_MS,
} from "../shared/defaults.js";
import { describeError } from "../shared/describe-error.js";
import { QueueError } from "../shared/errors.js";
import { AckBatcher } from "./ack-batcher.js";
import { Attempt, WorkerSnoozed, WorkerWaiting, type AttemptHost, type Counter, type WorkerEvent, type WorkerHandler } from "./worker-attempt.js";
import { createWorkerHttp, type PulledJob } from "./worker-http.js";
import { loadOpenTelemetry, workerTracing } from "./worker-tracing.js";
import { batchHandlers, batchOf, type WorkerBatchOptions } from "./worker-batch.js";
import { withWhole, type ReadValue } from "./worker-held.js";

export type { WorkerAbortCause, WorkerContext, WorkerEvent, WorkerHandler } from "./worker-attempt.js";
export { WorkerAbortError, WorkerSnoozed, WorkerWaiting } from "./worker-attempt.js";
export { NonRetryableError, RetryAfterError } from "../shared/executor-errors.js";
export { batch, type BatchJobAnswer, type WorkerBatchHandler, type WorkerBatchJob, type WorkerBatchOptions } from "./worker-batch.js";

export interface WorkerOptions {
  /** Where the API is served, e.g. `https://queue.example.com` (no `/v1`). */
  url: string;
  /** A bearer token of the API's `API_TOKEN` list. */
  token: string;
  /** The lane whose jobs this worker runs. */
  lane: string;
  /** Kind → handler: a function of one job, or `batch({size, waitMs, run})` for jobs run together (worker-batch.ts). */
  handlers: Readonly<Record<string, WorkerHandler>>;
  /** The kinds to claim; default: every kind of `handlers` (each must have one). */
  kinds?: readonly string[];
  /** Handlers run at once (1..1000); default 10. Each claim asks for free slots, at most 100; one claim is in flight per 100 slots. */
  concurrency?: number;
  /** Lease of each claimed job (100..3,600,000 ms), renewed at every third of it; default 30,000. */
  leaseMs?: number;
  /** How long a claim is held in the lane while nothing is claimable (0..30,000 ms); default 20,000. */
  waitMs?: number;
  /** Told of everything that happens (claims, outcomes, losses, request errors), e.g. to log it. A throw is ignored. */
  onEvent?: (event: WorkerEvent) => void;
  /** Replaces the global `fetch` (a service binding's, a test's). */
  fetch?: typeof fetch;
}

export interface WorkerStats {
  /** Jobs claimed. */
  claims: number;
  /** Attempts acknowledged completed, and failed (retried or not). */
  completions: number;
  failures: number;
  /** Lease renewals that succeeded. */
  renewals: number;
  /** Attempts whose lease was lost (superseded, expired, settled) before their outcome was written. */
  lost: number;
  /** Attempts ended by a cancellation of their job. */
  cancelled: number;
  /** Jobs given back (the worker stopped before their handler returned). */
  released: number;
  /** Attempts that snoozed their job (`ctx.snooze`). */
  snoozed: number;
  /**
   * Requests of the worker that failed, by what they were for (each failure once, retried or not):
   * a claim that could not reach the lane, a renewal, an ack or a checkpoint write. The lane cannot
   * count these itself: a request that fails never reaches it, or is refused before anything happens.
   */
  errors: { claim: number; renew: number; ack: number; checkpoint: number };
  /** Handlers running now. */
  inFlight: number;
}

export interface PullWorker {
  /** Counters since the start, and the handlers running now. */
  stats(): WorkerStats;
  /**
   * Stops claiming, lets running handlers finish for up to `graceMs` (default 30 s) and acknowledges
   * their outcomes; handlers still running then are aborted and their jobs released for another worker.
   * Resolves once no request, timer or handler of the worker is left (an aborted handler that ignores
   * its signal is waited for one more second, and then no longer: nothing it answers is written).
   * `drained`: every handler finished in time; `inFlight`: how many did not.
   */
  stop(options?: { graceMs?: number }): Promise<{ drained: boolean; inFlight: number }>;
  /** Settles when the worker has stopped. */
  readonly stopped: Promise<{ drained: boolean; inFlight: number }>;
}

export function createWorker(options: WorkerOptions): PullWorker {
  const kinds = options.kinds ?? Object.keys(options.handlers);
  if (kinds.length === 0) throw new QueueError("invalid_request", "a worker needs at least one kind to claim");
  for (const kind of kinds) if (!options.handlers[kind]) throw new QueueError("invalid_request", `no handler for kind ${kind}`);
  const concurrency = options.concurrency ?? DEFAULT_WORKER_CONCURRENCY;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const waitMs = options.waitMs ?? DEFAULT_WORKER_WAIT_MS;
  // Checked here, once: the API would refuse every claim of a worker set up outside them.
  const within = (what: string, value: number, min: number, max: number) => {
    if (!Number.isInteger(value) || value < min || value > max) throw new QueueError("invalid_request", `${what} must be an integer in ${min}..${max}`);
  };
  within("concurrency", concurrency, 1, MAX_CONCURRENCY);
  within("leaseMs", leaseMs, MIN_LEASE_MS, MAX_LEASE_MS);
  within("waitMs", waitMs, 0, MAX_CLAIM_WAIT_MS);
  const http = createWorkerHttp(options);
  const counters: Omit<WorkerStats, "inFlight" | "errors"> = { claims: 0, completions: 0, failures: 0, renewals: 0, lost: 0, cancelled: 0, released: 0, snoozed: 0 };
  const errors: WorkerStats["errors"] = { claim: 0, renew: 0, ack: 0, checkpoint: 0 };
  const running = new Set<Attempt>();
  /** Attempts that ended and whose writes are not all answered yet. */
  const writing = new Set<Promise<unknown>>();
  /** Fires when the worker begins to stop: cuts the claim loop's pauses short. */
  const halt = new AbortController();
  /** Claims in flight, and the slots they asked for. */
  const claiming = new Set<AbortController>();
  let reserved = 0;
  /** Claim loops waiting for a free slot. */
  const slotWaiters: (() => void)[] = [];
  const slotFreed = () => {
    for (const resolve of slotWaiters.splice(0)) resolve();
  };

  const event = (e: WorkerEvent) => {
    if (e.type === "error") errors[e.during]++;
    try {
      options.onEvent?.(e);
    } catch {
      // a logging hook's bug is not the worker's
    }
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (halt.signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        halt.signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      halt.signal.addEventListener("abort", done);
    });

  const acks = new AckBatcher({
    send: (body) => http.acks(body, WORKER_REQUEST_TIMEOUT_MS),
    failed: (error, willRetry) => event({ type: "error", during: "ack", message: describeError(error), willRetry, ...(error instanceof QueueError ? { code: error.code } : {}) }),
    // Not cut short by a stop: the acks of a stopping worker are what it is waiting for.
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  });
  const host: AttemptHost = { http, acks, leaseMs, tracing: null, event, count: (c: Counter) => void counters[c]++ };
  // Spans when `@opentelemetry/api` is there (an optional peer dependency): known before the first claim.
  const tracingLoaded = loadOpenTelemetry().then((api) => void (host.tracing = workerTracing(api, (error) => error instanceof WorkerSnoozed || error instanceof WorkerWaiting)));

  const read: ReadValue = (which, id, lane) => http.value(which, id, lane, WORKER_REQUEST_TIMEOUT_MS);
  function start(job: PulledJob, sentAt: number, handler: WorkerHandler = withWhole(options.handlers[job.kind]!, read)): void {
    counters.claims++;
    event({ type: "claimed", jobId: job.id, kind: job.kind, attempt: job.attempts });
    const attempt = new Attempt(host, job, handler, sentAt);
    running.add(attempt);
    void attempt.returned.then(() => {
      running.delete(attempt);
      const written = attempt.settled();
      writing.add(written);
      void written.finally(() => writing.delete(written));
      slotFreed();
    });
  }

  /** Jobs a claim answered after the worker began to stop: given back at once. */
  function giveBack(jobs: PulledJob[]): void {
    for (const job of jobs) {
      const released = acks.push({ op: "release", id: job.id, token: job.lease.token }).then(
        (answer) => {
          if (!answer.ok) return;
          counters.released++;
          event({ type: "released", jobId: job.id, kind: job.kind, attempt: job.attempts });
        },
        () => undefined,
      );
      writing.add(released);
      void released.finally(() => writing.delete(released));
    }
  }

  let stopping = false;
  /**
   * One claim loop per 100 slots (a claim takes at most 100 jobs): a worker of high concurrency keeps
   * that many claims in flight, so that its throughput is not one claim per round trip.
   */
  async function claimLoop(claimKinds: readonly string[], batched: WorkerBatchOptions | null): Promise<void> {
    await tracingLoaded;
    let backoffMs = WORKER_BACKOFF_MIN_MS;
    while (!stopping) {
      const free = concurrency - running.size - reserved;
      if (free <= 0) {
        await new Promise<void>((resolve) => slotWaiters.push(resolve));
        continue;
      }
      const max = Math.min(free, batched?.size ?? MAX_CLAIM);
      // A batch kind's claim waits for a whole batch (minJobs), or its own waitMs.
      const ask = batched ? { max, minJobs: max, waitMs: batched.waitMs } : { max, waitMs };
      const controller = new AbortController();
      claiming.add(controller);
      reserved += max;
      const sentAt = Date.now();
      let jobs: PulledJob[];
      try {
        ({ jobs } = await http.claim({ kinds: [...claimKinds], leaseMs, ...ask }, controller.signal, ask.waitMs + WORKER_REQUEST_TIMEOUT_MS));
      } catch (error) {
        if (stopping) break;
        event({ type: "error", during: "claim", message: describeError(error), willRetry: true, ...(error instanceof QueueError ? { code: error.code } : {}) });
        await sleep(backoffMs);
        backoffMs = Math.min(WORKER_BACKOFF_MAX_MS, backoffMs * 2);
        continue;
      } finally {
        claiming.delete(controller);
        reserved -= max;
        slotFreed(); // what this claim did not fill, another loop may ask for
      }
      backoffMs = WORKER_BACKOFF_MIN_MS;
      if (stopping) {
        giveBack(jobs);
        break;
      }
      if (batched && jobs.length > 0) {
        const handlerOf = batchHandlers(batched, jobs.length, read);
        jobs.forEach((job, i) => start(job, sentAt, handlerOf(i)));
      } else for (const job of jobs) start(job, sentAt);
      // Empty long before its wait was over (the lane holds as many claims as it may), or no wait at
      // all: a pause, not a busy loop.
      if (jobs.length === 0 && (ask.waitMs === 0 || Date.now() - sentAt < ask.waitMs / 2)) await sleep(WORKER_BACKOFF_MIN_MS * (1 + Math.random()));
    }
  }

  // Single-job kinds share the claim loops; each batch kind claims in a loop of its own.
  const singleKinds = kinds.filter((kind) => batchOf(options.handlers[kind]) === null);
  const loop = Promise.all([
    ...(singleKinds.length === 0 ? [] : Array.from({ length: Math.ceil(concurrency / MAX_CLAIM) }, () => claimLoop(singleKinds, null))),
    ...kinds.flatMap((kind) => {
      const batched = batchOf(options.handlers[kind]);
      return batched ? [claimLoop([kind], batched)] : [];
    }),
  ]);
  let resolveStopped!: (value: { drained: boolean; inFlight: number }) => void;
  const stopped = new Promise<{ drained: boolean; inFlight: number }>((resolve) => (resolveStopped = resolve));
  let stopCall: Promise<{ drained: boolean; inFlight: number }> | null = null;

  async function stop(graceMs: number): Promise<{ drained: boolean; inFlight: number }> {
    stopping = true;
    halt.abort();
    for (const controller of claiming) controller.abort(new Error("the worker is stopping"));
    slotFreed();
    await loop;
    const handlers = Promise.all([...running].map((a) => a.returned));
    await waitAtMost(handlers, graceMs);
    const late = [...running];
    for (const attempt of late) attempt.stop();
    await waitAtMost(Promise.all(late.map((a) => a.returned)), WORKER_ABORT_WAIT_MS);
    // Every ack, release and write of every attempt, answered or given up; then nothing is left.
    await Promise.all([...late.map((a) => a.settled()), ...writing]);
    await acks.drained();
    const result = { drained: late.length === 0, inFlight: late.length };
    event({ type: "stopped", ...result });
    resolveStopped(result);
    return result;
  }

  return {
    stats: () => ({ ...counters, errors: { ...errors }, inFlight: running.size }),
    stop: (stopOptions = {}) => (stopCall ??= stop(stopOptions.graceMs ?? DEFAULT_STOP_GRACE_MS)),
    stopped,
  };
}

/** Waits for `promise` at most `ms`, leaving no timer behind. */
async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
