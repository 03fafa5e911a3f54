/**
 * Delay before retry number `attempt` (1 = after the first failed attempt): exponential, capped at
 * `maxMs`, with "equal jitter" so that it always lies in [d/2, d] where d = min(maxMs, baseMs·2^(attempt-1)).
 * `random` is in [0, 1).
 */
export function backoffDelayMs(attempt: number, baseMs: number, maxMs: number, random: number): number {
  const ceiling = backoffCeilingMs(attempt, baseMs, maxMs);
  return Math.floor(ceiling / 2 + (random * ceiling) / 2);
}

/** The bounds `backoffDelayMs` stays within, for tests and docs. */
export function backoffBoundsMs(attempt: number, baseMs: number, maxMs: number): [number, number] {
  const ceiling = backoffCeilingMs(attempt, baseMs, maxMs);
  return [Math.floor(ceiling / 2), ceiling];
}

/** The unjittered delay before retry number `attempt` (1 = after the first failure): min(maxMs, baseMs·2^(attempt-1)). */
export function backoffCeilingMs(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 60));
}
