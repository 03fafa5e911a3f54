/**
 * One attempt of a pulled job inside the worker runtime: runs its handler with a context like an
 * in-process executor's, renews its lease at a third of it (each renewal's new token replacing the
 * old), and ends with exactly one of: a complete or fail ack, a release (the worker stops), or nothing
 * (its lease is lost or its job cancelled: the handler's signal fires, and whatever it answers later
 * writes nothing).
 *
 * Every write on behalf of the attempt (renew, progress, checkpoint, the final ack) goes through one
 * chain, in order, each with the token current when it is sent: a write never races a renewal that
 * is replacing its token.
 */
import type { AckAnswer } from "../shared/answers.js";
import { MAX_DURATION_MS, MAX_ERROR_MESSAGE_CHARS, MAX_SNOOZE_MS, MAX_STREAM_CHUNK_BYTES, WORKER_REQUEST_TIMEOUT_MS } from "../shared/defaults.js";
import { QueueError, type ErrorCode } from "../shared/errors.js";
import { describeError } from "../shared/describe-error.js";
import { NonRetryableError, RetryAfterError } from "../shared/executor-errors.js";
import type { DependencyOutcome, Job, Json, WaitForOutcome } from "../shared/job.js";
import { MAX_WAITPOINT_TIMEOUT_MS } from "../shared/waitpoint.js";
import { waitpointIdOf } from "../shared/wait-names.js";
import { serializeJson, utf8Length } from "../shared/json.js";
import type { AckItem } from "../shared/schemas.js";
import type { AckBatcher } from "./ack-batcher.js";
import { StreamBatcher } from "./stream-batcher.js";
import { isTransient, type PulledJob, type WorkerHttp } from "./worker-http.js";
import type { WorkerTracing } from "./worker-tracing.js";

/** What a handler gets besides the payload: the same as an in-process executor's context, without `env`. */
export interface WorkerContext {
  /** Fires when the attempt's lease is lost, its job is cancelled, or the worker stops before it returns. Honour it. */
  signal: AbortSignal;
  /** The job as claimed (its lease without the token), with what its dependencies settled as and returned ([] without any). */
  job: Job & { dependencies: DependencyOutcome[] };
  /** 1 for the first attempt. */
  attempt: number;
  /**
   * The W3C `traceparent` the job was enqueued with (`job.traceparent`), or null. With
   * `@opentelemetry/api` installed, the handler already runs in a span whose parent it is.
   */
  traceparent: string | null;
  /**
   * A durable step: the value an earlier attempt recorded under `name`, without running `fn`; else runs
   * `fn`, records its result (JSON) as a checkpoint through the fence, and returns it as later attempts
   * will see it. A record the fence refuses ends the attempt as lost and rejects with the signal's reason.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /** The job's checkpoints: what earlier attempts and this one recorded. */
  checkpoints: { load(): Promise<Record<string, Json>>; save(name: string, value: unknown): Promise<void> };
  /** Reports the job's progress (any JSON, at most 16 KiB), through the fence, keeping the lease. */
  progress(value: unknown): Promise<void>;
  /**
   * The job's stream: `write` sends one chunk (any JSON, at most 64 KiB) through the fence, keeping the
   * lease. Rejects with `payload_too_large` or `stream_limit` (the handler may catch it), writing
   * nothing; a refusal of the fence ends the attempt as lost.
   */
  stream: { write(data: unknown): Promise<void> };
  /**
   * Ends the attempt in a snooze: once the handler returns (whatever it answers), the job is queued
   * again in `ms` (0..a year), the attempt given back and its checkpoints kept. Rejects with a
   * `WorkerSnoozed` at once, so that `await ctx.snooze(ms)` stops the handler there.
   */
  snooze(ms: number): Promise<never>;
  /**
   * A durable wait on the waitpoint `<job id>.<name>` of the job's lane, as an in-process executor's:
   * the first time, it rejects with a `WorkerWaiting` at once, and once the handler returns the attempt
   * ends in a wait (the ack op `wait`: the waitpoint created pending with `timeoutMs` when missing,
   * the attempt given back). The attempt that resumes passes through with `{outcome: "completed",
   * result}` or `{outcome: "timedOut"}`, never a throw. Rejects with `invalid_request` when
   * `<job id>.<name>` is no waitpoint id, or `timeoutMs` is not 1..a year.
   */
  waitFor(name: string, options?: { timeoutMs?: number }): Promise<WaitForOutcome>;
  /** The waitpoint `waitFor(name)` waits on, `<job id>.<name>`, to hand out before waiting (throws as `waitFor` rejects). */
  waitpointId(name: string): string;
}

