/**
 * Waits a caller stops when its reader leaves: a held call's answer (the call itself runs on; what
 * it holds in the lane passes with its hold) or a pause, settled `null` once `signal` aborts.
 */

/** `pending`'s value, or null as soon as `signal` aborts (a rejection still rejects). */
export function untilAborted<T>(pending: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise<T | null>((resolve, reject) => {
    const stop = () => resolve(null);
    signal.addEventListener("abort", stop, { once: true });
    pending.then(
      (value) => {
        signal.removeEventListener("abort", stop);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return untilAborted(new Promise<void>((resolve) => setTimeout(resolve, ms)), signal).then(() => undefined);
}
