/**
 * Bulk actions in one lane (docs/api.md "Bulk actions"): the jobs enqueued before the action was
 * accepted that match its filter, in enqueue order, a chunk of at most 500 an alarm, each at most
 * once across alarms and restarts; requeue, cancel and delete as their single routes; one at a time.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import type { PayloadStore } from "../../../src/durable/payloads/payload-store.js";
import type { Bulk } from "../../../src/shared/bulk.js";
import { BULK_CHUNK, BULK_KEPT_MS, BULK_SCAN } from "../../../src/shared/bulk.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { T0, TestEntropy, claimOne, enqueue, evict, fireAlarm, inject, refusal, row, setup, sql, value, wake, type LaneFixture, type LaneStub } from "../../helpers/lane.js";
import { PAYLOADS_LANE_PREFIX } from "../../helpers/test-worker.js";
import { transitions, waitForTransition } from "../../helpers/executors.js";

/** Enqueues `n` jobs of `kind` (batches of 1000), ids `${prefix}${i}`. */
async function enqueueMany(stub: LaneStub, n: number, prefix = "j", kind = "k"): Promise<void> {
  for (let from = 0; from < n; from += 1000) {
    const jobs = Array.from({ length: Math.min(1000, n - from) }, (_, i) => ({ id: `${prefix}${from + i}`, kind }));
    value(await stub.enqueueBatch({ jobs }));
  }
}

/** Fails every queued job of the lane (failLane: 500 a call). */
async function failAll(stub: LaneStub): Promise<void> {
  while (value(await stub.failLane({ reason: "boom" })).more);
}

/**
 * Runs alarms until the bulk action is done; answers how many alarms it took. (An instance started
 * after an eviction computes its first wake on the system clock, before the test's clock is back: that
 * alarm may run on its own, so an alarm not found is no failure.)
 */
async function runToEnd(stub: LaneStub, id: string): Promise<number> {
  for (let alarms = 1; alarms < 1000; alarms++) {
    await fireAlarm(stub);
    if (value(await stub.getBulk(id)).state === "done") return alarms;
  }
  throw new Error("the bulk action never finished");
}

const bulkRows = (f: LaneFixture) => sql<{ id: string }>(f.stub, `SELECT id FROM bulk_actions`);

