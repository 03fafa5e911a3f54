import { describe, expect, it } from "vitest";
import { BULK_ALARM_GOAL_MS, bulkTargets } from "../../bench/bulk-targets.js";

const results = (longestMs: number, requeuedOnce: boolean) => ({
  bulk: {
    n: 1000, wallMs: 900, jobsPerSec: 1111, requeuedOnce, back: 1000, bulk: { done: 1000, skipped: 0 },
    alarms: { count: 2, longestMs, p50: 10, p99: longestMs },
    duringBulk: { rounds: 40, enqueue: { p50: 1, p99: 4, max: 5 }, claim: { p50: 1, p99: 6, max: 7 } },
    baseline: { rounds: 300, enqueue: { p50: 1, p99: 2 }, claim: { p50: 1, p99: 2 } },
  },
});

describe("the bulk requeue's targets", () => {
  it("hold the longest alarm run to 50 ms and every job requeued once; report enqueue and claim p99 during it", () => {
    const [alarm, once, enqueue, claim] = bulkTargets(results(BULK_ALARM_GOAL_MS, true));
    expect(alarm).toMatchObject({ measured: BULK_ALARM_GOAL_MS, target: 50, comparison: "<=", met: true });
    expect(once).toMatchObject({ measured: 1, met: true });
    expect(enqueue).toMatchObject({ measured: 4, reported: true });
    expect(claim).toMatchObject({ measured: 6, reported: true });
    const [slow, twice] = bulkTargets(results(BULK_ALARM_GOAL_MS + 1, false));
    expect(slow!.met).toBe(false);
    expect(twice).toMatchObject({ measured: 0, met: false });
  });

  it("has none when the workload did not run or broke", () => {
    expect(bulkTargets({})).toEqual([]);
    expect(bulkTargets({ bulk: { error: "x" } })).toEqual([]);
  });
});
