/**
 * The lane's per-minute history (docs/operations.md, "History"): buckets that count a scripted
 * sequence exactly, a ring that never holds more than 1440 rows, nothing older than 24 hours, written
 * in the statement of the transition it counts, and nothing at all with recording off.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { History } from "../../../src/durable/history/history.js";
import type { Lane } from "../../../src/durable/lane.js";
import { keepUpkeep, SNAP_COLUMNS, type Snap } from "../../../src/durable/store/upkeep.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { HISTORY_MINUTES, MINUTE_MS, type HistoryBucket } from "../../../src/shared/history.js";
import { T0, claimOne, enqueue, fireAlarm, inject, refusal, row, setup, sql, value, type LaneStub } from "../../helpers/lane.js";

/** The first minute boundary at or after T0. */
const M0 = Math.ceil(T0 / MINUTE_MS) * MINUTE_MS;

async function history(stub: LaneStub, windowMs?: number): Promise<HistoryBucket[]> {
  return value(await stub.history(windowMs === undefined ? {} : { windowMs })).buckets;
}

const counts = (b: HistoryBucket) => [b.enqueued, b.started, b.completed, b.failed, b.depth];

describe("buckets", () => {
  it("count a scripted sequence across minutes exactly, every minute listed, the depth carried", async () => {
    const { stub, clock } = await setup();
    clock.set(M0 + 5_000);
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", maxAttempts: 2 });
    await enqueue(stub, { id: "c" });
    const a = await claimOne(stub);
    value(await stub.complete(a.id, { token: a.lease.token }));

    clock.set(M0 + MINUTE_MS + 1_000);
    const b1 = await claimOne(stub);
    expect(b1.id).toBe("b");
    value(await stub.fail("b", { token: b1.lease.token, error: "once", retryAfterMs: 0 })); // a retry: not failed
    const b2 = await claimOne(stub);
    value(await stub.fail("b", { token: b2.lease.token, error: "twice" }));

    clock.set(M0 + 3 * MINUTE_MS + 59_999);
    await enqueue(stub, { id: "d" });
    value(await stub.cancel("c", {}));

    clock.set(M0 + 4 * MINUTE_MS + 30_000);
    const buckets = await history(stub, 5 * MINUTE_MS);
    expect(buckets.map((b) => b.at)).toEqual([0, 1, 2, 3, 4].map((m) => M0 + m * MINUTE_MS));
    expect(buckets.map(counts)).toEqual([
      [3, 1, 1, 0, 2],
      [0, 2, 0, 1, 1],
      [0, 0, 0, 0, 1],
      [1, 0, 0, 0, 1],
      [0, 0, 0, 0, 1],
    ]);
    // The default window is the last hour: 60 minutes, this one last.
    const hour = await history(stub);
    expect(hour).toHaveLength(60);
    expect(hour.at(-1)!.at).toBe(M0 + 4 * MINUTE_MS);
    expect(hour.slice(-5)).toEqual(buckets);
    expect(hour[0]).toMatchObject({ enqueued: 0, depth: 0 });
  });

  it("count a job born running as enqueued and started, and a blocked job in the depth only once released", async () => {
    const { stub, clock } = await setup();
    clock.set(M0);
    await enqueue(stub, { id: "first" });
    await enqueue(stub, { id: "after", dependsOn: [{ id: "first" }] });
    expect((await history(stub, MINUTE_MS)).map(counts)).toEqual([[2, 0, 0, 0, 1]]);
    const first = await claimOne(stub);
    value(await stub.complete(first.id, { token: first.lease.token }));
    // The dependent is released (queued, unblocked) by the notice the lane's alarm tells itself.
    await fireAlarm(stub);
    expect((await row(stub, "after"))).toMatchObject({ state: "queued", blocked: 0 });
    expect((await history(stub, MINUTE_MS)).map(counts)).toEqual([[2, 1, 1, 0, 1]]);
  });

  it("lower the depth of the minute being counted when queued jobs are purged (a delete has no instant)", async () => {
    const { stub, clock } = await setup();
    clock.set(M0);
    for (const id of ["a", "b", "c"]) await enqueue(stub, { id, queue: "q" });
    clock.set(M0 + 2 * MINUTE_MS);
    expect(value(await stub.purgeQueue("q"))).toMatchObject({ purged: 3 });
    expect((await history(stub, 3 * MINUTE_MS)).map(counts)).toEqual([
      [3, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
    ]);
  });

  it("keep at most 1440 rows after more than 24 hours of minutes, and answer only the last 24 hours", async () => {
    const { stub, clock } = await setup();
    clock.set(M0);
    const minutes = HISTORY_MINUTES + 60;
    // 1,500 enqueues, a minute apart: called inside the object, one RPC in all (one each took over
    // 20 s in a loaded full run).
    await runInDurableObject(stub, async (lane: Lane) => {
      for (let m = 0; m < minutes; m++) {
        clock.set(M0 + m * MINUTE_MS);
        value(await lane.enqueue({ kind: "k", id: `j${m}` }));
      }
    });
    expect(await sql(stub, `SELECT COUNT(*) AS n FROM history`)).toEqual([{ n: HISTORY_MINUTES }]);
    const day = await history(stub, 86_400_000);
    expect(day).toHaveLength(HISTORY_MINUTES);
    expect(day[0]!.at).toBe(M0 + (minutes - HISTORY_MINUTES) * MINUTE_MS);
    expect(day.every((b) => b.enqueued === 1)).toBe(true);
    expect(day.map((b) => b.depth)).toEqual(Array.from({ length: HISTORY_MINUTES }, (_, i) => minutes - HISTORY_MINUTES + i + 1));
  });

  it("never answer a bucket older than 24 hours, even one still in its slot", async () => {
    const { stub, clock } = await setup();
    const m0 = M0 / MINUTE_MS;
    clock.set(M0 + 10_000);
    for (const id of ["a", "b", "c"]) await enqueue(stub, { id });
    clock.set(M0 + MINUTE_MS); // the first transition of the next minute moves the minute before to the ring
    await enqueue(stub, { id: "d" });
    const ring = () => sql<{ slot: number; minute: number; enqueued: number }>(stub, `SELECT slot, minute, enqueued FROM history WHERE minute >= ? ORDER BY minute`, m0);
    expect(await ring()).toEqual([{ slot: m0 % HISTORY_MINUTES, minute: m0, enqueued: 3 }]);
    // Exactly a day later: this minute's slot still holds the minute of a day ago.
    clock.set(M0 + HISTORY_MINUTES * MINUTE_MS + 10_000);
    const day = await history(stub, 86_400_000);
    expect(day).toHaveLength(HISTORY_MINUTES);
    expect(day[0]).toMatchObject({ at: M0 + MINUTE_MS, enqueued: 1 });
    expect(day.slice(1).every((b) => b.enqueued === 0 && b.started === 0)).toBe(true);
    expect(day.every((b) => b.depth === 4)).toBe(true);
    // Transitions now and in the next minute: this minute's row goes to the old minute's slot, reset.
    await enqueue(stub, { id: "e" });
    expect((await history(stub, MINUTE_MS)).map(counts)).toEqual([[1, 0, 0, 0, 5]]);
    clock.advance(MINUTE_MS);
    await enqueue(stub, { id: "f" });
    expect(await ring()).toEqual([
      { slot: (m0 + 1) % HISTORY_MINUTES, minute: m0 + 1, enqueued: 1 },
      { slot: m0 % HISTORY_MINUTES, minute: m0 + HISTORY_MINUTES, enqueued: 1 },
    ]);
    expect((await history(stub, 2 * MINUTE_MS)).map(counts)).toEqual([[1, 0, 0, 0, 5], [1, 0, 0, 0, 6]]);
  });

  it("refuse a window that is not a duration of at most 24 hours, naming windowMs", async () => {
    const { stub } = await setup();
    for (const windowMs of [0, -1, 1.5, 86_400_001, "60000", null]) {
      const error = refusal(await stub.history({ windowMs }), "invalid_request");
      expect(error.details).toEqual([expect.objectContaining({ path: ["windowMs"] })]);
    }
    refusal(await stub.history({ window: 60_000 }), "invalid_request");
    expect(await history(stub, 1)).toHaveLength(1);
    expect(await history(stub, 86_400_000)).toHaveLength(HISTORY_MINUTES);
  });
});

describe("written with the transition", () => {
  it("in the same transaction: visible inside it, gone with it when it fails", async () => {
    const { stub, clock } = await setup();
    clock.set(M0);
    await enqueue(stub, { id: "a" });
    expect((await history(stub, MINUTE_MS)).map(counts)).toEqual([[1, 0, 0, 0, 1]]);
    await runInDurableObject(stub, (_lane, state) => {
      const records = new History(state.storage, clock);
      const ring = () => state.storage.sql.exec(`SELECT minute, enqueued, depth FROM history WHERE minute >= ?`, M0 / MINUTE_MS).toArray();
      // A claim in the next minute: the minute before goes to the ring, and this one counts the start.
      clock.set(M0 + MINUTE_MS);
      expect(() =>
        state.storage.transactionSync(() => {
          const [row] = state.storage.sql.exec<Snap>(
            `UPDATE jobs SET state = 'running', attempts = 1, generation = 1, lease_token = 'x', lease_until = ?1, claimed_at = ?1, updated_at = ?1 WHERE id = 'a'
             RETURNING ${SNAP_COLUMNS}`,
            M0 + MINUTE_MS,
          ).toArray();
          keepUpkeep(state.storage.sql, [{ old: { ...row!, state: "queued", updated_at: M0, claimed_at: null, lease_token: null }, new: row! }], M0 + MINUTE_MS);
          expect(ring()).toEqual([{ minute: M0 / MINUTE_MS, enqueued: 1, depth: 1 }]);
          expect(records.read(2 * MINUTE_MS).map(counts)).toEqual([[1, 0, 0, 0, 1], [0, 1, 0, 0, 0]]);
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      expect(ring()).toEqual([]);
      expect(records.read(2 * MINUTE_MS).map(counts)).toEqual([[1, 0, 0, 0, 1], [0, 0, 0, 0, 1]]);
    });
  });

  it("writes nothing with recording off by the lane class; switched on or off, the ring starts afresh", async () => {
    const stub = env.QUIET_LANE.getByName(crypto.randomUUID());
    const clock = new ManualClock(M0);
    await inject(stub, clock);
    for (const id of ["a", "b"]) value(await stub.enqueue({ id, kind: "k" }));
    const [job] = value(await stub.claim({ max: 1 })).jobs;
    value(await stub.complete(job!.id, { token: job!.lease.token }));
    expect(await sql(stub, `SELECT * FROM history`)).toEqual([]);
    expect(await sql(stub, `SELECT history_minute FROM lane_counts`)).toEqual([{ history_minute: null }]);
    // No counts; the depth is the lane's (one job queued), carried over the window.
    expect(value(await stub.history({ windowMs: 2 * MINUTE_MS })).buckets.map(counts)).toEqual([[0, 0, 0, 0, 1], [0, 0, 0, 0, 1]]);

    // The same database with recording on (as a lane class that records would start it): counted
    // from then on; off again: the ring cleared, and nothing more written.
    await runInDurableObject(stub, (_lane, state) => {
      const records = new History(state.storage, clock);
      records.start(true);
      const cancelled = state.storage.sql.exec<Snap>(
        `UPDATE jobs SET state = 'settled', outcome = 'cancelled', settled_at = ?1, updated_at = ?1 WHERE state = 'queued' RETURNING ${SNAP_COLUMNS}`,
        M0 + 1,
      ).toArray();
      keepUpkeep(state.storage.sql, cancelled.map((row) => ({ old: { ...row, state: "queued", outcome: null }, new: row })), M0 + 1);
      expect(records.read(MINUTE_MS).map(counts)).toEqual([[0, 0, 0, 0, 0]]);
      // Counting from the minute it started, the depth then kept as the minute before's.
      const kept = () => ({
        counting: state.storage.sql.exec(`SELECT history_minute AS minute FROM lane_counts`).one().minute,
        ring: state.storage.sql.exec(`SELECT minute, depth FROM history`).toArray(),
      });
      expect(kept()).toEqual({ counting: M0 / MINUTE_MS, ring: [{ minute: M0 / MINUTE_MS - 1, depth: 1 }] });
      expect(records.read(2 * MINUTE_MS).map(counts)).toEqual([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]]);
      records.start(true); // as it is: nothing to do
      expect(kept()).toEqual({ counting: M0 / MINUTE_MS, ring: [{ minute: M0 / MINUTE_MS - 1, depth: 1 }] });
      records.start(false);
    });
    clock.advance(MINUTE_MS);
    value(await stub.enqueue({ id: "c", kind: "k" }));
    expect(await sql(stub, `SELECT * FROM history`)).toEqual([]);
    expect(await sql(stub, `SELECT history_minute FROM lane_counts`)).toEqual([{ history_minute: null }]);
  });
});
