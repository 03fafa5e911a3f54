import { describe, expect, it } from "vitest";
import { aboveBare, buildTargets, type Target } from "../../bench/report.js";
import { shardTargets } from "../../bench/shard-targets.js";

const byName = (targets: Target[], part: string) => {
  const found = targets.filter((t) => t.name.includes(part));
  expect(found.map((t) => t.name), part).toHaveLength(1);
  return found[0]!;
};

describe("the bench's targets", () => {
  it("hold a grouped enqueue's marginal µs a job to 1.5x a 1,000-job batch's", () => {
    const results = { groupShare: { marginalUs: 30, batchUsPerJob: 25, ratio: 1.2, ratios: [1.1, 1.2, 1.4], fixedUs: 900, groupOfThousandUsPerJob: 31, groups: { calls: 22, items: 22_000, expectedCalls: 22 } } };
    const target = byName(buildTargets(results, "quick"), "grouped enqueue's marginal");
    expect(target).toMatchObject({ measured: 1.2, target: 1.5, comparison: "<=", met: true });
    expect(target.reported).toBeUndefined();
    expect(target.basis).toContain("30.0 / 25.0 µs a job");
    const missed = byName(buildTargets({ groupShare: { ...results.groupShare, ratio: 1.6 } }, "quick"), "grouped enqueue's marginal");
    expect(missed.met).toBe(false);
  });

  it("report, and no longer hold to a goal, 16 callers' group commit against their own ungrouped figure", () => {
    const target = byName(buildTargets({ groupCommit: { c16: { ratio: 6 } } }, "quick"), "16 producers' single enqueues, group commit on / off");
    expect(target).toMatchObject({ measured: 6, reported: true, met: true });
  });

  it("hold a 4-shard lane's CPU per job with group commit off to 1.2x one shard's, and report it with group commit on", () => {
    const watched = (cpuCores: number, watchedMs: number) => ({ process: { cpuCores }, watchedMs });
    const results = {
      shardEnqueue1: watched(1, 1000), shardEnqueue4: watched(1, 3000),
      shardEnqueueSolo1: watched(1, 1000), shardEnqueueSolo4: watched(1, 1100),
    };
    const targets = shardTargets(results, 1000, 1000);
    expect(byName(targets, "group commit off")).toMatchObject({ measured: 1.1, target: 1.2, comparison: "<=", met: true });
    expect(byName(targets, "(group commit on)")).toMatchObject({ measured: 3, reported: true, met: true });
    expect(byName(shardTargets({ ...results, shardEnqueueSolo4: watched(1, 1300) }, 1000, 1000), "group commit off").met).toBe(false);
  });

  it("show every per-job figure above the bare table's floor", () => {
    const rate = (us: number) => 1e6 / us;
    const results = {
      sqlite: { bare: { insert: { opsPerSec: rate(10) }, update: { opsPerSec: rate(5) }, claim: { opsPerSec: rate(20) } } },
      single: { single: { opsPerSec: rate(100) } },
      serialQueues: { jobsPerSec: rate(80) },
      steps: { drain_c16: { jobsPerSec: rate(90) } },
      schedules: { drain: { jobsPerSec: rate(70) } },
      groupShare: { marginalUs: 40, batchUsPerJob: 30 },
    };
    const rows = aboveBare(results).filter((row) => row.us !== null);
    const row = (part: string) => rows.find((r) => r.figure.includes(part));
    expect(row("single enqueue end to end")).toMatchObject({ us: 100, floorUs: 35, aboveUs: 65 });
    expect(row("serial queues")).toMatchObject({ us: 80, floorUs: 25, aboveUs: 55 });
    expect(row("one-checkpoint")).toMatchObject({ us: 90, floorUs: 25, aboveUs: 65 });
    expect(row("while schedules fire (µs a job)")).toMatchObject({ us: 70, floorUs: 25, aboveUs: 45 });
    expect(row("one more caller in a group")).toMatchObject({ us: 40, floorUs: 10, aboveUs: 30 });
  });

  it("name every target read against the bare table so", () => {
    const names = buildTargets({}, "quick").map((t) => t.name).filter((name) => /\bbare\b/.test(name));
    expect(names.length).toBeGreaterThanOrEqual(2);
    for (const name of names) expect(name).toMatch(/bare table/);
  });
});