/** What `ctx.waitFor` rejects with the first time: the attempt ends in a wait on the waitpoint. */
export class WorkerWaiting extends Error {
  override name = "WorkerWaiting";
  readonly waitpoint: string;
  constructor(jobId: string, waitpoint: string) {
    super(`job ${jobId} waits on waitpoint ${waitpoint}`);
    this.waitpoint = waitpoint;
  }
}

/** What `ctx.snooze` rejects with: the attempt ends in a snooze. */
export class WorkerSnoozed extends Error {
  override name = "WorkerSnoozed";
  readonly delayMs: number;
  constructor(jobId: string, delayMs: number) {
    super(`job ${jobId} snoozes for ${delayMs} ms`);
    this.delayMs = delayMs;
  }
}

/** Runs one attempt of a job of its kind. Its return value (JSON) is the job's result; a throw fails the attempt. */
export type WorkerHandler = (payload: any, ctx: WorkerContext) => unknown;

/** Why an attempt's signal fired. */
export type WorkerAbortCause = "lost" | "cancelled" | "stopped";

/** The reason an attempt's signal carries. */
export class WorkerAbortError extends Error {
  override name = "AbortError";
  readonly abortCause: WorkerAbortCause;
  constructor(cause: WorkerAbortCause, jobId: string) {
    super(`attempt of job ${jobId} aborted: ${cause}`);
    this.abortCause = cause;
  }
}

type JobFields = { jobId: string; kind: string; attempt: number };

/** What the runtime tells its `onEvent` hook, one event per thing that happened. */
export type WorkerEvent =
  | ({ type: "claimed" } & JobFields)
  | ({ type: "completed"; durationMs: number } & JobFields)
  | ({ type: "failed"; durationMs: number; error: string; retry: boolean } & JobFields)
  | ({ type: "lost"; reason: string } & JobFields)
  | ({ type: "cancelled" } & JobFields)
  | ({ type: "released" } & JobFields)
  | ({ type: "snoozed"; delayMs: number } & JobFields)
  | ({ type: "waiting"; waitpoint: string } & JobFields)
  | { type: "error"; during: "claim" | "renew" | "ack" | "checkpoint"; message: string; code?: ErrorCode; jobId?: string; willRetry: boolean }
  | { type: "stopped"; drained: boolean; inFlight: number };

export type Counter = "completions" | "failures" | "renewals" | "lost" | "cancelled" | "released" | "snoozed";

export interface AttemptHost {
  readonly http: WorkerHttp;
  readonly acks: AckBatcher;
  readonly leaseMs: number;
  /** Runs each handler inside its job's span (worker-tracing.ts); null: no tracing (set once known, before the first claim). */
  tracing: WorkerTracing | null;
  event(event: WorkerEvent): void;
  count(counter: Counter): void;
}

/** The refusals of the fence that end an attempt, and what they make of it. */
const FENCE_CODES: Partial<Record<ErrorCode, "lost" | "cancelled">> = {
  job_cancelled: "cancelled",
  lease_superseded: "lost",
  lease_expired: "lost",
  job_settled: "lost",
  job_not_found: "lost",
};

export class Attempt {
  private token: string;
  private readonly controller = new AbortController();
  /** Its outcome is decided: sent (or to be sent), or nothing will be. */
  private ended = false;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  /** The lease as this process knows it ends: measured from when the claim or renewal was sent. */
  private leaseUntil: number;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly saved: Record<string, Json> = {};
  /** `ctx.snooze` asked to end the attempt in a snooze of this long (null: it did not). */
  private snoozeMs: number | null = null;
  /** `ctx.waitFor` asked to end the attempt in a wait on this waitpoint (null: it did not). */
  private waitOn: { waitpoint: string; timeoutMs: number | undefined } | null = null;
  private readonly startedAt = Date.now();
  private readonly fields: JobFields;
  /** Settles when the handler has returned (or thrown). */
  readonly returned: Promise<void>;
  /** Settles when the attempt's last write has been answered (or given up). */
  private final: Promise<unknown> = Promise.resolve();