describe("bulk requeue", () => {
  it("requeues the failed jobs enqueued before it, a chunk of 500 an alarm, and says how far it got", async () => {
    const { stub, clock } = await setup();
    await enqueueMany(stub, 1_200);
    await failAll(stub);
    const started = value(await stub.startBulk({ action: "requeue", filter: { outcome: "failed" } }));
    expect(started).toMatchObject({ action: "requeue", filter: { outcome: "failed" }, state: "running", matched: null, done: 0, skipped: 0, createdAt: T0, finishedAt: null });
    expect(await wake(stub)).toBe(T0); // its term: now
    // Enqueued after it was accepted: not its.
    await enqueue(stub, { id: "later" });
    value(await stub.cancel("later"));

    await fireAlarm(stub);
    expect(value(await stub.getBulk(started.id))).toMatchObject({ state: "running", done: BULK_CHUNK, skipped: 0, matched: null });
    expect(value(await stub.info()).counts).toMatchObject({ queued: BULK_CHUNK, failed: 1_200 - BULK_CHUNK });
    clock.advance(5);
    expect(await runToEnd(stub, started.id)).toBe(2);
    const done = value(await stub.getBulk(started.id));
    expect(done).toEqual({ ...started, state: "done", matched: 1_200, done: 1_200, skipped: 0, finishedAt: T0 + 5 });
    expect(value(await stub.info()).counts).toMatchObject({ queued: 1_200, failed: 0, cancelled: 1 });
    expect(value(await stub.getJob("j0"))).toMatchObject({ state: "queued", attempts: 0, outcome: null });
    expect(value(await stub.getJob("later"))).toMatchObject({ state: "settled", outcome: "cancelled" });
  });

  it("acts on each job at most once: a job it requeued that fails again is not requeued again, across a restart", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await enqueueMany(stub, 1_100);
    await failAll(stub);
    const { id } = value(await stub.startBulk({ action: "requeue", filter: { outcome: "failed" } }));
    await fireAlarm(stub);
    // The first chunk's jobs fail again (failLane takes queued jobs in enqueue order: exactly those).
    expect(value(await stub.failLane({ reason: "again" })).failed).toHaveLength(BULK_CHUNK);
    await evict(fixture); // its memory gone: the cursor is in its row
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 1_100, skipped: 0, matched: 1_100 });
    expect(value(await stub.getJob("j0"))).toMatchObject({ state: "settled", outcome: "failed", error: "again" });
    expect(value(await stub.getJob(`j${BULK_CHUNK}`))).toMatchObject({ state: "queued", attempts: 0 });
    expect(value(await stub.info()).counts).toMatchObject({ queued: 1_100 - BULK_CHUNK, failed: BULK_CHUNK });
  });

  it("counts the matching jobs it cannot requeue as skipped (completed, running, queued)", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "done" });
    const leased = await claimOne(stub);
    value(await stub.complete("done", { token: leased.lease.token }));
    await enqueue(stub, { id: "running" });
    await claimOne(stub);
    await enqueue(stub, { id: "queued", runAt: T0 + 1e9 });
    await enqueue(stub, { id: "cancelled" });
    value(await stub.cancel("cancelled"));
    const { id } = value(await stub.startBulk({ action: "requeue", filter: { kind: "k" } }));
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 1, skipped: 3, matched: 4 });
    expect(value(await stub.getJob("cancelled")).state).toBe("queued");
    expect(value(await stub.getJob("done")).outcome).toBe("completed");
  });

  it("tells each job's transition as the single routes do: requeued settled → queued, cancelled queued → settled", async () => {
    // LANE tells its transitions to the tests (PLAIN_LANE does not); no executor runs kind "k".
    const stub: LaneStub = env.LANE.getByName(crypto.randomUUID());
    await inject(stub, new ManualClock(T0), new TestEntropy());
    const ids = [0, 1, 2].map((i) => `told-${crypto.randomUUID()}-${i}`);
    for (const id of ids) await enqueue(stub, { id });
    await failAll(stub);
    const requeue = value(await stub.startBulk({ action: "requeue", filter: { outcome: "failed" } }));
    await runToEnd(stub, requeue.id);
    for (const id of ids) await runInDurableObject(stub, () => waitForTransition(id, (e) => e.from === "settled" && e.to === "queued"));
    const cancel = value(await stub.startBulk({ action: "cancel", filter: { state: "queued" }, reason: "told" }));
    await runToEnd(stub, cancel.id);
    for (const id of ids) {
      await runInDurableObject(stub, () => waitForTransition(id, (e) => e.from === "queued" && e.to === "settled" && e.outcome === "cancelled"));
      // Each told once: failed, requeued, cancelled.
      expect(transitions(id).map((e) => `${e.from}>${e.to}`)).toEqual(["null>queued", "queued>settled", "settled>queued", "queued>settled"]);
    }
  });

  it("runs on a paused lane (starting no job)", async () => {
    const { stub } = await setup();
    await enqueueMany(stub, 3);
    await failAll(stub);
    value(await stub.configure({ paused: true }));
    const { id } = value(await stub.startBulk({ action: "requeue", filter: { state: "settled" } }));
    await runToEnd(stub, id);
    expect(value(await stub.info()).counts).toMatchObject({ queued: 3, running: 0 });
  });
});

describe("the filter", () => {
  it("matches every field when the lane reaches the job: kind, queue, state (blocked), createdAfter and createdBefore exclusive", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", kind: "x", queue: "q" }); // T0
    clock.advance(10);
    await enqueue(stub, { id: "b", kind: "x", queue: "q" }); // T0 + 10
    await enqueue(stub, { id: "c", kind: "y", queue: "q" });
    await enqueue(stub, { id: "d", kind: "x" });
    clock.advance(10);
    await enqueue(stub, { id: "e", kind: "x", queue: "q" }); // T0 + 20
    await enqueue(stub, { id: "dep", kind: "z", runAt: T0 + 1e9 });
    await enqueue(stub, { id: "blocked", kind: "z", dependsOn: [{ id: "dep" }] });
    const { id } = value(await stub.startBulk({ action: "cancel", filter: { kind: "x", queue: "q", createdAfter: T0, createdBefore: T0 + 20 } }));
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 1, skipped: 0 });
    expect(value(await stub.getJob("b")).outcome).toBe("cancelled");
    for (const other of ["a", "c", "d", "e"]) expect(value(await stub.getJob(other)).state).toBe("queued");

    const blocked = value(await stub.startBulk({ action: "cancel", filter: { state: "blocked" } }));
    await runToEnd(stub, blocked.id);
    expect(value(await stub.getBulk(blocked.id))).toMatchObject({ done: 1, matched: 1 });
    expect(value(await stub.getJob("blocked")).outcome).toBe("cancelled");
    expect(value(await stub.getJob("dep")).state).toBe("queued");
  });

  it("looks at a bounded range of jobs a turn: a rare match far behind many others is reached over several alarms", async () => {
    const { stub } = await setup();
    await enqueueMany(stub, BULK_SCAN + 10);
    await enqueue(stub, { id: "rare", kind: "rare" });
    const { id } = value(await stub.startBulk({ action: "cancel", filter: { kind: "rare" } }));
    await fireAlarm(stub);
    expect(value(await stub.getBulk(id))).toMatchObject({ state: "running", done: 0, skipped: 0 });
    expect(await runToEnd(stub, id)).toBe(1);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 1, matched: 1 });
  });
});

