/**
 * Migration 22: the upkeep's per-row triggers go (the store keeps the upkeep since), and a live lane's
 * counts are counted again once, in place, from its rows; the lifetime totals, which no row can tell,
 * stay as they were.
 */
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { SCHEMA_VERSION, migrate } from "../../../src/durable/store/migrations.js";
import { T0, claimOne, dropTables, enqueue, setup, sql, type LaneStub } from "../../helpers/lane.js";

type Row = { id: string; kind: string; queue: string | null; state: string; outcome?: string | null; blocked?: number };

/** Jobs in every state a row can hold (blocked too), of two kinds and two queues, written as a version 21 lane holds them. */
const JOBS: Row[] = [
  { id: "q1", kind: "a", queue: "x", state: "queued" },
  { id: "q2", kind: "a", queue: null, state: "queued" },
  { id: "q3", kind: "b", queue: "y", state: "queued" },
  { id: "b1", kind: "b", queue: "x", state: "queued", blocked: 2 },
  { id: "r1", kind: "a", queue: "x", state: "running" },
  { id: "r2", kind: "b", queue: null, state: "running" },
  { id: "c1", kind: "a", queue: "y", state: "completing", outcome: "completed" },
  { id: "s1", kind: "a", queue: "x", state: "settled", outcome: "completed" },
  { id: "s2", kind: "b", queue: null, state: "settled", outcome: "failed" },
  { id: "s3", kind: "b", queue: "y", state: "settled", outcome: "cancelled" },
  { id: "s4", kind: "a", queue: null, state: "settled", outcome: "interrupted" },
];

function insert(storage: DurableObjectStorage, job: Row): void {
  const running = job.state === "running";
  const settled = job.state === "settled";
  storage.sql.exec(
    `INSERT INTO jobs (id, kind, payload, queue, priority, run_at, state, outcome, attempts, max_attempts, backoff_base_ms, backoff_max_ms,
       timeout_ms, generation, lease_token, lease_until, claimed_at, created_at, updated_at, settled_at, blocked, blocked_run_at)
     VALUES (?1, ?2, '{}', ?3, 0, ?4, ?5, ?6, ?7, 3, 1000, 300000, 60000, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13, ?14)`,
    job.id, job.kind, job.queue, T0 - 1_000, job.state, job.outcome ?? null, job.state === "queued" ? 0 : 1,
    running ? "tok" : null, running ? T0 + 60_000 : null, job.state === "queued" ? null : T0 - 500, T0 - 2_000,
    settled ? T0 - 100 : null, job.blocked ?? 0, job.blocked ? T0 - 1_000 : null,
  );
}

/** The counts a full count of the rows gives. */
const FULL_COUNTS = `SELECT
  COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state = 'running') AS running,
  COUNT(*) FILTER (WHERE state = 'completing') AS completing,
  COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'completed') AS completed, COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'failed') AS failed,
  COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'cancelled') AS cancelled, COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'interrupted') AS interrupted,
  COUNT(*) FILTER (WHERE state = 'queued' AND blocked > 0) AS blocked FROM jobs`;
const KEPT_COUNTS = `SELECT queued, running, completing, completed, failed, cancelled, interrupted, blocked FROM lane_counts`;
const FULL_KINDS = `SELECT kind, COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state = 'running') AS running
  FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind ORDER BY kind`;
const KEPT_KINDS = `SELECT kind, queued, running FROM kind_counts WHERE queued <> 0 OR running <> 0 ORDER BY kind`;
const FULL_QUEUES = `SELECT queue AS name, COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state IN ('running', 'completing')) AS active
  FROM jobs WHERE queue IS NOT NULL AND state <> 'settled' GROUP BY queue ORDER BY queue`;
const KEPT_QUEUES = `SELECT name, queued, active FROM queues WHERE queued <> 0 OR active <> 0 ORDER BY name`;
const TOTALS = `SELECT total_enqueued, total_claimed, total_completed, total_failed, total_cancelled, total_interrupted, total_retried,
  total_recovered, total_lost, total_expired, total_snoozed, total_debounced FROM lane_counts`;

async function laneAtV21(stub: LaneStub): Promise<void> {
  await runInDurableObject(stub, (_lane, state) => {
    dropTables(state.storage);
    expect(migrate(state.storage, T0, 21)).toEqual({ ok: true, version: 21 });
    for (const job of JOBS) insert(state.storage, job);
    // Counts that drifted (as only a bug could make them) and totals no row can tell.
    state.storage.sql.exec(`UPDATE lane_counts SET queued = 40, running = -3, completed = 7, blocked = 9, total_enqueued = 1000, total_claimed = 900,
      total_retried = 17, total_lost = 4, total_snoozed = 5, total_expired = 6, total_debounced = 8`);
    state.storage.sql.exec(`UPDATE kind_counts SET queued = queued + 5`);
    state.storage.sql.exec(`INSERT INTO kind_counts (kind, queued, running) VALUES ('gone', 3, 1)`);
    state.storage.sql.exec(`UPDATE queues SET active = active + 2`);
    state.storage.sql.exec(`INSERT INTO queues (name, concurrency, configured, queued, active) VALUES ('set', 4, 1, 2, 2)`);
  });
}

it("drops the upkeep's triggers and counts a live lane again in place, keeping its totals and its queues' settings", async () => {
  const { stub } = await setup();
  await laneAtV21(stub);
  const totals = await sql(stub, TOTALS);
  expect(await sql(stub, `SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'jobs'`)).toEqual([{ n: 17 }]);
  // To 22 only: what it promised, not what later migrations add (version 24's triggers on jobs keep the job streams' event log).
  await runInDurableObject(stub, (_lane, state) => expect(migrate(state.storage, T0, 22)).toEqual({ ok: true, version: 22 }));
  expect(await sql(stub, KEPT_COUNTS)).toEqual(await sql(stub, FULL_COUNTS));
  expect(await sql(stub, KEPT_KINDS)).toEqual(await sql(stub, FULL_KINDS));
  expect(await sql(stub, KEPT_QUEUES)).toEqual(await sql(stub, FULL_QUEUES));
  expect(await sql(stub, TOTALS)).toEqual(totals);
  expect(await sql(stub, `SELECT concurrency, configured FROM queues WHERE name = 'set'`)).toEqual([{ concurrency: 4, configured: 1 }]);
  // Only the outbox's promise is still kept by triggers on jobs; the one other applies a statement's upkeep handed to its sink.
  expect(await sql(stub, `SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' ORDER BY name`)).toEqual([
    { name: "jobs_outbox_deleted", tbl_name: "jobs" }, { name: "jobs_outbox_settled", tbl_name: "jobs" }, { name: "upkeep_deltas_apply", tbl_name: "upkeep_deltas" },
  ]);
});

it("keeps the counts of an upgraded lane by the store from then on", async () => {
  const { stub } = await setup();
  await laneAtV21(stub);
  await runInDurableObject(stub, (_lane, state) => expect(migrate(state.storage, T0)).toEqual({ ok: true, version: SCHEMA_VERSION }));
  await enqueue(stub, { id: "new", kind: "a", queue: "x" });
  await claimOne(stub);
  expect(await sql(stub, KEPT_COUNTS)).toEqual(await sql(stub, FULL_COUNTS));
  expect(await sql(stub, KEPT_KINDS)).toEqual(await sql(stub, FULL_KINDS));
  expect(await sql(stub, KEPT_QUEUES)).toEqual(await sql(stub, FULL_QUEUES));
  expect(await sql(stub, `SELECT total_enqueued, total_claimed FROM lane_counts`)).toEqual([{ total_enqueued: 1001, total_claimed: 901 }]);
});
