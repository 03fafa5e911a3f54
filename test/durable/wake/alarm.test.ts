import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { ALARM_OVERDUE_GRACE_MS, DEFAULT_LEASE_MS } from "../../../src/shared/defaults.js";
import { startClocks } from "../../helpers/test-worker.js";
import { T0, alarmAt, claim, claimOne, enqueue, evict, fireAlarm, refusal, retentionWakeOf, row, rows, setup, value, wake } from "../../helpers/lane.js";

describe("nextWakeAt (the computed wake and the alarm itself)", () => {
  it("is null for an empty lane", async () => {
    const { stub } = await setup();
    expect(await wake(stub)).toBeNull();
  });

  it("is a future job's runAt", async () => {
    const { stub } = await setup();
    await enqueue(stub, { delayMs: 5_000 });
    expect(await wake(stub)).toBe(T0 + 5_000);
  });

  it("is the earliest of several future runAts, whatever their enqueue order or priority", async () => {
    const { stub } = await setup();
    await enqueue(stub, { delayMs: 5_000, priority: 9 });
    await enqueue(stub, { delayMs: 2_000 });
    await enqueue(stub, { delayMs: 3_000, priority: -1 });
    expect(await wake(stub)).toBe(T0 + 2_000);
  });

  it("is null for a due job: nothing in a pull lane starts it but a consumer", async () => {
    const { stub } = await setup();
    await enqueue(stub, {});
    expect(await wake(stub)).toBeNull();
  });

  it("is a running job's lease expiry", async () => {
    const { stub } = await setup();
    await enqueue(stub, {});
    await claimOne(stub, { leaseMs: 7_000 });
    expect(await wake(stub)).toBe(T0 + 7_000);
  });

  it("is the earlier of a lease expiry and a future runAt", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", delayMs: 4_000 });
    await claimOne(stub, { leaseMs: 9_000 });
    expect(await wake(stub)).toBe(T0 + 4_000);
    value(await stub.cancel("b"));
    expect(await wake(stub)).toBe(T0 + 9_000);
  });

  it("follows a renewed lease", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(500);
    value(await stub.renew("a", { token: lease.token, leaseMs: 10_000 }));
    expect(await wake(stub)).toBe(T0 + 10_500);
  });

  it("ignores queued jobs while paused, but not leases", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", delayMs: 1_000 });
    await claimOne(stub, { leaseMs: 5_000 });
    value(await stub.configure({ paused: true }));
    expect(await wake(stub)).toBe(T0 + 5_000);
    value(await stub.cancel("a"));
    expect(await wake(stub)).toBe(T0 + 5_000); // a cancelled running job settles at its lease expiry
    value(await stub.configure({ paused: false }));
    expect(await wake(stub)).toBe(T0 + 1_000);
  });

  it("is null for a paused lane with only future jobs", async () => {
    const { stub } = await setup();
    await enqueue(stub, { delayMs: 1_000 });
    value(await stub.configure({ paused: true }));
    expect(await wake(stub)).toBeNull();
  });

  it("ignores queued jobs while concurrency is full", async () => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: 1 }));
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", delayMs: 1_000 });
    const { lease } = await claimOne(stub, { leaseMs: 5_000 });
    expect(await wake(stub)).toBe(T0 + 5_000);
    value(await stub.complete("a", { token: lease.token }));
    expect(await wake(stub)).toBe(T0 + 1_000);
  });

  it("ignores a future job behind a running job of its queue", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q", delayMs: 1_000 });
    const { lease } = await claimOne(stub, { leaseMs: 5_000 });
    expect(await wake(stub)).toBe(T0 + 5_000);
    value(await stub.complete("a", { token: lease.token }));
    expect(await wake(stub)).toBe(T0 + 1_000);
  });

  it("is the runAt of a queue's head, not of an earlier job behind it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "head", queue: "q", priority: 1, delayMs: 3_000 });
    await enqueue(stub, { id: "behind", queue: "q", delayMs: 1_000 });
    expect(await wake(stub)).toBe(T0 + 3_000);
  });

  it("is the first retention horizon once every job is settled", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", delayMs: 1_000 });
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token }));
    value(await stub.cancel("b"));
    expect(await wake(stub)).toBe(retentionWakeOf(T0, "completed"));
  });

  it("moves to the retry instant of a failed attempt", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.fail("a", { token: lease.token, error: "e", retryAfterMs: 2_500 }));
    expect(await wake(stub)).toBe(T0 + 2_500);
  });
});

