import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION, migrate } from "../../../src/durable/store/migrations.js";
import { T0, claimOne, dropTables, enqueue, evict, fireAlarm, refusal, row, rows, setup, sql, value, wake, type LaneStub } from "../../helpers/lane.js";

/** Rebuilds the lane's database at an older schema version, as an older release left it. */
async function downgradeTo(stub: LaneStub, version: number): Promise<void> {
  await runInDurableObject(stub, (_lane, state) => {
    dropTables(state.storage);
    expect(migrate(state.storage, T0, version)).toEqual({ ok: true, version: version });
  });
}

const downgradeToV1 = (stub: LaneStub) => downgradeTo(stub, 1);

/** A v1 row: the columns of migration 1 only. */
function insertV1(
  stub: LaneStub,
  job: { id: string; state: string; outcome?: string | null; attempts?: number; generation?: number; queue?: string | null; priority?: number; runAt?: number; leaseToken?: string | null; leaseUntil?: number | null; cancelRequested?: number; result?: string | null; error?: string | null; settledAt?: number | null },
) {
  return sql(
    stub,
    `INSERT INTO jobs (id, kind, payload, queue, priority, run_at, state, outcome, attempts, max_attempts, backoff_base_ms,
       backoff_max_ms, timeout_ms, result, error, cancel_requested, generation, lease_token, lease_until, claimed_at,
       created_at, updated_at, settled_at)
     VALUES (?, 'k', '{"v":1}', ?, ?, ?, ?, ?, ?, 3, 1000, 300000, 60000, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    job.id,
    job.queue ?? null,
    job.priority ?? 0,
    job.runAt ?? T0 - 1_000,
    job.state,
    job.outcome ?? null,
    job.attempts ?? 0,
    job.result ?? null,
    job.error ?? null,
    job.cancelRequested ?? 0,
    job.generation ?? job.attempts ?? 0,
    job.leaseToken ?? null,
    job.leaseUntil ?? null,
    job.leaseToken ? T0 - 500 : null,
    T0 - 2_000,
    T0 - 1_000,
    job.settledAt ?? null,
  );
}

describe("migrations", () => {
  it("brings a new lane to the latest version, each migration recorded once", async () => {
    const { stub } = await setup();
    const applied = await sql<{ version: number; name: string }>(stub, `SELECT version, name FROM schema_migrations ORDER BY version`);
    expect(applied).toEqual(MIGRATIONS.map(({ version, name }) => ({ version, name })));
    expect(applied.at(-1)!.version).toBe(SCHEMA_VERSION);
  });

  it("does nothing when run again", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const before = await rows(stub);
    await runInDurableObject(stub, (_lane, state) => expect(migrate(state.storage, T0 + 1)).toEqual({ ok: true, version: SCHEMA_VERSION }));
    expect(await rows(stub)).toEqual(before);
    expect(await sql(stub, `SELECT COUNT(*) AS n FROM schema_migrations`)).toEqual([{ n: MIGRATIONS.length }]);
  });

  it("upgrades a version 1 lane in place, keeping every job, its state and the lane's settings", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await downgradeToV1(stub);
    await sql(stub, `UPDATE lane SET concurrency = 4, paused = 0 WHERE id = 1`);
    await insertV1(stub, { id: "queued", state: "queued", queue: "q" });
    await insertV1(stub, { id: "future", state: "queued", runAt: T0 + 60_000 });
    await insertV1(stub, { id: "retrying", state: "queued", attempts: 1, error: "flaky" });
    await insertV1(stub, { id: "running", state: "running", attempts: 1, leaseToken: "old-token", leaseUntil: T0 + 30_000, queue: "r" });
    await insertV1(stub, { id: "cancelling", state: "running", attempts: 2, leaseToken: "c-token", leaseUntil: T0 + 20_000, cancelRequested: 1 });
    await insertV1(stub, { id: "completing", state: "completing", outcome: "completed", attempts: 1, result: "1" });
    await insertV1(stub, { id: "completed", state: "settled", outcome: "completed", attempts: 1, result: '{"ok":true}', settledAt: T0 - 100 });
    await insertV1(stub, { id: "failed", state: "settled", outcome: "failed", attempts: 3, error: "boom", settledAt: T0 - 100 });
    await insertV1(stub, { id: "cancelled", state: "settled", outcome: "cancelled", cancelRequested: 1, settledAt: T0 - 100 });
    await insertV1(stub, { id: "interrupted", state: "settled", outcome: "interrupted", attempts: 1, settledAt: T0 - 100 });
    const v1 = await rows(stub);
    expect(v1).toHaveLength(10);
    expect(v1[0]).not.toHaveProperty("max_recoveries");

    await evict(fixture); // the next start migrates

    const upgraded = await rows(stub);
    expect(await sql(stub, `SELECT MAX(version) AS v FROM schema_migrations`)).toEqual([{ v: SCHEMA_VERSION }]);
    // A plain lane has no outcome hook: the job found `completing` is settled as the lane starts.
    const settledOnStart = upgraded.find((r) => r.id === "completing")!;
    expect(settledOnStart).toMatchObject({ state: "settled", outcome: "completed" });
    expect(upgraded).toEqual(
      v1.map((r) => ({
        ...r,
        ...(r.id === "completing" ? { state: "settled", settled_at: settledOnStart.settled_at, updated_at: settledOnStart.updated_at } : {}),
        max_recoveries: 3,
        recovery_window_ms: 3_600_000,
        recovery_count: 0,
        recovery_window_start: null,
        cancel_reason: null,
        lease_holder: null,
        attempt_end: null,
        errors: "[]",
        progress: null,
        lease_version: null,
        ttl_ms: null,
        expires_at: null,
        debounce: null,
        debounce_key: null,
        debounce_deadline: null,
        depends_on: null,
        dependency_failure: null,
        blocked: 0,
        blocked_run_at: null,
        has_dependents: 0,
        traceparent: null,
        wait_from: null,
        remote_waits: null,
      })),
    );
    expect(value(await stub.info())).toMatchObject({
      concurrency: 4,
      counts: { queued: 3, running: 2, completing: 0, completed: 2, failed: 1, cancelled: 1, interrupted: 1 },
    });
    expect(value(await stub.getJob("completed"))).toMatchObject({ state: "settled", outcome: "completed", result: { ok: true } });
  });

  it("lets every operation work on the jobs of an upgraded lane", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    await downgradeToV1(stub);
    await insertV1(stub, { id: "queued", state: "queued" });
    await insertV1(stub, { id: "running", state: "running", attempts: 1, leaseToken: "old-token", leaseUntil: T0 + 30_000 });
    await insertV1(stub, { id: "expiring", state: "running", attempts: 1, leaseToken: "e-token", leaseUntil: T0 + 1_000 });
    await insertV1(stub, { id: "cancelling", state: "running", attempts: 1, leaseToken: "c-token", leaseUntil: T0 + 30_000, cancelRequested: 1 });
    await insertV1(stub, { id: "failed", state: "settled", outcome: "failed", attempts: 3, settledAt: T0 - 100 });
    await evict(fixture);

    // the lease minted by the old version still holds the fence
    refusal(await stub.complete("running", { token: "guess" }), "lease_superseded");
    expect(value(await stub.complete("running", { token: "old-token", result: 1 })).job.outcome).toBe("completed");
    refusal(await stub.renew("cancelling", { token: "c-token" }), "job_cancelled");
    expect(value(await stub.getJob("cancelling")).outcome).toBe("cancelled");
    // claim, requeue, duplicate detection, the alarm with the new recovery columns
    expect((await claimOne(stub, { leaseMs: 1_000 })).id).toBe("queued");
    expect(value(await stub.requeue("failed")).job).toMatchObject({ state: "queued", attempts: 0 });
    expect(value(await stub.enqueue({ id: "queued", kind: "k", payload: { v: 1 }, priority: 0 })).status).toBe("duplicate");
    expect(await wake(stub)).toBe(T0 + 1_000);
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(value(await stub.getJob("expiring"))).toMatchObject({ state: "queued", attempts: 0 });
    expect(value(await stub.getJob("queued"))).toMatchObject({ state: "queued", attempts: 0 });
    expect((await rows(stub)).find((r) => r.id === "expiring")).toMatchObject({ recovery_count: 1, recovery_window_start: T0 + 1_000 });
  });
});

describe("migration 3", () => {
  it("leaves a lease written before it alone at start-up: its holder is unknown, so it runs out", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await downgradeTo(stub, 2);
    await insertV1(stub, { id: "running", state: "running", attempts: 1, leaseToken: "old-token", leaseUntil: T0 + 30_000 });
    await evict(fixture);
    expect(await row(stub, "running")).toMatchObject({ state: "running", lease_until: T0 + 30_000, lease_holder: null });
    expect(await wake(stub)).toBe(T0 + 30_000);
  });

  it("keeps the indexes of the hot paths", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await downgradeToV1(stub);
    await evict(fixture);
    const indexes = await sql<{ name: string }>(stub, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' AND sql IS NOT NULL ORDER BY name`);
    expect(indexes.map((i) => i.name)).toEqual([
      "jobs_claim", "jobs_completing", "jobs_debounce", "jobs_expiry", "jobs_kind", "jobs_lease", "jobs_queue", "jobs_queued", "jobs_run_at",
      "jobs_settled_by_outcome", "jobs_unqueued",
    ]);
  });
});