  private readonly host: AttemptHost;
  private readonly job: PulledJob;

  // No parameter properties here: Node runs the client straight from TypeScript by stripping types.
  constructor(host: AttemptHost, job: PulledJob, handler: WorkerHandler, sentAt: number) {
    this.host = host;
    this.job = job;
    this.token = job.lease.token;
    this.leaseUntil = sentAt + host.leaseMs;
    this.fields = { jobId: job.id, kind: job.kind, attempt: job.attempts };
    this.scheduleRenew(host.leaseMs / 3);
    const run = () => handler(job.payload, this.context());
    this.returned = Promise.resolve()
      .then(() => (host.tracing ? host.tracing.run(job, run) : run()))
      .then(
        (value) => this.finish({ ok: true, value }),
        (error: unknown) => this.finish({ ok: false, error }),
      );
  }

  get id(): string {
    return this.job.id;
  }

  /** Whether the handler's answer will still be written (no abort came first). */
  get live(): boolean {
    return !this.ended;
  }

  /** Settles once every write of the attempt has been answered. */
  settled(): Promise<unknown> {
    return this.final;
  }

  /** The worker stops and cannot wait for the handler: the job is given back at once, and the handler aborted. */
  stop(): void {
    if (!this.end("stopped")) return;
    this.final = this.fenced((token) => this.host.acks.push({ op: "release", id: this.job.id, token })).then(
      (answer) => {
        if (answer.ok) {
          this.host.count("released");
          this.host.event({ type: "released", ...this.fields });
        }
      },
      () => undefined, // the ack failed for good (reported): the lease runs out and the job is recovered
    );
  }