describe("a cancellation awaiting its wind-up is a wake term", () => {
  it("is now for an in-process job whose attempt no executor here holds, and the alarm settles it cancelled", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    // A lease of the lane's own dispatcher whose executor this process does not hold (one that died
    // with a bug): nothing but the alarm will wind it up.
    await runInDurableObject(stub, (lane: Lane) =>
      lane.claims.take({ kinds: null, excludeKinds: [], excludeIds: [], heldSlots: 0, max: 1, leaseMs: DEFAULT_LEASE_MS, maxBytes: Infinity, holder: "lane" }),
    );
    expect(value(await stub.cancel("a")).status).toBe("cancelling");
    expect(await wake(stub)).toBe(T0);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await row(stub, "a")).toMatchObject({ state: "settled", outcome: "cancelled" });
    expect(await wake(stub)).toBeGreaterThan(T0); // only the retention horizon is left
  });

  it("is the lease expiry for a pull consumer's job: its holder may still speak", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await claimOne(stub, { leaseMs: 5_000 });
    value(await stub.cancel("a"));
    expect(await wake(stub)).toBe(T0 + 5_000);
  });
});

describe("the alarm recovers expired leases", () => {
  it("queues the job again, gives the attempt back and notes why", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 1 });
    await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    expect(await fireAlarm(stub)).toBe(true);
    const job = value(await stub.getJob("a"));
    expect(job).toMatchObject({ state: "queued", attempts: 0, generation: 1, runAt: T0 + 1_000, lease: null });
    expect(job.error).toContain("lease expired");
    expect(await claimOne(stub)).toMatchObject({ attempts: 1, generation: 2 });
  });

  it("leaves a lease that has not yet expired alone", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(999);
    const before = await rows(stub);
    await fireAlarm(stub);
    expect(await rows(stub)).toEqual(before);
    expect(await alarmAt(stub)).toBe(T0 + 1_000);
  });

  it("settles interrupted once the recovery budget of the window is spent", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", recovery: { maxRecoveries: 2, windowMs: 60_000 } });
    for (let i = 0; i < 2; i++) {
      await claimOne(stub, { leaseMs: 1_000 });
      clock.advance(1_000);
      await fireAlarm(stub);
      expect(value(await stub.getJob("a")).state).toBe("queued");
    }
    await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    const job = value(await stub.getJob("a"));
    expect(job).toMatchObject({ state: "settled", outcome: "interrupted", attempts: 1, generation: 3, settledAt: T0 + 3_000 });
    expect(job.error).toContain("recovery budget");
    expect(await alarmAt(stub)).toBe(retentionWakeOf(T0 + 3_000, "interrupted"));
  });

  it("settles interrupted at once with a budget of zero", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", recovery: { maxRecoveries: 0, windowMs: 60_000 } });
    await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(value(await stub.getJob("a")).outcome).toBe("interrupted");
  });

  it("grants the budget again once its window has passed", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", recovery: { maxRecoveries: 1, windowMs: 10_000 } });
    await claimOne(stub, { leaseMs: 1_000 }); // window opens at the first recovery, T0 + 1000
    clock.advance(1_000);
    await fireAlarm(stub);
    await claimOne(stub, { leaseMs: 10_000 }); // expires at T0 + 11000: the window has just closed
    clock.advance(10_000);
    await fireAlarm(stub);
    expect(value(await stub.getJob("a")).state).toBe("queued");
    const after = await row(stub, "a");
    expect(after).toMatchObject({ recovery_count: 1, recovery_window_start: T0 + 11_000 });
    await claimOne(stub, { leaseMs: 1_000 }); // inside the new window: the budget is spent
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(value(await stub.getJob("a")).outcome).toBe("interrupted");
  });

  it("does not grant the budget again one millisecond before the window passes", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", recovery: { maxRecoveries: 1, windowMs: 10_000 } });
    await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    await claimOne(stub, { leaseMs: 9_999 });
    clock.advance(9_999);
    await fireAlarm(stub);
    expect(value(await stub.getJob("a")).outcome).toBe("interrupted");
  });

  it("recovers every expired lease of the lane in one alarm", async () => {
    const { stub, clock } = await setup();
    for (let i = 0; i < 5; i++) await enqueue(stub, { id: `j${i}` });
    await claim(stub, { max: 5, leaseMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(value(await stub.info()).counts).toMatchObject({ queued: 5, running: 0 });
  });

  it("changes nothing when it runs twice in a row", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", recovery: { maxRecoveries: 0, windowMs: 1 } });
    await enqueue(stub, { id: "c" });
    await enqueue(stub, { id: "d", delayMs: 60_000 });
    await claim(stub, { max: 2, leaseMs: 1_000 });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    value(await stub.cancel("c"));
    clock.advance(1_000);
    expect(await fireAlarm(stub)).toBe(true);
    const once = await rows(stub);
    const alarm = await alarmAt(stub);
    expect(once.map((r) => [r.id, r.state, r.outcome])).toEqual([
      ["a", "queued", null],
      ["b", "settled", "interrupted"],
      ["c", "settled", "cancelled"],
      ["d", "queued", null],
    ]);
    expect(alarm).toBe(T0 + 60_000);
    await runInDurableObject(stub, (lane: Lane) => lane.alarm()); // at-least-once: the same alarm again
    expect(await rows(stub)).toEqual(once);
    expect(await alarmAt(stub)).toBe(alarm);
    refusal(await stub.complete("c", { token: lease.token }), "job_cancelled");
  });

  it("is disarmed after its last work is done", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", delayMs: 1_000 });
    clock.advance(1_000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await alarmAt(stub)).toBeNull();
    expect(await fireAlarm(stub)).toBe(false);
  });
});

