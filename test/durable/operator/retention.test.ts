/**
 * Retention on the alarm, with the manual clock: nothing goes before its horizon,
 * everything after it, in bounded batches over several alarms, re-armed at once while more remain;
 * the next horizon is a wake term of its own.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { keepUpkeep, SNAP_COLUMNS, type Snap } from "../../../src/durable/store/upkeep.js";
import {
  DEFAULT_COMPLETED_RETENTION_MS,
  DEFAULT_FAILED_RETENTION_MS,
  RETENTION_BATCH,
  RETENTION_SLACK_MS,
} from "../../../src/shared/defaults.js";
import { T0, alarmAt, claim, enqueue, fireAlarm, setup, sql, value, wake, type LaneStub } from "../../helpers/lane.js";

const ids = async (stub: LaneStub) => (await sql<{ id: string }>(stub, `SELECT id FROM jobs ORDER BY seq`)).map((r) => r.id);

/**
 * `n` completed jobs settled at `settledAt`, `settledAt + 1`, … written as rows (counted by the
 * store's upkeep like any other): thousands of settlements without thousands of calls.
 */
async function settledRows(stub: LaneStub, prefix: string, n: number, settledAt: number): Promise<void> {
  await runInDurableObject(stub, (_lane, state) => {
    const sql = state.storage.sql;
    const rows = sql.exec<Snap>(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
       INSERT INTO jobs (id, kind, payload, priority, run_at, state, outcome, attempts, generation, max_attempts,
         backoff_base_ms, backoff_max_ms, timeout_ms, created_at, updated_at, settled_at)
       SELECT ?3 || i, 'k', 'null', 0, ?2, 'settled', 'completed', 1, 1, 3, 1000, 300000, 60000, ?2, ?2, ?2 + i FROM n
       RETURNING ${SNAP_COLUMNS}`,
      n,
      settledAt,
      prefix,
    ).toArray();
    keepUpkeep(sql, rows.map((row) => ({ old: null, new: row })), settledAt);
  });
}

describe("retention", () => {
  it("deletes completed jobs after completedMs and the others after failedMs, nothing before", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "completed" });
    await enqueue(stub, { id: "failed", maxAttempts: 1 });
    await enqueue(stub, { id: "cancelled", delayMs: 60_000 });
    const held = new Map(value(await stub.claim({ max: 2 })).jobs.map((j) => [j.id, j.lease.token]));
    value(await stub.complete("completed", { token: held.get("completed")! }));
    value(await stub.fail("failed", { token: held.get("failed")!, error: "no" }));
    value(await stub.cancel("cancelled"));
    await enqueue(stub, { id: "queued", delayMs: DEFAULT_FAILED_RETENTION_MS * 2 });

    // The next horizon is the wake: the completed job's, plus the slack.
    const firstHorizon = T0 + DEFAULT_COMPLETED_RETENTION_MS;
    expect(await wake(stub)).toBe(firstHorizon + RETENTION_SLACK_MS);
    // At the horizon itself the job has been settled exactly completedMs, not longer: it stays.
    clock.set(firstHorizon);
    await fireAlarm(stub);
    expect(await ids(stub)).toEqual(["completed", "failed", "cancelled", "queued"]);
    clock.set(firstHorizon + RETENTION_SLACK_MS);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await ids(stub)).toEqual(["failed", "cancelled", "queued"]);
    expect(value(await stub.info()).counts).toMatchObject({ completed: 0, failed: 1, cancelled: 1, queued: 1 });

    const secondHorizon = T0 + DEFAULT_FAILED_RETENTION_MS;
    expect(await wake(stub)).toBe(secondHorizon + RETENTION_SLACK_MS);
    clock.set(secondHorizon);
    await fireAlarm(stub);
    expect(await ids(stub)).toEqual(["failed", "cancelled", "queued"]);
    clock.set(secondHorizon + RETENTION_SLACK_MS);
    await fireAlarm(stub);
    expect(await ids(stub)).toEqual(["queued"]);
    // Only the queued job's runAt is left to wake for.
    expect(await wake(stub)).toBe(T0 + DEFAULT_FAILED_RETENTION_MS * 2);
  });

  it("applies failedMs to failed, cancelled and interrupted jobs, and null keeps them until a sweep", async () => {
    const { stub, clock } = await setup();
    value(await stub.configure({ retention: { completedMs: null, failedMs: 1_000 } }));
    for (const id of ["completed", "failed", "interrupted"]) await enqueue(stub, { id, maxAttempts: 1, recovery: { maxRecoveries: 0, windowMs: 1_000 } });
    await enqueue(stub, { id: "cancelled", delayMs: 60_000 });
    const held = new Map(value(await stub.claim({ max: 3, leaseMs: 100 })).jobs.map((j) => [j.id, j.lease.token]));
    value(await stub.complete("completed", { token: held.get("completed")! }));
    value(await stub.fail("failed", { token: held.get("failed")!, error: "no" }));
    value(await stub.cancel("cancelled"));
    clock.advance(100);
    await fireAlarm(stub); // the lease of "interrupted" ran out with no recovery budget
    const outcomes = await sql<{ id: string; outcome: string }>(stub, `SELECT id, outcome FROM jobs ORDER BY id`);
    expect(outcomes.map((r) => r.outcome)).toEqual(["cancelled", "completed", "failed", "interrupted"]);

    expect(await wake(stub)).toBe(T0 + 1_000 + RETENTION_SLACK_MS); // the oldest failed-like job's horizon
    clock.set(T0 + 400 * 24 * 3_600_000);
    await fireAlarm(stub);
    expect(await ids(stub)).toEqual(["completed"]);
    expect(await wake(stub)).toBeNull(); // completed jobs are kept: no horizon left
    expect(value(await stub.sweep({ settledBefore: clock.now() })).removed).toBe(1);
  });

  it("deletes in bounded batches over several alarms, re-armed at once while more remain, serving jobs in between", async () => {
    const { stub, clock } = await setup();
    const n = 2 * RETENTION_BATCH + RETENTION_BATCH / 2;
    await settledRows(stub, "old-", n, T0 - DEFAULT_COMPLETED_RETENTION_MS - n - 10);
    await settledRows(stub, "new-", 1, T0);
    await enqueue(stub, { id: "fresh" });
    const count = async () => value(await stub.info()).counts.completed;
    expect(await count()).toBe(n + 1);
    expect(await wake(stub)).toBe(T0); // expired jobs remain: now

    expect(await fireAlarm(stub)).toBe(true);
    expect(await count()).toBe(n + 1 - RETENTION_BATCH);
    expect(await alarmAt(stub)).toBe(T0); // more remain: at once
    // Between two passes the lane serves its jobs.
    const [fresh] = await claim(stub);
    expect(fresh!.id).toBe("fresh");
    value(await stub.release("fresh", { token: fresh!.lease.token }));

    expect(await fireAlarm(stub)).toBe(true);
    expect(await count()).toBe(n + 1 - 2 * RETENTION_BATCH);
    expect(await fireAlarm(stub)).toBe(true);
    // The one row settled at T0 is not expired yet: it stays, and sets the next horizon.
    expect(await count()).toBe(1);
    expect(await alarmAt(stub)).toBe(T0 + DEFAULT_COMPLETED_RETENTION_MS + RETENTION_SLACK_MS);
    clock.set(T0 + DEFAULT_COMPLETED_RETENTION_MS + RETENTION_SLACK_MS);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await count()).toBe(0);
  });

  it("moves the wake when the lane's retention changes", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    value(await stub.cancel("a"));
    expect(await wake(stub)).toBe(T0 + DEFAULT_FAILED_RETENTION_MS + RETENTION_SLACK_MS);
    value(await stub.configure({ retention: { failedMs: 60_000 } }));
    expect(await wake(stub)).toBe(T0 + 60_000 + RETENTION_SLACK_MS);
    value(await stub.configure({ retention: { failedMs: null } }));
    expect(await wake(stub)).toBeNull();
    expect(value(await stub.info()).retention).toEqual({ completedMs: DEFAULT_COMPLETED_RETENTION_MS, failedMs: null });
  });
});
