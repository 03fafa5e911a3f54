/**
 * Token buckets in exact integer arithmetic, written once in SQL and once in TypeScript, side by
 * side (test/durable/flow/bucket-formula.test.ts runs both over random buckets and checks them
 * equal). A queue's bucket is refilled and drawn by the statements that read its row (the SQL
 * fragments below, and no other text of the formula); the lane's own bucket, kept in its settings,
 * by the TypeScript.
 *
 * A bucket of `limit` tokens refilled over `periodMs` gains one token every `periodMs`/`limit` ms.
 * Kept in units where a token is `periodMs` units and a millisecond refills `limit` of them, so that
 * refill and draw are integers (at most 100,000 × 86,400,000 units: well within a double's exact
 * integers), and no rounding can ever let more start than the bucket allows: over any span of T ms
 * at most `limit` + `limit`·T/`periodMs`. Never drawn (null units) is full. Its instant never moves
 * back: a clock stepped backwards refills nothing until it has passed the last draw again, rather
 * than refilling the same span twice.
 */
import type { RateLimit } from "../../shared/job.js";

/** A bucket as stored: its units at `at` (null: never drawn, so full). */
export interface BucketState {
  units: number | null;
  at: number | null;
}

/** Where a statement reads a stored bucket: an SQL expression for each part (a column, a parameter). */
export interface BucketColumns {
  limit: string;
  periodMs: string;
  units: string;
  at: string;
}

/** The bucket of a `queues` row: of alias `q`, or of the one row a statement reads (no alias). */
export function QUEUE_BUCKET(q?: string): BucketColumns {
  const of = q === undefined ? "" : `${q}.`;
  return { limit: `${of}rate_limit`, periodMs: `${of}rate_period_ms`, units: `${of}bucket_units`, at: `${of}bucket_at` };
}

// ---- SQL: `now` is ?1 unless told (every statement of the lane binds it so) ----

/** The units a bucket holds at `now`: refilled since `at`, at most full (`unitsAt`). */
export const bucketUnitsSql = (b: BucketColumns, now = "?1") => `MIN(${b.limit} * ${b.periodMs},
    COALESCE(${b.units} + MIN(MAX(0, ${now} - ${b.at}), ${b.periodMs}) * ${b.limit}, ${b.limit} * ${b.periodMs}))`;

/**
 * Whole tokens a bucket holds at `now` (`tokensAt`). Cast to an integer: now arrives as a double,
 * and with it the division would not round down.
 */
export const bucketTokensSql = (b: BucketColumns, now = "?1") => `CAST(${bucketUnitsSql(b, now)} / ${b.periodMs} AS INTEGER)`;

/**
 * The first instant at or after `now` at which a bucket holding `units` (an expression or an alias
 * of `bucketUnitsSql`'s) holds a whole token (`nextTokenAt`): the units it misses over its refill
 * per ms, rounded up (cast, as now arrives a double).
 */
export const bucketNextTokenSql = (b: BucketColumns, units: string, now = "?1") =>
  `CASE WHEN ${units} >= ${b.periodMs} THEN ${now} ELSE ${now} + CAST((${b.periodMs} - ${units} + ${b.limit} - 1) / ${b.limit} AS INTEGER) END`;

/** A bucket's units after `taken` tokens are drawn at `now` (`draw`). */
export const bucketDrawUnitsSql = (b: BucketColumns, taken: string, now = "?1") => `MAX(0, ${bucketUnitsSql(b, now)} - ${taken} * ${b.periodMs})`;

/** A bucket's instant after a draw at `now` (`draw`): never back. */
export const bucketDrawAtSql = (b: BucketColumns, now = "?1") => `MAX(COALESCE(${b.at}, ${now}), ${now})`;

// ---- TypeScript: the same formula ----

/** The units a bucket holds at `now`: refilled since `at`, at most full (`bucketUnitsSql`). */
export function unitsAt(rate: RateLimit, state: BucketState, now: number): number {
  const full = rate.limit * rate.periodMs;
  if (state.units === null || state.at === null) return full;
  const elapsed = Math.min(Math.max(0, now - state.at), rate.periodMs);
  return Math.min(full, state.units + elapsed * rate.limit);
}

/** Whole tokens a bucket holds at `now` (`bucketTokensSql`). */
export function tokensAt(rate: RateLimit, state: BucketState, now: number): number {
  return Math.floor(unitsAt(rate, state, now) / rate.periodMs);
}

/**
 * The bucket after `taken` tokens are drawn at `now` (`bucketDrawUnitsSql`, `bucketDrawAtSql`):
 * never below zero (the caller took at most what was there), its instant never back.
 */
export function draw(rate: RateLimit, state: BucketState, now: number, taken: number): { units: number; at: number } {
  return { units: Math.max(0, unitsAt(rate, state, now) - taken * rate.periodMs), at: Math.max(now, state.at ?? now) };
}

/** The first instant at or after `now` at which the bucket holds a whole token (`bucketNextTokenSql`). */
export function nextTokenAt(rate: RateLimit, state: BucketState, now: number): number {
  const missing = rate.periodMs - unitsAt(rate, state, now);
  return missing <= 0 ? now : now + Math.ceil(missing / rate.limit);
}
