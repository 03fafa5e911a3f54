/**
 * Test executors. Tests and lanes share one isolate in the Workers Vitest integration, so a test can
 * hold a gate that an executor waits on, and see what the executor saw.
 */
import type { ExecutorRegistry } from "../../src/durable/executors.js";

export interface Gate {
  /** Resolves the executor with this result. */
  open(result?: unknown): void;
  /** Rejects the executor with this error. */
  throw(error: Error): void;
  /** Resolves when the executor has started. */
  started: Promise<{ signal: AbortSignal; attempt: number }>;
  /** The abort reason, once the signal fired. */
  aborted: Promise<unknown>;
}

const gates = new Map<string, Gate & { resolve(v: unknown): void; reject(e: Error): void; markStarted(v: { signal: AbortSignal; attempt: number }): void; markAborted(r: unknown): void }>();

/** A gate for the job whose payload is `{ gate: key }` (kind `test.gate`). */
export function gate(key: string): Gate {
  let markStarted!: (v: { signal: AbortSignal; attempt: number }) => void;
  let markAborted!: (r: unknown) => void;
  const started = new Promise<{ signal: AbortSignal; attempt: number }>((r) => (markStarted = r));
  const aborted = new Promise<unknown>((r) => (markAborted = r));
  const entry = {
    started,
    aborted,
    markStarted,
    markAborted,
    resolve: (_v: unknown) => {},
    reject: (_e: Error) => {},
    open(result?: unknown) {
      entry.resolve(result ?? { gate: key });
    },
    throw(error: Error) {
      entry.reject(error);
    },
  };
  gates.set(key, entry);
  return entry;
}

export const testExecutors: ExecutorRegistry = {
  /** Waits for its gate; ignores its signal unless the payload says `honour: true`. */
  "test.gate": (payload: { gate: string; honour?: boolean }, { signal, attempt }) => {
    const entry = gates.get(payload.gate);
    if (!entry) throw new Error(`no gate ${payload.gate}`);
    return new Promise((resolve, reject) => {
      entry.resolve = resolve;
      entry.reject = reject;
      signal.addEventListener("abort", () => {
        entry.markAborted(signal.reason);
        if (payload.honour) reject(signal.reason as Error);
      });
      entry.markStarted({ signal, attempt });
    });
  },
};
