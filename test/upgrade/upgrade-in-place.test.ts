/**
 * Upgrade in place: a lane written by the previous schema version, with jobs in every state
 * (queued, due or future or retrying or behind a queue's head; running, for a pull consumer, for the
 * lane's own executor, cancel-requested; completing; settled with each outcome), opens under the
 * current code with nothing lost, and every operation works on its old rows: claim, complete, fail,
 * release, renew, cancel, requeue, sweep, the alarm's recovery, delivery of recorded outcomes.
 *
 * lane-migrations.test.ts proves each migration's own promises (version 1 rows, the CHECKs, indexes);
 * this suite always takes the version before the current one, so it keeps proving the next upgrade.
 * It runs on HOOK_LANE, which has in-process executors and delivers outcomes (completing → settled).
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";

import { DEFAULT_COMPLETED_RETENTION_MS, DEFAULT_FAILED_RETENTION_MS, RETENTION_SLACK_MS } from "../../src/shared/defaults.js";
import { MIGRATIONS, SCHEMA_VERSION, migrate } from "../../src/durable/store/migrations.js";
import { ManualClock } from "../../src/shared/clock.js";
import type { Result } from "../../src/shared/errors.js";
import type { Job } from "../../src/shared/job.js";
import { waitForTransition } from "../helpers/executors.js";
import { T0, TestEntropy, dropTables, fireAlarm, inject, refusal, value } from "../helpers/lane.js";
import type { TestableLane } from "../helpers/test-worker.js";

/** The migration before the last (version numbers are assigned per feature, so they may leave gaps). */
const PREVIOUS = MIGRATIONS.at(-2)!.version;
type Stub = DurableObjectStub<Lane>;

