/**
 * Test executors and a transition recorder. Tests and lanes share one isolate in the Workers Vitest
 * integration, so a test can hold the gate an executor waits on, see its signal, and await a job's
 * transitions without polling.
 */
import type { ExecutorContext, ExecutorRegistry } from "../../src/durable/attempts/executors.js";
import { NonRetryableError, RetryAfterError } from "../../src/durable/attempts/executors.js";
import type { LostEvent, TransitionEvent } from "../../src/durable/lane.js";
import type { Job } from "../../src/shared/job.js";

/** One started attempt of a `test.gate` job. */
export interface GateAttempt {
  attempt: number;
  signal: AbortSignal;
  /** The attempt's whole context: a test drives its steps, checkpoints and progress. */
  ctx: ExecutorContext;
  open(result?: unknown): void;
  throw(error: Error): void;
}

export interface Gate {
  /** The payload's `gate` value. */
  readonly key: string;
  readonly attempts: GateAttempt[];
  /** Resolves with attempt number `n` (1-based among this gate's starts) once it has started. */
  started(n?: number): Promise<GateAttempt>;
}

const gates = new Map<string, { gate: Gate; waiters: ((a: GateAttempt) => void)[] }>();

/** A gate for jobs whose payload is `{ gate: key }` (kind `test.gate`). */
export function gate(key: string = crypto.randomUUID()): Gate {
  const attempts: GateAttempt[] = [];
  const waiters: ((a: GateAttempt) => void)[] = [];
  const g: Gate = {
    key,
    attempts,
    started(n = 1) {
      const have = attempts[n - 1];
      if (have) return Promise.resolve(have);
      return new Promise((resolve) => waiters.push((a) => attempts.length >= n && resolve(attempts[n - 1]!)));
    },
  };
  gates.set(key, { gate: g, waiters });
  return g;
}

const events: TransitionEvent[] = [];
const watchers = new Set<() => void>();

/** Every transition any TestLane made, in order. */
export function transitions(jobId?: string): TransitionEvent[] {
  return jobId === undefined ? [...events] : events.filter((e) => e.jobId === jobId);
}

export function recordTransition(event: TransitionEvent): void {
  events.push(event);
  for (const watch of [...watchers]) watch();
}

const lostAttempts: { event: LostEvent; job: Job }[] = [];

/** Every in-process attempt of a TestLane that lost its lease, as its `onLost` hook heard it. */
export function lost(jobId: string): { event: LostEvent; job: Job }[] {
  return lostAttempts.filter((l) => l.event.jobId === jobId);
}

export function recordLost(event: LostEvent, job: Job): void {
  lostAttempts.push({ event, job });
}

/** Resolves with the first transition of `jobId` matching `predicate`, past or future. */
export function waitForTransition(
  jobId: string,
  predicate: (e: TransitionEvent) => boolean = (e) => e.to === "settled",
): Promise<TransitionEvent> {
  return new Promise((resolve) => {
    const check = () => {
      const hit = events.find((e) => e.jobId === jobId && predicate(e));
      if (!hit) return false;
      watchers.delete(watch);
      resolve(hit);
      return true;
    };
    const watch = () => void check();
    if (!check()) watchers.add(watch);
  });
}

export const testExecutors: ExecutorRegistry = {
  /** Waits for its gate; on abort it rejects only if the payload says `honour: true`. */
  "test.gate": (payload: { gate: string; honour?: boolean }, ctx) => {
    const { signal, attempt } = ctx;
    const entry = gates.get(payload.gate);
    if (!entry) throw new Error(`no gate ${payload.gate}`);
    return new Promise((resolve, reject) => {
      const started: GateAttempt = { attempt, signal, ctx, open: (r) => resolve(r ?? { gate: payload.gate }), throw: reject };
      signal.addEventListener("abort", () => {
        if (payload.honour) reject(signal.reason as Error);
      });
      entry.gate.attempts.push(started);
      for (const wake of entry.waiters) wake(started);
    });
  },
  /** Fails at once, never to be retried. */
  "test.fatal": () => {
    throw new NonRetryableError("fatal: do not retry");
  },
  /** Asks for a retry after `payload.ms` on its first attempt, then completes. */
  "test.retry-after": (payload: { ms: number }, { attempt }) => {
    if (attempt === 1) throw new RetryAfterError("not yet", payload.ms);
    return { attempt };
  },
  /**
   * Takes its steps, progress and checkpoints from a spread copy of its context, destructured, as
   * user code may: the context's members must behave as plain fields (they are made on first use).
   */
  "test.context-copy": async (_payload, ctx) => {
    const { step, progress, checkpoints, attempt, job } = { ...ctx };
    const a = await step("a", () => attempt);
    await progress({ a });
    await checkpoints.save("b", job.id);
    return { a, loaded: await checkpoints.load(), keys: Object.keys(ctx).sort() };
  },
  /** Returns something JSON cannot hold. */
  "test.bad-result": () => ({ big: 1n }),
  /** Returns the trace context it was handed, and its job's. */
  "test.trace": (_payload, ctx) => ({ traceparent: ctx.traceparent, job: ctx.job.traceparent }),
};