  private context(): WorkerContext {
    const { lease, checkpoints: _checkpoints, ...view } = this.job;
    const load = async () => ({ ...this.job.checkpoints, ...this.saved });
    const save = async (name: string, value: unknown) => {
      const json = JSON.parse(JSON.stringify(value ?? null)) as Json;
      await this.write("checkpoint", () => this.fenced((token) => this.host.http.saveCheckpoint(this.job.id, name, { token, value: json }, this.requestTimeout())));
      this.saved[name] = json;
    };
    // A handler's own fenced writes, counted with its checkpoints' (stats.errors.checkpoint): a tick's chunks in one.
    const chunks = new StreamBatcher((batch) => this.write("checkpoint", () => this.fenced((token) => this.host.http.writeStream(this.job.id, { token, chunks: batch }, this.requestTimeout()))));
    return {
      signal: this.controller.signal,
      job: { ...view, lease: { generation: lease.generation, expiresAt: lease.expiresAt } },
      attempt: this.job.attempts,
      traceparent: this.job.traceparent,
      checkpoints: { load, save },
      step: async <T>(name: string, fn: () => T | Promise<T>) => {
        const known = await load();
        if (Object.hasOwn(known, name)) return known[name] as T;
        const value = JSON.parse(JSON.stringify((await fn()) ?? null)) as T;
        await save(name, value);
        return value;
      },
      progress: async (value: unknown) => {
        const answer = await this.write("ack", () => this.fenced((token) => this.host.acks.push({ op: "progress", id: this.job.id, token, progress: value })));
        if (!answer.ok) this.refused(QueueError.from(answer.error));
      },
      stream: {
        write: async (data: unknown) => {
          const chunk = serializeJson(data, "chunk", MAX_STREAM_CHUNK_BYTES);
          if (!chunk.ok) throw QueueError.from(chunk.error);
          await chunks.write(JSON.parse(chunk.value) as Json, utf8Length(chunk.value));
        },
      },
      waitpointId: (name: string) => this.waitpointId(name),
      waitFor: (name: string, options: { timeoutMs?: number } = {}) => {
        try {
          const waitpoint = this.waitpointId(name);
          const timeoutMs = options?.timeoutMs;
          if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_WAITPOINT_TIMEOUT_MS)) {
            throw new QueueError("invalid_request", `waitFor ${name}: timeoutMs must be an integer of 1..${MAX_WAITPOINT_TIMEOUT_MS}`);
          }
          // An earlier attempt waited and its job heard: this one passes through with what it heard.
          const heard = this.job.dependencies.find((d) => "waitpoint" in d && d.waitpoint === waitpoint && d.lane === this.job.lane && d.outcome !== null);
          if (heard) return Promise.resolve<WaitForOutcome>(heard.outcome === "completed" ? { outcome: "completed", result: heard.result } : { outcome: "timedOut" });
          this.waitOn ??= { waitpoint, timeoutMs };
          return Promise.reject(new WorkerWaiting(this.job.id, this.waitOn.waitpoint));
        } catch (error) {
          return Promise.reject(error);
        }
      },
      snooze: (ms: number) => {
        if (!Number.isInteger(ms) || ms < 0 || ms > MAX_SNOOZE_MS) return Promise.reject(new QueueError("invalid_request", `snooze: ms must be an integer of 0..${MAX_SNOOZE_MS}`));
        this.snoozeMs ??= ms;
        return Promise.reject(new WorkerSnoozed(this.job.id, this.snoozeMs));
      },
    };
  }

  /** The waitpoint of a wait: `<job id>.<name>`, which must be a waitpoint id. */
  private waitpointId(name: string): string {
    return waitpointIdOf(this.job.id, name);
  }

  /** A write of the handler's (progress, checkpoint): after the attempt ended, or refused by the fence, it rejects with the signal's reason. */
  private async write<T>(during: "checkpoint" | "ack", send: () => Promise<T>): Promise<T> {
    if (this.ended) throw this.controller.signal.reason ?? new WorkerAbortError("lost", this.job.id);
    try {
      return await send();
    } catch (error) {
      if (!(error instanceof QueueError)) this.host.event({ type: "error", during, message: describeError(error), jobId: this.job.id, willRetry: false });
      throw error instanceof QueueError ? this.refused(error) : error;
    }
  }

  /** A refusal: one of the fence's ends the attempt (and the write rejects with the signal's reason); any other is the write's own. */
  private refused(error: QueueError): never {
    const cause = FENCE_CODES[error.code];
    if (cause) {
      this.abort(cause, error.code);
      throw this.controller.signal.reason;
    }
    throw error;
  }

  /** The handler returned: its answer is the attempt's outcome, unless an abort came first. */
  private finish(ended: { ok: true; value: unknown } | { ok: false; error: unknown }): void {
    if (!this.end(null)) return;
    const durationMs = Date.now() - this.startedAt;
    let item: AckItem;
    if (this.waitOn !== null) {
      item = { op: "wait", id: this.job.id, token: "", waitpoint: this.waitOn.waitpoint };
      if (this.waitOn.timeoutMs !== undefined) item.timeoutMs = this.waitOn.timeoutMs;
    } else if (this.snoozeMs !== null) {
      item = { op: "snooze", id: this.job.id, token: "", delayMs: this.snoozeMs };
    } else if (ended.ok) {
      const result = serializeJson(ended.value, "result");
      item = result.ok
        ? { op: "complete", id: this.job.id, token: "", result: ended.value ?? null }
        : { op: "fail", id: this.job.id, token: "", error: `handler result refused: ${result.error.message}`, retry: false };
    } else {
      // Whatever the handler threw (an Error or not, printable or not) fails the attempt with a readable message.
      const { retry, retryAfterMs } = retryOf(ended.error);
      item = { op: "fail", id: this.job.id, token: "", error: describeError(ended.error).slice(0, MAX_ERROR_MESSAGE_CHARS), retry };
      if (retryAfterMs !== null) item.retryAfterMs = Math.min(MAX_DURATION_MS, retryAfterMs);
    }
    this.final = this.fenced((token) => this.host.acks.push({ ...item, token })).then(
      (answer) => this.answered(item, answer, durationMs),
      () => this.host.count("lost"), // given up after retries (reported): the lease runs out and the job is recovered
    );
  }

  private answered(item: AckItem, answer: AckAnswer, durationMs: number): Promise<void> | void {
    if (!answer.ok && answer.error.code === "invalid_payload" && item.op === "complete") {
      // The lane refused the result (its kind's result schema) and kept the lease: the attempt fails
      // with the refusal's message, retried like any failure, as an in-process executor's would be.
      const failed: AckItem = { op: "fail", id: this.job.id, token: "", error: answer.error.message.slice(0, MAX_ERROR_MESSAGE_CHARS) };
      return this.fenced((token) => this.host.acks.push({ ...failed, token })).then(
        (again) => this.answered(failed, again, durationMs),
        () => this.host.count("lost"),
      );
    }
    if (!answer.ok) {
      const cause = FENCE_CODES[answer.error.code] ?? "lost";
      this.host.count(cause === "cancelled" ? "cancelled" : "lost");
      this.host.event(cause === "cancelled" ? { type: "cancelled", ...this.fields } : { type: "lost", reason: answer.error.code, ...this.fields });
    } else if (item.op === "complete") {
      this.host.count("completions");
      this.host.event({ type: "completed", durationMs, ...this.fields });
    } else if (item.op === "fail") {
      this.host.count("failures");
      this.host.event({ type: "failed", durationMs, error: item.error, retry: item.retry !== false, ...this.fields });
    } else if (item.op === "snooze") {
      this.host.count("snoozed");
      this.host.event({ type: "snoozed", delayMs: item.delayMs, ...this.fields });
    } else if (item.op === "wait") {
      this.host.event({ type: "waiting", waitpoint: item.waitpoint, ...this.fields });
    }
  }

  /** Lost or cancelled: the signal fires, and nothing is written for the attempt again. */
  private abort(cause: "lost" | "cancelled", reason: string): void {
    if (!this.end(cause)) return;
    this.host.count(cause === "cancelled" ? "cancelled" : "lost");
    this.host.event(cause === "cancelled" ? { type: "cancelled", ...this.fields } : { type: "lost", reason, ...this.fields });
  }

  /** The one end of the attempt; false when it had ended already. A cause fires the signal. */
  private end(cause: WorkerAbortCause | null): boolean {
    if (this.ended) return false;
    this.ended = true;
    clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
    if (cause) this.controller.abort(new WorkerAbortError(cause, this.job.id));
    return true;
  }

  private scheduleRenew(delayMs: number): void {
    this.renewTimer = setTimeout(() => {
      this.renewTimer = undefined;
      void this.fenced((token) => this.renew(token));
    }, delayMs);
  }

  private async renew(token: string): Promise<void> {
    if (this.ended) return;
    const sentAt = Date.now();
    try {
      const { lease } = await this.host.http.renew(this.job.id, { token, leaseMs: this.host.leaseMs }, this.requestTimeout());
      this.token = lease.token;
      this.leaseUntil = sentAt + this.host.leaseMs;
      this.host.count("renewals");
      if (!this.ended) this.scheduleRenew(this.host.leaseMs / 3);
    } catch (error) {
      if (this.ended) return;
      const transient = isTransient(error);
      this.host.event({ type: "error", during: "renew", message: describeError(error), jobId: this.job.id, willRetry: transient, ...(error instanceof QueueError ? { code: error.code } : {}) });
      if (!transient) return this.abort(FENCE_CODES[(error as QueueError).code] ?? "lost", (error as QueueError).code);
      const left = this.leaseUntil - Date.now();
      if (left <= 0) return this.abort("lost", "lease ran out while renewals failed");
      this.scheduleRenew(Math.min(1_000, left / 2));
    }
  }

  /** A request on behalf of the attempt waits no longer than its lease may still last (at least a second). */
  private requestTimeout(): number {
    return Math.max(1_000, Math.min(WORKER_REQUEST_TIMEOUT_MS, this.leaseUntil - Date.now()));
  }

  private fenced<T>(op: (token: string) => Promise<T>): Promise<T> {
    const next = this.chain.then(() => op(this.token));
    this.chain = next.catch(() => undefined);
    return next;
  }
}

/** What a thrown value asks of its retry: none (`NonRetryableError`), later (`RetryAfterError`), or the backoff; never a throw. */
function retryOf(error: unknown): { retry: boolean; retryAfterMs: number | null } {
  try {
    if (error instanceof NonRetryableError) return { retry: false, retryAfterMs: null };
    if (error instanceof RetryAfterError) return { retry: true, retryAfterMs: Math.max(0, Math.floor(error.retryAfterMs) || 0) };
  } catch {
    // a hostile value (a proxy whose prototype throws): an ordinary failure
  }
  return { retry: true, retryAfterMs: null };
}
