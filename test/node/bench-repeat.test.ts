import { describe, expect, it } from "vitest";
import { medianBy } from "../../bench/repeat.js";

describe("the bench's repetitions", () => {
  it("take the repetition of the median ratio, keeping every ratio in run order", () => {
    const reps = [{ a: 9, b: 10 }, { a: 8, b: 10 }, { a: 10, b: 10 }];
    expect(medianBy(reps, (r) => r.a / r.b)).toEqual({ a: 9, b: 10, ratio: 0.9, ratios: [0.9, 0.8, 1] });
    expect(medianBy([{ a: 1 }], (r) => r.a)).toEqual({ a: 1, ratio: 1, ratios: [1] });
    // An even count takes the upper middle one.
    expect(medianBy([{ a: 4 }, { a: 1 }, { a: 3 }, { a: 2 }], (r) => r.a).a).toBe(3);
  });
});
