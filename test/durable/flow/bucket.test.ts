/**
 * The token bucket's arithmetic (src/durable/flow/bucket.ts), driven by a clock that may step backwards
 * (NTP does that to real machines): over any span of the bucket's own instants, no more are drawn
 * than `limit` plus what the span refills.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { draw, nextTokenAt, tokensAt, type BucketState } from "../../../src/durable/flow/bucket.js";

describe("the token bucket", () => {
  it("never grants more than limit + limit·span/period over any span, even when the clock steps back", () => {
    fc.assert(
      fc.property(
        fc.record({ limit: fc.integer({ min: 1, max: 100 }), periodMs: fc.integer({ min: 100, max: 5_000 }) }),
        fc.array(fc.record({ step: fc.integer({ min: -400, max: 400 }), want: fc.integer({ min: 0, max: 40 }) }), { minLength: 1, maxLength: 80 }),
        (rate, steps) => {
          let state: BucketState = { units: null, at: null };
          let now = 1_000_000;
          /** The instant each token was drawn at, as the bucket keeps it. */
          const drawnAt: number[] = [];
          for (const { step, want } of steps) {
            now += step;
            const taken = Math.min(want, tokensAt(rate, state, now));
            if (taken === 0) continue;
            state = draw(rate, state, now, taken);
            for (let i = 0; i < taken; i++) drawnAt.push(state.at!);
          }
          drawnAt.sort((a, b) => a - b);
          for (let i = 0; i < drawnAt.length; i++) {
            for (let j = i; j < drawnAt.length; j++) {
              const allowed = rate.limit + Math.floor((rate.limit * (drawnAt[j]! - drawnAt[i]!)) / rate.periodMs);
              expect(j - i + 1).toBeLessThanOrEqual(allowed);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("after a backward step, refills nothing until the clock passes the last draw again", () => {
    const rate = { limit: 10, periodMs: 1_000 };
    let state = draw(rate, { units: null, at: null }, 10_000, 10);
    expect(tokensAt(rate, state, 10_000)).toBe(0);
    state = draw(rate, state, 9_000, 0); // a draw at an earlier instant (the clock stepped back)
    expect(state.at).toBe(10_000);
    expect(tokensAt(rate, state, 10_099)).toBe(0);
    expect(tokensAt(rate, state, 10_100)).toBe(1);
    expect(nextTokenAt(rate, state, 10_000)).toBe(10_100);
  });
});