describe("eviction", () => {
  it("keeps every job, setting and the alarm, and a lease still works afterwards", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    value(await stub.configure({ concurrency: 3, paused: false }));
    await enqueue(stub, { id: "a", payload: { x: 1 } });
    await enqueue(stub, { id: "b", delayMs: 60_000 });
    await enqueue(stub, { id: "c" });
    const { lease } = await claimOne(stub);
    value(await stub.cancel("c"));
    const before = await rows(stub);
    await evict(fixture);
    expect(await rows(stub)).toEqual(before);
    expect(value(await stub.info())).toMatchObject({ concurrency: 3, paused: false, counts: { queued: 1, running: 1, cancelled: 1 } });
    expect(await stub.storedAlarm()).toBe(T0 + DEFAULT_LEASE_MS);
    clock.advance(10);
    expect(value(await stub.complete("a", { token: lease.token, result: 2 })).job).toMatchObject({ lane: fixture.name, result: 2 });
    expect(await wake(stub)).toBe(T0 + 60_000);
  });

  it("re-arms on start: an alarm lost before eviction is set again", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await enqueue(stub, { id: "a", delayMs: 60_000 });
    await runInDurableObject(stub, (_lane, state) => state.storage.deleteAlarm());
    expect(await alarmAt(stub)).toBeNull();
    await evict(fixture);
    expect(await alarmAt(stub)).toBe(T0 + 60_000);
  });

  it("takes an overdue stored alarm for lost at start-up and writes it again", async () => {
    const fixture = await earlierAlarmStored();
    fixture.clock.advance(ALARM_OVERDUE_GRACE_MS + 1_001);
    startClocks.set(fixture.name, fixture.clock); // the new instance starts on the test's clock
    await evict(fixture);
    expect(await alarmAt(fixture.stub)).toBe(T0 + 60_000);
  });

  it("keeps a stored alarm overdue by no more than the grace at start-up", async () => {
    const fixture = await earlierAlarmStored();
    fixture.clock.advance(ALARM_OVERDUE_GRACE_MS + 1_000);
    startClocks.set(fixture.name, fixture.clock);
    await evict(fixture);
    expect(await alarmAt(fixture.stub)).toBe(T0 + 1_000);
  });

  it("writes again an alarm it wrote itself once that is overdue and has not run", async () => {
    const { stub, clock } = await earlierAlarmStored();
    clock.advance(ALARM_OVERDUE_GRACE_MS + 1_001);
    await enqueue(stub, { id: "b", delayMs: 120_000 });
    expect(await alarmAt(stub)).toBe(T0 + 60_000);
  });

  it("takes an alarm it wrote for an instant already past for lost only a grace after writing it", async () => {
    const { stub, clock } = await earlierAlarmStored();
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      clock.advance(ALARM_OVERDUE_GRACE_MS + 1_001);
      await enqueue(stub, { id: "b", delayMs: 120_000 }); // written again: T0 + 60 s
      clock.advance(60_000); // that one does not run either: written again, for the lease's expiry, past already
      await enqueue(stub, { id: "c", delayMs: 120_000 });
      await enqueue(stub, { id: "d", delayMs: 120_000 }); // just written: it runs at once, it is not lost
      expect(await alarmAt(stub)).toBe(T0 + 60_000);
      expect(lines.filter((l) => l.includes('"lane.alarm_lost"')).map((l) => JSON.parse(l).alarmWas)).toEqual([T0 + 1_000, T0 + 60_000]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("recovers a lease that expired while the object was away", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    await enqueue(stub, { id: "a" });
    await claimOne(stub, { leaseMs: 1_000 });
    await evict(fixture);
    clock.advance(5_000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "queued", attempts: 0 });
  });
});

/**
 * A lane whose stored alarm (T0 + 1 s) is earlier than its wake (a lease renewed to T0 + 60 s):
 * harmless while that alarm runs. The tests let it not run: stored, never scheduled, as a kill
 * between the two leaves it.
 */
async function earlierAlarmStored() {
  const fixture = await setup();
  await enqueue(fixture.stub, { id: "a" });
  const { lease } = await claimOne(fixture.stub, { leaseMs: 1_000 });
  value(await fixture.stub.renew("a", { token: lease.token, leaseMs: 60_000 }));
  expect(await alarmAt(fixture.stub)).toBe(T0 + 1_000);
  return fixture;
}