describe("migration 7", () => {
  it("gives old jobs an empty history and no progress, and lets their leases record checkpoints and progress", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await downgradeTo(stub, 5);
    await insertV1(stub, { id: "running", state: "running", attempts: 1, leaseToken: "old-token", leaseUntil: T0 + 30_000 });
    await insertV1(stub, { id: "failed", state: "settled", outcome: "failed", attempts: 3, error: "boom", settledAt: T0 - 100 });
    await evict(fixture);
    expect(value(await stub.getJob("failed"))).toMatchObject({ error: "boom", errors: [], progress: null });
    value(await stub.saveCheckpoint("running", "s1", { token: "old-token", value: { ok: 1 } }));
    value(await stub.progress("running", { token: "old-token", progress: { done: 1 } }));
    expect(value(await stub.getJob("running"))).toMatchObject({ errors: [], progress: { done: 1 } });
    expect(value(await stub.fail("running", { token: "old-token", error: "again", retryAfterMs: 0 })).job.errors).toEqual([
      { attempt: 1, generation: 1, message: "again", at: T0 },
    ]);
    expect((await claimOne(stub)).checkpoints).toEqual({ s1: { ok: 1 } });
  });
});

describe("the state CHECK refuses an impossible row", () => {
  const columns = `id, kind, payload, priority, run_at, max_attempts, backoff_base_ms, backoff_max_ms, timeout_ms, created_at, updated_at`;
  const values = `'x', 'k', 'null', 0, 0, 3, 1000, 300000, 60000, 0, 0`;

  it.each([
    ["a bogus state", `state`, `'sleeping'`],
    ["a bogus outcome", `state, outcome, settled_at`, `'settled', 'exploded', 0`],
    ["running without a lease", `state, attempts, generation`, `'running', 1, 1`],
    ["running with no attempt spent", `state, lease_token, lease_until`, `'running', 't', 1`],
    ["an outcome on a queued job", `state, outcome`, `'queued', 'completed'`],
    ["an outcome on a running job", `state, outcome, attempts, generation, lease_token, lease_until`, `'running', 'failed', 1, 1, 't', 1`],
    ["completing without an outcome", `state`, `'completing'`],
    ["settled without an outcome", `state, settled_at`, `'settled', 0`],
    ["settled without settledAt", `state, outcome`, `'settled', 'completed'`],
    ["settledAt on a queued job", `state, settled_at`, `'queued', 0`],
    ["more attempts than allowed", `state, outcome, settled_at, attempts, generation`, `'settled', 'failed', 0, 4, 4`],
    ["a generation below the attempts", `state, outcome, settled_at, attempts, generation`, `'settled', 'failed', 0, 2, 1`],
    ["a cancel request on a queued job", `state, cancel_requested`, `'queued', 1`],
    ["a cancel request on a completed job", `state, outcome, settled_at, cancel_requested`, `'settled', 'completed', 0, 1`],
  ])("%s", async (_what, extraColumns, extraValues) => {
    const { stub } = await setup();
    await expect(sql(stub, `INSERT INTO jobs (${columns}, ${extraColumns}) VALUES (${values}, ${extraValues})`)).rejects.toThrow(
      /CHECK constraint failed/,
    );
    expect(await rows(stub)).toEqual([]);
  });

  it("refuses an update that would make a running job lose its lease", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await claimOne(stub);
    await expect(sql(stub, `UPDATE jobs SET lease_token = NULL WHERE id = 'a'`)).rejects.toThrow(/CHECK constraint failed/);
    await expect(sql(stub, `UPDATE jobs SET state = 'queued', outcome = 'completed' WHERE id = 'a'`)).rejects.toThrow(/CHECK constraint failed/);
    expect(value(await stub.getJob("a")).state).toBe("running");
  });

  it("accepts every legal shape", async () => {
    const { stub } = await setup();
    const legal = [
      [`state`, `'queued'`],
      [`state, attempts, generation, lease_token, lease_until, cancel_requested`, `'running', 1, 1, 't', 1, 1`],
      [`state, outcome, attempts, generation`, `'completing', 'completed', 1, 1`],
      [`state, outcome, settled_at, cancel_requested`, `'settled', 'cancelled', 0, 1`],
      [`state, outcome, settled_at, attempts, generation`, `'settled', 'interrupted', 0, 1, 1`],
    ];
    for (const [i, [extraColumns, extraValues]] of legal.entries()) {
      await sql(stub, `INSERT INTO jobs (${columns}, ${extraColumns}) VALUES (${values.replace("'x'", `'x${i}'`)}, ${extraValues})`);
    }
    expect(await rows(stub)).toHaveLength(legal.length);
  });
});
