/**
 * Kept counts, lifetime stats and `oldestDueAt`: counts follow every transition in the
 * same statement (triggers), stats never go down and survive a restart, `lost` counts in-process
 * attempts that lost their lease. The property test (lane-counts-properties.test.ts) checks counts
 * against a GROUP BY over random operations; these pin each stat to the transition that moves it.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DISPATCH_LEASE_MS } from "../../../src/shared/defaults.js";
import { ManualClock } from "../../../src/shared/clock.js";
import type { Counts, LaneInfo } from "../../../src/shared/job.js";
import { gate, lost } from "../../helpers/executors.js";
import { T0, claimOne, enqueue, evict, fireAlarm, inject, setup, sql, value, type LaneStub } from "../../helpers/lane.js";

const ZERO_STATS: LaneInfo["stats"] = { enqueued: 0, claimed: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0, deadLettered: 0, waitpointsCompleted: 0, waitpointsTimedOut: 0 };
const ZERO_COUNTS: Counts = { blocked: 0, queued: 0, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 };

const stats = async (stub: LaneStub) => value(await stub.info()).stats;
const counts = async (stub: LaneStub) => value(await stub.info()).counts;

/** The counts as a GROUP BY over the rows says they are. */
async function grouped(stub: LaneStub): Promise<Counts> {
  const out = { ...ZERO_COUNTS };
  for (const row of await sql<{ bucket: keyof Counts; n: number }>(
    stub,
    `SELECT CASE WHEN state = 'settled' THEN outcome ELSE state END AS bucket, COUNT(*) AS n FROM jobs GROUP BY bucket`,
  )) {
    out[row.bucket] = row.n;
  }
  return out;
}

describe("kept counts", () => {
  it("start at zero and follow enqueue, claim, settle and delete, equal to a GROUP BY at every step", async () => {
    const { stub } = await setup();
    expect(await counts(stub)).toEqual(ZERO_COUNTS);
    value(await stub.enqueueBatch({ jobs: [{ id: "a", kind: "k" }, { id: "b", kind: "k" }, { id: "a", kind: "k" }] }));
    await enqueue(stub, { id: "c" });
    expect(await counts(stub)).toEqual({ ...ZERO_COUNTS, queued: 3 });
    const { lease } = await claimOne(stub);
    expect(await counts(stub)).toEqual({ ...ZERO_COUNTS, queued: 2, running: 1 });
    value(await stub.complete("a", { token: lease.token }));
    value(await stub.cancel("b"));
    expect(await counts(stub)).toEqual({ ...ZERO_COUNTS, queued: 1, completed: 1, cancelled: 1 });
    expect(await counts(stub)).toEqual(await grouped(stub));
    value(await stub.requeue("b"));
    expect(await counts(stub)).toEqual({ ...ZERO_COUNTS, queued: 2, completed: 1 });
    value(await stub.sweep({ settledBefore: T0 + 1 }));
    expect(await counts(stub)).toEqual({ ...ZERO_COUNTS, queued: 2 });
    expect(await counts(stub)).toEqual(await grouped(stub));
  });

  it("are read from the kept row, not counted from the jobs", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await sql(stub, `UPDATE lane_counts SET queued = 42`);
    expect((await counts(stub)).queued).toBe(42);
  });
});

