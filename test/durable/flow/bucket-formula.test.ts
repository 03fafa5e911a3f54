/**
 * The token bucket is written once in SQL (the fragments every statement that refills or draws a
 * queue's bucket is built from) and once in TypeScript (the lane's own bucket, and the arithmetic the
 * properties of test/durable/flow/bucket.test.ts hold of): src/durable/flow/bucket.ts. Were they to
 * drift, a queue and a lane with the same limit would grant different starts, and the wake (SQL)
 * could name an instant the claim's arithmetic disagrees with. Here the SQL runs in the lane's own
 * SQLite, on a stored `queues` row (its columns' types as in production; `now` bound as the claim
 * binds it), against the TypeScript over random buckets: never drawn, drained, full, a clock before
 * the last refill, spans far longer than the period, the largest limits and periods allowed.
 */
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import {
  QUEUE_BUCKET,
  bucketDrawAtSql,
  bucketDrawUnitsSql,
  bucketNextTokenSql,
  bucketTokensSql,
  bucketUnitsSql,
  draw,
  nextTokenAt,
  tokensAt,
  unitsAt,
  type BucketState,
} from "../../../src/durable/flow/bucket.js";
import { MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS, MIN_RATE_PERIOD_MS } from "../../../src/shared/defaults.js";
import type { RateLimit } from "../../../src/shared/job.js";
import { T0, setup } from "../../helpers/lane.js";

const SEED = 20_261_207;

interface Case {
  rate: RateLimit;
  state: BucketState;
  now: number;
  taken: number;
}

const rate: fc.Arbitrary<RateLimit> = fc.record({
  limit: fc.oneof(fc.constantFrom(1, 2, 3, MAX_RATE_LIMIT), fc.integer({ min: 1, max: MAX_RATE_LIMIT })),
  periodMs: fc.oneof(fc.constantFrom(MIN_RATE_PERIOD_MS, 1_000, MAX_RATE_PERIOD_MS - 1, MAX_RATE_PERIOD_MS), fc.integer({ min: MIN_RATE_PERIOD_MS, max: MAX_RATE_PERIOD_MS })),
});

/** How far the clock is from the last refill: often a little, sometimes back, sometimes far more than any period. */
const elapsed = fc.oneof(
  fc.constantFrom(0, 1, -1),
  fc.integer({ min: -5_000, max: 5_000 }),
  fc.integer({ min: -10 * MAX_RATE_PERIOD_MS, max: 10 * MAX_RATE_PERIOD_MS }),
  fc.integer({ min: -1e12, max: 1e12 }),
);

const bucketCase: fc.Arbitrary<Case> = rate.chain((r) => {
  const full = r.limit * r.periodMs;
  const units = fc.oneof(
    fc.constant(null),
    fc.constantFrom(0, 1, r.periodMs - 1, r.periodMs, full - 1, full),
    fc.integer({ min: 0, max: full }),
  );
  return fc.record({
    rate: fc.constant(r),
    units,
    // a bucket never drawn has neither; a stored one has both (a half-null row counts as never drawn)
    at: fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 6, arbitrary: elapsed }),
    now: fc.oneof(fc.constant(T0), fc.integer({ min: 0, max: T0 })),
    taken: fc.oneof(fc.constantFrom(0, 1), fc.integer({ min: 0, max: r.limit })),
  }).map(({ rate, units, at, now, taken }) => ({ rate, state: { units, at: at === null ? null : now - at }, now, taken }));
});

it(`the bucket's SQL and its TypeScript agree on units, tokens, the next token and a draw (fast-check seed ${SEED})`, async () => {
  const { stub } = await setup();
  await runInDurableObject(stub, (_lane, state) => {
    const sql = state.storage.sql;
    const q = QUEUE_BUCKET("queues");
    const units = bucketUnitsSql(q);
    const read = `SELECT ${units} AS units, ${bucketTokensSql(q)} AS tokens, ${bucketNextTokenSql(q, units)} AS next,
        ${bucketDrawUnitsSql(q, "?2")} AS drawn_units, ${bucketDrawAtSql(q)} AS drawn_at
      FROM queues WHERE name = 'bucket'`;
    fc.assert(
      fc.property(bucketCase, ({ rate, state: bucket, now, taken }) => {
        sql.exec(`DELETE FROM queues WHERE name = 'bucket'`);
        sql.exec(
          `INSERT INTO queues (name, rate_limit, rate_period_ms, bucket_units, bucket_at) VALUES ('bucket', ?1, ?2, ?3, ?4)`,
          rate.limit, rate.periodMs, bucket.units, bucket.at,
        );
        const got = sql.exec<{ units: number; tokens: number; next: number; drawn_units: number; drawn_at: number }>(read, now, taken).one();
        const drawn = draw(rate, bucket, now, taken);
        expect({ ...got }).toEqual({
          units: unitsAt(rate, bucket, now),
          tokens: tokensAt(rate, bucket, now),
          next: nextTokenAt(rate, bucket, now),
          drawn_units: drawn.units,
          drawn_at: drawn.at,
        });
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });
});
