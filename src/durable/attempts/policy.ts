/**
 * The decisions an attempt's end leaves to policy, as pure functions of the row and now: whether a
 * failed attempt is retried and when, and whether an expired lease is recovered or the job is
 * interrupted (the recovery budget). The store writes what they decide.
 */
import { backoffDelayMs } from "../../shared/backoff.js";

export type RetryDecision = { retry: true; runAt: number } | { retry: false };

/**
 * A failed attempt is queued again while attempts remain and the executor did not forbid it, after
 * `retryAfterMs` if given, else after the job's backoff.
 */
export function decideRetry(
  held: { attempts: number; max_attempts: number; backoff_base_ms: number; backoff_max_ms: number },
  retry: boolean,
  retryAfterMs: number | null,
  now: number,
  random: number,
): RetryDecision {
  if (!retry || held.attempts >= held.max_attempts) return { retry: false };
  const delay = retryAfterMs ?? backoffDelayMs(held.attempts, held.backoff_base_ms, held.backoff_max_ms, random);
  return { retry: true, runAt: now + delay };
}

export type RecoveryDecision =
  | { recover: true; count: number; windowStart: number; message: string }
  | { recover: false; message: string };

/**
 * The recovery budget: a fixed window that opens at the first recovery; `max_recoveries` recoveries
 * fit in it, and the next lost lease inside it interrupts the job.
 */
export function decideRecovery(
  row: { lease_until: number | null; max_recoveries: number; recovery_window_ms: number; recovery_count: number; recovery_window_start: number | null },
  now: number,
): RecoveryDecision {
  const windowOpen = row.recovery_window_start !== null && now - row.recovery_window_start < row.recovery_window_ms;
  const used = windowOpen ? row.recovery_count : 0;
  if (used < row.max_recoveries) {
    return {
      recover: true,
      count: used + 1,
      windowStart: windowOpen ? row.recovery_window_start! : now,
      message: `lease expired at ${row.lease_until}; recovered (${used + 1} of ${row.max_recoveries} in this window)`,
    };
  }
  return {
    recover: false,
    message: `lease expired at ${row.lease_until}; recovery budget of ${row.max_recoveries} per ${row.recovery_window_ms} ms spent`,
  };
}
