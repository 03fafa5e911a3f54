/**
 * Token buckets in exact integer arithmetic. A bucket of `limit` tokens refilled over `periodMs`
 * gains one token every `periodMs`/`limit` ms. Kept in units where a token is `periodMs` units and
 * a millisecond refills `limit` of them, so that refill and draw are integers (at most
 * 100,000 × 86,400,000 units: well within a double's exact integers), and no rounding can ever let
 * more start than the bucket allows: over any span of T ms at most `limit` + `limit`·T/`periodMs`.
 */
import type { RateLimit } from "./job.js";

/** A bucket as stored: its units at `at` (null: never drawn, so full). */
export interface BucketState {
  units: number | null;
  at: number | null;
}

/** The units a bucket holds at `now`: refilled since `at`, at most full. */
export function unitsAt(rate: RateLimit, state: BucketState, now: number): number {
  const full = rate.limit * rate.periodMs;
  if (state.units === null || state.at === null) return full;
  const elapsed = Math.min(Math.max(0, now - state.at), rate.periodMs);
  return Math.min(full, state.units + elapsed * rate.limit);
}

/** Whole tokens a bucket holds at `now`. */
export function tokensAt(rate: RateLimit, state: BucketState, now: number): number {
  return Math.floor(unitsAt(rate, state, now) / rate.periodMs);
}

/**
 * The bucket after `taken` tokens are drawn at `now` (never below zero: the caller took at most what
 * was there). Its instant never moves back: a clock stepped backwards refills nothing until it has
 * passed the last draw again, rather than refilling the same span twice.
 */
export function draw(rate: RateLimit, state: BucketState, now: number, taken: number): { units: number; at: number } {
  return { units: Math.max(0, unitsAt(rate, state, now) - taken * rate.periodMs), at: Math.max(now, state.at ?? now) };
}

/** The first instant at or after `now` at which the bucket holds a whole token. */
export function nextTokenAt(rate: RateLimit, state: BucketState, now: number): number {
  const missing = rate.periodMs - unitsAt(rate, state, now);
  return missing <= 0 ? now : now + Math.ceil(missing / rate.limit);
}
