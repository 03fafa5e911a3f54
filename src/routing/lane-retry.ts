/**
 * A held call across a reset of its lane's object (a deploy, an eviction, an abort, a broken output
 * gate): the call it held throws on the caller's side, though the lane lost nothing it had committed.
 * A held read writes nothing, and a held claim claims only in the turn that answers it, so the caller
 * asks the lane's next instance again (through a new stub: a reset object's stub stays broken) with
 * what is left of its wait, instead of answering 5xx.
 *
 * Only what the runtime marks as safe to try again is tried again (docs: Durable Objects "Error
 * handling"): `retryable`, or `durableObjectReset` (the object broke and a new instance will answer),
 * never `overloaded` (asking again would add to the load). Anything else is thrown as before.
 */

/** How many resets in a row, each met at once, a held call sits out before the last one is thrown. */
export const MAX_RESET_RETRIES = 5;

/** The pause before the first retry after a reset, doubled each time up to `RESET_BACKOFF_MAX_MS`. */
export const RESET_BACKOFF_MS = 10;

/** The longest pause between two retries; a call that failed later than this after it was sent had found the lane up. */
export const RESET_BACKOFF_MAX_MS = 200;

/** Whether the runtime says `error` is a reset of the lane's object, or an error safe to try again. */
export function isLaneReset(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const marks = error as { retryable?: unknown; overloaded?: unknown; durableObjectReset?: unknown };
  if (marks.overloaded === true) return false;
  return marks.retryable === true || marks.durableObjectReset === true;
}

/**
 * `call`'s answer, `call` made again after a lane reset (a small backoff first). Each retry is a new
 * `call`, which reaches the lane through a new stub and computes what is left of its wait. Bounded
 * by resets in a row: a call that was held a while before its reset found the lane up, so the count
 * starts again; a caller gone (`signal`) is not answered again.
 */
export async function acrossResets<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  let resets = 0;
  for (;;) {
    const sentAt = Date.now();
    try {
      return await call();
    } catch (error) {
      if (Date.now() - sentAt > RESET_BACKOFF_MAX_MS) resets = 0;
      if (!isLaneReset(error) || resets >= MAX_RESET_RETRIES || signal?.aborted) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(RESET_BACKOFF_MS * 2 ** resets, RESET_BACKOFF_MAX_MS)));
      resets++;
    }
  }
}