/** Every state a lane of the previous version can hold, as rows in its columns (absent ones left out). */
const OLD_ROWS: Record<string, Record<string, unknown>> = {
  queued: { state: "queued" },
  future: { state: "queued", run_at: T0 + 60_000, traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
  retrying: { state: "queued", attempts: 1, generation: 1, error: "flaky", attempt_end: "retry" },
  running: { state: "running", attempts: 1, generation: 1, lease_token: "v-tok-run", lease_until: T0 + 30_000, claimed_at: T0 - 500, lease_holder: "consumer" },
  "running-2": { state: "running", attempts: 2, generation: 3, lease_token: "v-tok-run2", lease_until: T0 + 30_000, claimed_at: T0 - 500, lease_holder: "consumer" },
  "running-3": { state: "running", attempts: 1, generation: 1, lease_token: "v-tok-run3", lease_until: T0 + 30_000, claimed_at: T0 - 500, max_attempts: 1, lease_holder: "consumer" },
  "serial-running": { state: "running", attempts: 1, generation: 1, lease_token: "v-tok-head", lease_until: T0 + 30_000, claimed_at: T0 - 500, queue: "serial", lease_holder: "consumer" },
  "serial-waiting": { state: "queued", queue: "serial" },
  expiring: { state: "running", attempts: 1, generation: 1, lease_token: "v-tok-exp", lease_until: T0 + 1_000, claimed_at: T0 - 500, lease_holder: "consumer" },
  cancelling: { state: "running", attempts: 1, generation: 1, lease_token: "v-tok-c", lease_until: T0 + 30_000, claimed_at: T0 - 500, cancel_requested: 1, cancel_reason: "stop", lease_holder: "consumer" },
  "in-process": { kind: "demo.echo", payload: '{"echo":1}', state: "running", attempts: 1, generation: 1, lease_token: "v-tok-ip", lease_until: T0 + 2_000, claimed_at: T0 - 500, lease_holder: "lane" },
  "completing-ok": { state: "completing", outcome: "completed", attempts: 1, generation: 1, result: '{"r":1}' },
  "completing-failed": { state: "completing", outcome: "failed", attempts: 3, generation: 3, error: "boom" },
  completed: { state: "settled", outcome: "completed", attempts: 1, generation: 1, result: '{"ok":true}', settled_at: T0 - 100 },
  failed: { state: "settled", outcome: "failed", attempts: 3, generation: 3, error: "boom", settled_at: T0 - 100 },
  cancelled: { state: "settled", outcome: "cancelled", cancel_requested: 1, settled_at: T0 - 100 },
  interrupted: { state: "settled", outcome: "interrupted", attempts: 1, generation: 2, error: "lease expired", settled_at: T0 - 100, recovery_count: 3, recovery_window_start: T0 - 10_000 },
};

const DEFAULTS: Record<string, unknown> = {
  kind: "k", payload: '{"v":1}', queue: null, priority: 0, run_at: T0 - 1_000, outcome: null, attempts: 0, max_attempts: 3,
  backoff_base_ms: 1_000, backoff_max_ms: 300_000, timeout_ms: 60_000, result: null, error: null, cancel_requested: 0,
  generation: 0, lease_token: null, lease_until: null, claimed_at: null, created_at: T0 - 2_000, updated_at: T0 - 1_000,
  settled_at: null, max_recoveries: 3, recovery_window_ms: 3_600_000, recovery_count: 0, recovery_window_start: null, cancel_reason: null, lease_holder: null,
  attempt_end: null, errors: "[]", progress: null, lease_version: null,
  ttl_ms: null, expires_at: null, debounce: null, debounce_key: null, debounce_deadline: null,
  depends_on: null, dependency_failure: null, blocked: 0, blocked_run_at: null, has_dependents: 0, traceparent: null,
  wait_from: null, remote_waits: null,
};

/**
 * Since version 22 the store keeps the lane's counts, its kinds' and its queues' (no trigger on jobs
 * does): for rows written here, what it would hold is what migration 22 counts in place (its
 * statements that write rows; a shipped migration's text never changes).
 */
const STORE_KEPT_SINCE = 22;
const COUNT_IN_PLACE = MIGRATIONS.find((m) => m.version === STORE_KEPT_SINCE)!.statements.filter((s) => /^\s*(UPDATE|INSERT)\b/.test(s));

/**
 * A lane as the previous version (or `version`) wrote it: its schema, its settings, a job in every
 * state; then, unless `restart` is false, started under the current code.
 */
async function previousVersionLane(version = PREVIOUS, restart = true): Promise<{ name: string; stub: Stub; clock: ManualClock; columns: string[] }> {
  const name = `upgrade-${crypto.randomUUID()}`;
  const stub = env.HOOK_LANE.getByName(name) as Stub;
  const clock = new ManualClock(T0);
  const columns = await runInDurableObject(stub, (lane: Lane, state) => {
    (lane as TestableLane).useClock(clock, new TestEntropy());
    const sql = state.storage.sql;
    dropTables(state.storage);
    expect(migrate(state.storage, T0, version)).toEqual({ ok: true, version });
    sql.exec(`UPDATE lane SET name = ?, concurrency = 7, registered = 1 WHERE id = 1`, name);
    const columns = sql.exec<{ name: string }>(`PRAGMA table_info(jobs)`).toArray().map((c) => c.name);
    for (const [id, fields] of Object.entries(OLD_ROWS)) {
      const row = Object.entries({ ...DEFAULTS, ...fields, id }).filter(([column]) => columns.includes(column));
      sql.exec(`INSERT INTO jobs (${row.map(([c]) => c).join(", ")}) VALUES (${row.map(() => "?").join(", ")})`, ...row.map(([, v]) => v));
    }
    // Before 22, triggers on jobs kept them as the rows went in.
    if (version >= STORE_KEPT_SINCE) for (const statement of COUNT_IN_PLACE) sql.exec(statement);
    return columns;
  });
  // The next start runs the current code over these rows.
  if (restart) {
    await evictDurableObject(stub);
    await inject(stub, clock, new TestEntropy());
  }
  return { name, stub, clock, columns };
}

function rows(stub: Stub): Promise<Record<string, unknown>[]> {
  return runInDurableObject(stub, (_lane, state) => state.storage.sql.exec(`SELECT * FROM jobs ORDER BY seq`).toArray());
}

/** Resolves once job `id` of lane `name` has settled (outcomes are delivered, then settled), with the job. */
async function settled(stub: Stub, name: string, id: string): Promise<Job> {
  await runInDurableObject(stub, () => waitForTransition(id, (e) => e.lane === name && e.to === "settled"));
  return value(await stub.getJob(id));
}

const code = (r: Result<unknown>) => (r.ok ? "ok" : r.error.code);

describe(`upgrade in place from schema version ${PREVIOUS} to ${SCHEMA_VERSION}`, () => {
  it("keeps every job, its state, its lease and the lane's settings", async () => {
    const { name, stub, columns } = await previousVersionLane();
    expect(PREVIOUS).toBeGreaterThanOrEqual(1);
    const applied = await runInDurableObject(stub, (_l, state) => state.storage.sql.exec<{ v: number }>(`SELECT MAX(version) AS v FROM schema_migrations`).one().v);
    expect(applied).toBe(SCHEMA_VERSION);
    // Every old column of every row as the old version wrote it (those that may have moved on since aside).
    const upgraded = await rows(stub);
    expect(upgraded.map((r) => r.id)).toEqual(Object.keys(OLD_ROWS));
    for (const row of upgraded) {
      if (String(row.id).startsWith("completing") || row.id === "in-process") continue;
      const expected = Object.fromEntries(columns.filter((c) => c !== "seq").map((c) => [c, { ...DEFAULTS, ...OLD_ROWS[row.id as string], id: row.id }[c]]));
      expect(row, String(row.id)).toMatchObject(expected);
    }
    const info = value(await stub.info());
    expect(info).toMatchObject({ lane: name, concurrency: 7, paused: false });
    // Nothing lost (the recorded outcomes and an in-process job of a dead instance may be on their way already).
    expect(Object.values(info.counts).reduce((n, c) => n + c, 0)).toBe(Object.keys(OLD_ROWS).length);
    expect(value(await stub.getJob("completed"))).toMatchObject({ state: "settled", outcome: "completed", result: { ok: true } });
    expect(value(await stub.getJob("future")).traceparent).toBe(OLD_ROWS.future!.traceparent);
    expect(value(await stub.getJob("cancelling"))).toMatchObject({ state: "running", cancelRequested: true, lease: { generation: 1, expiresAt: T0 + 30_000 } });
    const listed = value(await stub.listJobs({ limit: 500 })).jobs.map((j) => j.id);
    expect(listed).toEqual(Object.keys(OLD_ROWS));
  });

  it("lets every operation work on the old rows", async () => {
    const { name, stub, clock } = await previousVersionLane();
    // Its restart ran on the platform clock, far behind the test's: retention would take what settled then.
    value(await stub.configure({ retention: { completedMs: null, failedMs: null } }));

    // Recorded outcomes are delivered and settled.
    expect((await settled(stub, name, "completing-ok")).outcome).toBe("completed");
    expect((await settled(stub, name, "completing-failed")).outcome).toBe("failed");

    // The fence holds with the old tokens: a guess is refused, the holder completes, fails, releases, renews.
    refusal(await stub.complete("running", { token: "guess" }), "lease_superseded");
    expect(code(await stub.complete("running", { token: "v-tok-run", result: 1 }))).toBe("ok");
    expect((await settled(stub, name, "running")).result).toBe(1);
    expect(value(await stub.fail("running-2", { token: "v-tok-run2", error: "again", retryAfterMs: 0 })).job).toMatchObject({ state: "queued", attempts: 2, generation: 3 });
    expect(code(await stub.fail("running-3", { token: "v-tok-run3", error: "fatal" }))).toBe("ok");
    expect((await settled(stub, name, "running-3")).outcome).toBe("failed");
    const renewed = value(await stub.renew("serial-running", { token: "v-tok-head", leaseMs: 5_000 })).lease;
    expect(renewed).toMatchObject({ generation: 1, expiresAt: T0 + 5_000 });
    refusal(await stub.release("serial-running", { token: "v-tok-head" }), "lease_superseded");
    expect(value(await stub.release("serial-running", { token: renewed.token })).job).toMatchObject({ state: "queued", attempts: 0 });

    // A cancel-requested holder speaks and the job settles cancelled; cancel works on old queued and running rows.
    refusal(await stub.complete("cancelling", { token: "v-tok-c" }), "job_cancelled");
    expect((await settled(stub, name, "cancelling")).outcome).toBe("cancelled");
    expect(value(await stub.cancel("future")).status).toBe("cancelled");
    await settled(stub, name, "future");

    // Claim in enqueue order, queue heads only (the released job heads its queue again); generations grow on.
    const claimed = value(await stub.claim({ max: 10, leaseMs: 1_000 })).jobs;
    expect(claimed.map((j) => [j.id, j.lease.generation])).toEqual([["queued", 1], ["retrying", 2], ["running-2", 4], ["serial-running", 2]]);
    expect(code(await stub.complete("serial-running", { token: claimed[3]!.lease.token }))).toBe("ok");
    await settled(stub, name, "serial-running");
    expect(value(await stub.claim({ max: 10 })).jobs.map((j) => j.id)).toEqual(["serial-waiting"]);

    // Requeue each outcome of the old version; a completed job stays completed.
    for (const id of ["failed", "cancelled", "interrupted"]) expect(value(await stub.requeue(id)).job, id).toMatchObject({ state: "queued", attempts: 0, outcome: null });
    refusal(await stub.requeue("completed"), "job_settled");
    expect(value(await stub.getJob("interrupted")).generation).toBe(2);

    // The alarm recovers the old leases (the recovery columns at work), and the executor runs the old in-process job.
    clock.set(T0 + 2_000);
    await fireAlarm(stub);
    expect(value(await stub.getJob("expiring"))).toMatchObject({ state: "queued", attempts: 0, generation: 1 });
    const echoed = await settled(stub, name, "in-process");
    expect(echoed).toMatchObject({ outcome: "completed", result: { echo: 1 }, generation: 2 });
    const recovered = await runInDurableObject(stub, (_l, state) => state.storage.sql.exec(`SELECT recovery_count, recovery_window_start FROM jobs WHERE id = 'expiring'`).one());
    expect(recovered).toEqual({ recovery_count: 1, recovery_window_start: T0 + 2_000 });

    // Enqueue: the old row is a duplicate; a new job lands after the old ones.
    expect(value(await stub.enqueue({ id: "queued", kind: "k", payload: { v: 1 } })).status).toBe("duplicate");
    refusal(await stub.enqueue({ id: "queued", kind: "k", payload: { v: 2 } }), "job_conflict");
    expect(value(await stub.enqueue({ id: "new", kind: "k" })).job.state).toBe("queued");
    const all = value(await stub.listJobs({ limit: 500 })).jobs.map((j) => j.id);
    expect(all.at(-1)).toBe("new");
    expect(all).toHaveLength(Object.keys(OLD_ROWS).length + 1);

    // Sweep takes exactly the rows settled before the instant, the old "completed" among them, and keeps the rest.
    const before = value(await stub.listJobs({ limit: 500 })).jobs;
    const old = before.filter((j) => j.settledAt !== null && j.settledAt < T0).map((j) => j.id);
    expect(old).toContain("completed");
    expect(value(await stub.sweep({ settledBefore: T0 })).removed).toBe(old.length);
    const after = value(await stub.listJobs({ limit: 500 })).jobs.map((j) => j.id);
    expect(after).toEqual(before.map((j) => j.id).filter((id) => !old.includes(id)));
    const counts = value(await stub.info()).counts;
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(after.length);
  });
});

/** The last version before the lane kept its counts (migration 6 counts an existing lane once). */
const BEFORE_COUNTS = 5;

describe(`kept counts and retention for a lane of version ${BEFORE_COUNTS}`, () => {
  it("counts its jobs once, in place, and starts its stats from what its rows show", async () => {
    const { stub } = await previousVersionLane(BEFORE_COUNTS, false);
    const kept = await runInDurableObject(stub, (_lane, state) => {
      expect(migrate(state.storage, T0)).toEqual({ ok: true, version: SCHEMA_VERSION });
      const sql = state.storage.sql;
      const grouped = Object.fromEntries(
        sql.exec<{ bucket: string; n: number }>(`SELECT CASE WHEN state = 'settled' THEN outcome ELSE state END AS bucket, COUNT(*) AS n FROM jobs GROUP BY bucket`).toArray().map((r) => [r.bucket, r.n]),
      );
      return { row: { ...sql.exec(`SELECT * FROM lane_counts`).one() }, grouped };
    });
    const counts = { queued: 4, running: 7, completing: 2, completed: 1, failed: 1, cancelled: 1, interrupted: 1 };
    expect(kept.grouped).toEqual(counts);
    const claimed = Object.values(OLD_ROWS).reduce((n, row) => n + ((row.generation as number | undefined) ?? 0), 0);
    expect(kept.row).toEqual({
      id: 1, ...counts,
      total_enqueued: Object.keys(OLD_ROWS).length, total_claimed: claimed,
      total_completed: 2, total_failed: 2, total_cancelled: 1, total_interrupted: 1, total_retried: 0, total_recovered: 0, total_lost: 0,
      total_expired: 0, total_debounced: 0, blocked: 0, total_snoozed: 0,
      waitpoints_pending: 0, total_waitpoints_completed: 0, total_waitpoints_timed_out: 0, total_dead_lettered: 0,
      history_minute: null, history_base_enqueued: 0, history_base_started: 0, history_base_completed: 0, history_base_failed: 0,
    });
  });

  it("applies the default retention to its old settled jobs", async () => {
    const { stub, clock } = await previousVersionLane(BEFORE_COUNTS);
    const old = ["completed", "failed", "cancelled", "interrupted"];
    const present = async () => (await rows(stub)).map((r) => r.id).filter((id) => old.includes(id as string));
    clock.set(T0 - 100 + DEFAULT_COMPLETED_RETENTION_MS + RETENTION_SLACK_MS);
    await fireAlarm(stub);
    expect(await present()).toEqual(["failed", "cancelled", "interrupted"]);
    clock.set(T0 - 100 + DEFAULT_FAILED_RETENTION_MS + RETENTION_SLACK_MS);
    await fireAlarm(stub);
    expect(await present()).toEqual([]);
    const info = value(await stub.info());
    expect(Object.values(info.counts).reduce((a, b) => a + b, 0)).toBe((await rows(stub)).length);
  });
});