describe("bulk cancel", () => {
  it("settles queued and blocked jobs cancelled with its reason, asks running ones to stop, skips settled ones", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "r" });
    const lease = await claimOne(stub);
    await enqueue(stub, { id: "q" });
    await enqueue(stub, { id: "dep", kind: "other", runAt: T0 + 1e9 });
    await enqueue(stub, { id: "b", dependsOn: [{ id: "dep" }] });
    await enqueue(stub, { id: "s" });
    value(await stub.cancel("s"));
    const statsBefore = value(await stub.info()).stats.cancelled;
    const { id } = value(await stub.startBulk({ action: "cancel", filter: { kind: "k" }, reason: "bug 7" }));
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 3, skipped: 1, matched: 4 });
    expect(value(await stub.getJob("q"))).toMatchObject({ state: "settled", outcome: "cancelled" });
    expect(value(await stub.getJob("b"))).toMatchObject({ state: "settled", outcome: "cancelled" });
    expect((await row(stub, "q"))!.cancel_reason).toBe("bug 7");
    expect(value(await stub.getJob("r"))).toMatchObject({ state: "running", cancelRequested: true });
    refusal(await stub.complete("r", { token: lease.lease.token }), "job_cancelled");
    expect(value(await stub.info()).stats.cancelled).toBe(statsBefore + 3);
  });
});

describe("bulk delete", () => {
  it("deletes settled jobs with their checkpoints as a sweep does, skipping unsettled ones", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "f", maxAttempts: 1 });
    const lease = await claimOne(stub);
    value(await stub.saveCheckpoint("f", "step", { token: lease.lease.token, value: 1 }));
    value(await stub.fail("f", { token: lease.lease.token, error: "x" }));
    await enqueue(stub, { id: "q" });
    const { id } = value(await stub.startBulk({ action: "delete", filter: { kind: "k" } }));
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 1, skipped: 1 });
    refusal(await stub.getJob("f"), "job_not_found");
    expect(await sql(stub, `SELECT * FROM checkpoints`)).toEqual([]);
    expect(value(await stub.info()).counts).toMatchObject({ failed: 0, queued: 1 });
  });

  it("skips a settled job a sweep would keep: its dependents not yet told", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "dep" });
    await enqueue(stub, { id: "kept" });
    value(await stub.cancel("kept"));
    value(await stub.cancel("dep"));
    // An owed notice about "kept" (its dependent's lane has not acknowledged it yet).
    await runInDurableObject(stub, (_lane, state) => {
      const seq = state.storage.sql.exec<{ seq: number }>(`SELECT seq FROM jobs WHERE id = 'kept'`).one().seq;
      state.storage.sql.exec(`INSERT INTO outbox (dep_seq, dep_id, outcome, generation, lane, id, next_at, created_at) VALUES (?, 'kept', 'cancelled', 0, 'elsewhere', 'w', ?, ?)`, seq, T0 + 1e9, T0);
    });
    const { id } = value(await stub.startBulk({ action: "delete", filter: { outcome: "cancelled" } }));
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 1, skipped: 1 });
    expect(value(await stub.getJob("kept")).outcome).toBe("cancelled");
    refusal(await stub.getJob("dep"), "job_not_found");
  });

  it("deletes a deleted job's payload and result in R2 once its chunk has committed, keeping a skipped job's", async () => {
    // A lane that sees the PAYLOADS bucket (its name's prefix: test-worker.ts).
    const name = `${PAYLOADS_LANE_PREFIX}${crypto.randomUUID()}`;
    const stub: LaneStub = env.PLAIN_LANE.getByName(name);
    await inject(stub, new ManualClock(T0), new TestEntropy());
    const big = (tag: string) => ({ tag, blob: "x".repeat(200 * 1024) });
    const objects = async () => (await env.PAYLOADS.list({ prefix: `${name}/` })).objects.map((o) => o.key.split("/")[1]);
    value(await stub.enqueue({ id: "done", kind: "k", payload: big("p") }));
    const { lease } = await claimOne(stub);
    value(await stub.complete("done", { token: lease.token, result: big("r") }));
    value(await stub.enqueue({ id: "waiting", kind: "k", payload: big("w") }));
    expect(await objects()).toEqual(["done", "done", "waiting"]);

    const { id } = value(await stub.startBulk({ action: "delete", filter: { kind: "k" } }));
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ done: 1, skipped: 1 });
    await runInDurableObject(stub, (lane: Lane) => (lane as unknown as { parts: { payloads: PayloadStore } }).parts.payloads.sweep.settled());
    expect(await objects()).toEqual(["waiting"]);
    expect(await sql(stub, "SELECT key FROM payload_objects WHERE state <> 'marker' AND key NOT LIKE '%/waiting/%'")).toEqual([]);
    expect(value(await stub.getJob("waiting")).payload).toEqual(big("w"));
  });
});