describe("lifetime stats", () => {
  it("count enqueues, claims, outcomes, retries and recoveries, and never go down", async () => {
    const { stub, clock } = await setup();
    expect(await stats(stub)).toEqual(ZERO_STATS);
    // A duplicate in a batch, and a duplicate enqueue, are not enqueued again.
    value(await stub.enqueueBatch({ jobs: [{ id: "done", kind: "k" }, { id: "retry", kind: "k" }, { id: "done", kind: "k" }] }));
    await enqueue(stub, { id: "retry" });
    await enqueue(stub, { id: "fatal", maxAttempts: 1 });
    await enqueue(stub, { id: "cancel", delayMs: 60_000 });
    await enqueue(stub, { id: "lost", recovery: { maxRecoveries: 1, windowMs: 60_000 } });
    expect(await stats(stub)).toMatchObject({ enqueued: 5, claimed: 0 });

    const held = new Map(value(await stub.claim({ max: 10, leaseMs: 1_000 })).jobs.map((j) => [j.id, j.lease.token]));
    expect([...held.keys()]).toEqual(["done", "retry", "fatal", "lost"]);
    value(await stub.complete("done", { token: held.get("done")! }));
    value(await stub.fail("retry", { token: held.get("retry")!, error: "again", retryAfterMs: 0 }));
    value(await stub.fail("fatal", { token: held.get("fatal")!, error: "no" }));
    value(await stub.cancel("cancel"));
    expect(await stats(stub)).toEqual({ ...ZERO_STATS, enqueued: 5, claimed: 4, completed: 1, failed: 1, cancelled: 1, retried: 1 });

    // A repeated settlement changes nothing; a release gives the attempt back but counts no stat.
    value(await stub.complete("done", { token: held.get("done")! }));
    const again = await claimOne(stub, { leaseMs: 1_000 });
    expect(again.id).toBe("retry");
    value(await stub.release("retry", { token: again.lease.token }));
    expect(await stats(stub)).toMatchObject({ claimed: 5, completed: 1, retried: 1 });

    // The lease of "lost" runs out: recovered once, then interrupted when its budget is spent.
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(await stats(stub)).toMatchObject({ recovered: 1, interrupted: 0 });
    const claimed = value(await stub.claim({ max: 10, leaseMs: 1_000 })).jobs.map((j) => j.id);
    expect(claimed).toEqual(["retry", "lost"]);
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(await stats(stub)).toEqual({ ...ZERO_STATS, enqueued: 5, claimed: 7, completed: 1, failed: 1, cancelled: 1, interrupted: 1, retried: 1, recovered: 2 });

    // A requeued job counts its new outcome again; deleting settled jobs lowers counts, never stats.
    value(await stub.requeue("fatal"));
    const before = await stats(stub);
    value(await stub.sweep({ settledBefore: T0 + 60_000 }));
    expect(await counts(stub)).toMatchObject({ completed: 0, failed: 0, cancelled: 0, interrupted: 0 });
    expect(await stats(stub)).toEqual(before);
  });

  it("survive a restart", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token }));
    const before = value(await stub.info());
    await evict(fixture);
    const after = value(await stub.info());
    expect(after.stats).toEqual({ ...ZERO_STATS, enqueued: 1, claimed: 1, completed: 1 });
    expect(after.stats).toEqual(before.stats);
    expect(after.counts).toEqual(before.counts);
  });

  it("count an in-process attempt that lost its lease as lost (and its job recovered)", async () => {
    const lane = env.LANE.getByName(`lost-${crypto.randomUUID()}`);
    const clock = new ManualClock(T0);
    await inject(lane, clock);
    const g = gate();
    const job = value(await lane.enqueue({ kind: "test.gate", payload: { gate: g.key } })).job;
    const first = await runInDurableObject(lane, () => g.started());
    clock.advance(DISPATCH_LEASE_MS + 1);
    await runDurableObjectAlarm(lane);
    expect(first.signal.aborted).toBe(true);
    expect(lost(job.id)).toHaveLength(1);
    expect(value(await lane.info()).stats).toMatchObject({ enqueued: 1, claimed: 1, recovered: 1, lost: 1, completed: 0 });
  });
});

describe("oldestDueAt", () => {
  it("is the runAt of the longest-waiting due queued job, null when none is due", async () => {
    const { stub, clock } = await setup();
    expect(value(await stub.info()).oldestDueAt).toBeNull();
    await enqueue(stub, { id: "later", delayMs: 5_000 });
    expect(value(await stub.info()).oldestDueAt).toBeNull();
    clock.advance(1_000);
    await enqueue(stub, { id: "now" });
    expect(value(await stub.info()).oldestDueAt).toBe(T0 + 1_000);
    clock.advance(9_000);
    expect(value(await stub.info()).oldestDueAt).toBe(T0 + 1_000);
    // "later" (enqueued first) runs; "now" still waits, since T0 + 1 s.
    expect((await claimOne(stub)).id).toBe("later");
    expect(value(await stub.info()).oldestDueAt).toBe(T0 + 1_000);
    await claimOne(stub);
    expect(value(await stub.info()).oldestDueAt).toBeNull();
  });
});
