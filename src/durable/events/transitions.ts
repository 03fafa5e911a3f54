/**
 * The transition log of a lane: every change of a job's state, told once the write is durable, as a
 * log line, to the `onTransition` hook, and to whoever else listens (events).
 */
import { log, type TransitionEvent } from "../../shared/log.js";
import { describeError } from "../../shared/describe-error.js";
import { traceIdOf } from "../../shared/trace.js";
import type { Transition } from "../store/job-store.js";

export interface TransitionLogOptions {
  lane: string;
  /** One JSON log line per transition. */
  log: boolean;
  onTransition?: ((event: TransitionEvent) => void) | undefined;
  /** Waits until every write so far is durable (`ctx.storage.sync()`). */
  durable: () => Promise<void>;
  now: () => number;
}

export class TransitionLog {
  /** Transitions written whose wait for durability has not been asked for yet. */
  private unannounced: TransitionEvent[] = [];
  /** Whether a wait for durability is in flight (the transitions it covers are its own). */
  private confirming = false;
  private readonly listeners = new Set<(event: TransitionEvent) => void>();

  constructor(private readonly options: TransitionLogOptions) {}

  /** Whether anyone listens: when nobody does, the store is not asked to describe its transitions. */
  get wanted(): boolean {
    return this.options.log || this.options.onTransition !== undefined || this.listeners.size > 0;
  }

  /** Adds a listener (told after the log and the hook); returns its removal. */
  listen(listener: (event: TransitionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A transition was written (not yet durable). */
  record(t: Transition): void {
    const event: TransitionEvent = {
      event: "job.transition",
      lane: this.options.lane,
      jobId: t.job.id,
      kind: t.job.kind,
      from: t.from,
      to: t.to,
      outcome: t.job.outcome,
      attempt: t.job.attempts,
      generation: t.job.generation,
      durationMs: t.durationMs,
      at: t.at ?? this.options.now(),
    };
    // The subject's row gave its traceparent with the columns it was read with: no read of its own.
    if (t.job.traceparent !== null) event.traceId = traceIdOf(t.job.traceparent);
    this.unannounced.push(event);
    // Told only once the write is durable: a crash before the commit must not leave a line (or a hook
    // call) for a transition that never happened. The price: a crash right after the commit can lose
    // the line instead. The wait is asked for after the write (at the end of its synchronous stretch,
    // so a claim of many jobs waits once), and covers only what was written before it: transitions
    // written while an earlier wait is in flight wait for one of their own, asked for when it ends.
    if (this.unannounced.length === 1 && !this.confirming) queueMicrotask(() => this.confirm());
  }

  /** Waits for durability of the transitions written so far, tells them, then does the same for any written meanwhile. */
  private confirm(): void {
    const batch = this.unannounced;
    this.unannounced = [];
    if (batch.length === 0) return;
    this.confirming = true;
    const next = () => {
      this.confirming = false;
      this.confirm();
    };
    void this.options.durable().then(
      () => {
        this.announce(batch);
        next();
      },
      (error: unknown) => {
        // A wait that fails says so and drops what it held, so that the transitions written after it
        // are told as usual (they wait on a wait of their own).
        log({ event: "lane.transitions_unconfirmed", lane: this.options.lane, count: batch.length, message: describeError(error) });
        next();
      },
    );
  }

  private announce(events: readonly TransitionEvent[]): void {
    for (const event of events) {
      if (this.options.log) log(event);
      this.tell("onTransition", this.options.onTransition, event);
      for (const listener of this.listeners) this.tell("onTransition", listener, event);
    }
  }

  /** Calls a hook; a throw is logged, never fatal. */
  tell<E extends { jobId: string }>(hook: "onTransition" | "onLost", listener: ((event: E) => void) | undefined, event: E): void {
    if (!listener) return;
    try {
      listener(event);
    } catch (error) {
      log({ event: "lane.hook_failed", lane: this.options.lane, hook, jobId: event.jobId, message: describeError(error) });
    }
  }
}