describe("one at a time, kept a week", () => {
  it("refuses a second while one runs (bulk_running, the running one in details), changing nothing; accepts one after", async () => {
    const f = await setup();
    const { stub } = f;
    await enqueue(stub, { id: "a" });
    const first = value(await f.stub.startBulk({ action: "cancel", filter: { kind: "k" } }));
    const refused = refusal(await stub.startBulk({ action: "requeue", filter: { outcome: "failed" } }), "bulk_running");
    expect((refused.details as { bulk: Bulk }).bulk).toEqual(first);
    expect(await bulkRows(f)).toEqual([{ id: first.id }]);
    await runToEnd(stub, first.id);
    const second = value(await stub.startBulk({ action: "requeue", filter: { outcome: "cancelled" } }));
    expect(second.id).not.toBe(first.id);
  });

  it("keeps a finished one 7 days, then the lane's alarm removes it (its term)", async () => {
    const f = await setup();
    const { stub, clock } = f;
    const { id } = value(await stub.startBulk({ action: "delete", filter: { state: "settled" } }));
    await runToEnd(stub, id);
    expect(value(await stub.getBulk(id))).toMatchObject({ state: "done", matched: 0, finishedAt: T0 });
    expect(await wake(stub)).toBe(T0 + BULK_KEPT_MS);
    clock.advance(BULK_KEPT_MS - 1);
    value(await stub.getBulk(id));
    clock.advance(1);
    refusal(await stub.getBulk(id), "bulk_not_found");
    await fireAlarm(stub);
    expect(await bulkRows(f)).toEqual([]);
    expect(await wake(stub)).toBeNull();
  });

  it("answers bulk_not_found for an id it never had", async () => {
    const { stub } = await setup();
    refusal(await stub.getBulk("nope"), "bulk_not_found");
  });
});

describe("bad input", () => {
  it.each([
    ["an empty filter", { action: "requeue", filter: {} }, ["filter"]],
    ["no filter", { action: "requeue" }, ["filter"]],
    ["an unknown filter field", { action: "requeue", filter: { outcome: "failed", color: "red" } }, ["filter", "color"]],
    ["a bad state", { action: "cancel", filter: { state: "gone" } }, ["filter", "state"]],
    ["a bad outcome", { action: "requeue", filter: { outcome: "lost" } }, ["filter", "outcome"]],
    ["a bad kind", { action: "requeue", filter: { kind: "no spaces" } }, ["filter", "kind"]],
    ["a bad instant", { action: "requeue", filter: { createdAfter: -1 } }, ["filter", "createdAfter"]],
    ["an unknown action", { action: "retry", filter: { outcome: "failed" } }, ["action"]],
    ["a reason with requeue", { action: "requeue", filter: { outcome: "failed" }, reason: "x" }, ["reason"]],
    ["a reason with delete", { action: "delete", filter: { outcome: "failed" }, reason: "x" }, ["reason"]],
    ["an unknown field", { action: "delete", filter: { outcome: "failed" }, dryRun: true }, ["dryRun"]],
  ])("refuses %s (400 naming the field), storing nothing", async (_what, body, path) => {
    const f = await setup();
    await enqueue(f.stub, { id: "a" });
    const alarm = await f.stub.storedAlarm();
    const refused = refusal(await f.stub.startBulk(body), "invalid_request");
    expect(refused.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    expect(await bulkRows(f)).toEqual([]);
    expect(await f.stub.storedAlarm()).toBe(alarm);
  });
});
