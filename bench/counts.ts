/**
 * The operator's lane in the bench, inside the bench worker: what the upkeep costs per job (kept by the
 * store, by the per-row triggers of version 21, not at all, and each kind of it apart), `info()`
 * at the growth workload's backlogs, and one retention pass over many expired jobs (how long each
 * alarm holds the lane). COUNTS_LANE is the real lane with a timed alarm and these probes.
 */
import { defineLane } from "../src/durable/lane.js";
import type { JobSpec } from "../src/durable/store/job-row.js";
import { DEFAULT_COMPLETED_RETENTION_MS } from "../src/shared/defaults.js";
import { unwrap } from "../src/shared/errors.js";
import { PULL_KIND, type PlainLane } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { int, percentile, sleep } from "./workload-helpers.js";
import { keepUpkeep, leaveOutUpkeep, SNAP_COLUMNS, UPKEEP_KINDS, type Snap } from "../src/durable/store/upkeep.js";
import { legacyUpkeepTriggers } from "./upkeep-triggers.js";

type CountsEnv = BenchEnv & { COUNTS_LANE: DurableObjectNamespace<CountsLane> };
/**
 * The whole upkeep by the store, by the triggers of version 21, none at all, the store's less one
 * kind each, and the store's with the outbox's two triggers dropped too, or the event log's triggers
 * (a job's stream: migration 24), or the guarded ones (`KEPT_TRIGGERS`), which every other strategy keeps.
 */
const STRATEGIES = ["store", "triggers", "none", ...UPKEEP_KINDS.map((k) => `without-${k}` as const), "without-outbox-triggers", "without-event-log", "without-guarded-triggers"] as const;
type Strategy = (typeof STRATEGIES)[number];

/**
 * The guarded triggers on jobs, by name, kept by every strategy but `without-guarded-triggers`: their
 * WHEN is all a bench job pays (it waits on no waitpoint elsewhere, its lane has no dead-letter lane,
 * its payload and result are in its row). With the outbox's and the event log's these are every
 * trigger on jobs: one the probe does not name stops it (a new trigger would weigh on every strategy unseen).
 */
const KEPT_TRIGGERS = [
  "job_waits_withdrawn", "job_waits_withdrawn_deleted", // a job's registrations with waitpoints elsewhere withdrawn (migration 26)
  "jobs_dead_letter", // a failed job's copy owed to the dead-letter lane (migration 28)
  "jobs_held_deleted", "jobs_held_payload_replaced", "jobs_held_result_replaced", // objects in R2 owed their deletion (migration 30)
];

const BATCH = 1000;
/** Claims per statement in the drain-shaped loop: the drain workload's concurrency. */
const CLAIM = 16;
const us = (ms: number, jobs: number) => Math.round(((ms * 1000) / jobs) * 100) / 100;

/** Settled jobs, settled `?2` onwards one ms apart, in one statement, answering what the upkeep reads. ?1 how many, ?2 settled at, ?3 id prefix. */
const FILL_SETTLED_SQL = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
  INSERT INTO jobs (id, kind, payload, priority, run_at, state, outcome, attempts, generation, max_attempts,
    backoff_base_ms, backoff_max_ms, timeout_ms, created_at, updated_at, settled_at, result)
  SELECT ?3 || i, '${PULL_KIND}', '{"i":' || i || '}', 0, ?2, 'settled', 'completed', 1, 1, 3, 1000, 300000, 60000, ?2, ?2, ?2 + i, '{"ok":true}' FROM n
  RETURNING ${SNAP_COLUMNS}`;

export class CountsLane extends defineLane({ log: false }) {
  private alarmMs: number[] = [];

  /** Each alarm, timed: the clock moves inside synchronous code under local workerd (the `clock` workload). */
  override async alarm(): Promise<void> {
    const t0 = Date.now();
    await super.alarm();
    this.alarmMs.push(Date.now() - t0);
  }

  /** The alarms' durations since the last call, in ms. */
  async benchAlarmTimes(): Promise<number[]> {
    const times = this.alarmMs;
    this.alarmMs = [];
    return times;
  }

  /** `n` completed jobs settled long enough ago to be past the default retention, then the wake re-armed. */
  async benchFillSettled(n: number): Promise<number> {
    const settledAt = Date.now() - DEFAULT_COMPLETED_RETENTION_MS - n - 60_000;
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => keepUpkeep(sql, sql.exec<Snap>(FILL_SETTLED_SQL, n, settledAt, "expired-").toArray().map((row) => ({ old: null, new: row })), settledAt));
    this.wake.afterChange(false);
    return n;
  }

  /**
   * µs per job of batch enqueue (store.insertJobs, 1000 a statement) and of a drain-shaped loop
   * (claimDue of 16, then completeBatch of them), in alternating rounds, with the upkeep kept: by
   * the store (as the lane does); by the per-row triggers of version 21 instead; not at all; and by
   * the store less one kind of upkeep each (what that kind costs: the whole less it). This lane is a
   * probe: its counts end up wrong.
   */
  async benchCountsCost(n: number, rounds: number): Promise<Record<Strategy, { enqueueUs: number; drainUs: number }>> {
    const sql = this.ctx.storage.sql;
    this.store.settings.configure({ concurrency: 1000 });
    const legacy = legacyUpkeepTriggers();
    const names = legacy.map((t) => /^CREATE TRIGGER (\w+)/.exec(t.trim())![1]!);
    const outbox = sql.exec<{ name: string; sql: string }>(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'jobs_outbox_%'`).toArray();
    const eventLog = sql.exec<{ name: string; sql: string }>(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'job_events_%'`).toArray();
    const guarded = sql.exec<{ name: string; sql: string }>(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN (SELECT value FROM json_each(?))`, JSON.stringify(KEPT_TRIGGERS)).toArray();
    if (guarded.length !== KEPT_TRIGGERS.length) throw new Error(`bench/counts.ts names triggers the lane does not have: ${KEPT_TRIGGERS.filter((n) => !guarded.some((t) => t.name === n)).join(", ")}`);
    const named = new Set([...names, ...outbox.map((t) => t.name), ...eventLog.map((t) => t.name), ...KEPT_TRIGGERS]);
    const unnamed = sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'jobs'`).toArray().filter((t) => !named.has(t.name));
    if (unnamed.length > 0) throw new Error(`triggers on jobs that bench/counts.ts does not name: ${unnamed.map((t) => t.name).join(", ")}`);
    const totals = Object.fromEntries(STRATEGIES.map((s) => [s, { enqueueMs: 0, drainMs: 0, jobs: 0 }])) as Record<Strategy, { enqueueMs: number; drainMs: number; jobs: number }>;
    const now = Date.now();
    const spec = (id: string): JobSpec => ({
      id, kind: PULL_KIND, payload: "{}", queue: null, priority: 0, runAt: now, maxAttempts: 3,
      backoffBaseMs: 1000, backoffMaxMs: 300_000, timeoutMs: 60_000, maxRecoveries: 3, recoveryWindowMs: 3_600_000, ttlMs: null, expiresAt: null, debounce: null, debounceKey: null, debounceDeadline: null, dependsOn: null, dependencyFailure: null, traceparent: null,
    });
    for (let round = 0; round < rounds; round++) {
      for (const strategy of STRATEGIES) {
        for (const name of names) sql.exec(`DROP TRIGGER IF EXISTS ${name}`);
        if (strategy === "triggers") for (const t of legacy) sql.exec(t);
        for (const t of outbox) sql.exec(`DROP TRIGGER IF EXISTS ${t.name}`);
        if (strategy !== "without-outbox-triggers") for (const t of outbox) sql.exec(t.sql);
        for (const t of eventLog) sql.exec(`DROP TRIGGER IF EXISTS ${t.name}`);
        if (strategy !== "without-event-log") for (const t of eventLog) sql.exec(t.sql);
        for (const t of guarded) sql.exec(`DROP TRIGGER IF EXISTS ${t.name}`);
        if (strategy !== "without-guarded-triggers") for (const t of guarded) sql.exec(t.sql);
        // The store's upkeep is whole but for the old triggers, none, or a strategy that names one of its kinds.
        const leftOut = strategy === "triggers" || strategy === "none" ? UPKEEP_KINDS : UPKEEP_KINDS.filter((k) => strategy === `without-${k}`);
        leaveOutUpkeep(sql, leftOut);
        const t0 = Date.now();
        for (let from = 0; from < n; from += BATCH) {
          const inserted = this.store.insertJobs(Array.from({ length: BATCH }, (_, i) => spec(`${strategy}-${round}-${from + i}`)), now);
          if (!inserted.ok) throw new Error(inserted.error.message);
        }
        const t1 = Date.now();
        for (;;) {
          const claimed = this.claims.take({ kinds: null, excludeKinds: [], excludeIds: [], heldSlots: 0, max: CLAIM, leaseMs: 60_000, maxBytes: Infinity, holder: "lane" });
          if (claimed.length === 0) break;
          this.fenced.completeBatch(claimed.map((job) => ({ id: job.id, token: job.lease.token, resultJson: "null", checkpoints: false })));
        }
        const t2 = Date.now();
        totals[strategy].enqueueMs += t1 - t0;
        totals[strategy].drainMs += t2 - t1;
        totals[strategy].jobs += n;
        sql.exec(`DELETE FROM jobs`);
        // The claim reads the kept running count: whatever a strategy left of it, the next starts from the rows.
        sql.exec(`UPDATE lane_counts SET running = 0, queued = 0`);
      }
    }
    for (const name of names) sql.exec(`DROP TRIGGER IF EXISTS ${name}`);
    leaveOutUpkeep(sql, []);
    return Object.fromEntries(STRATEGIES.map((s) => [s, { enqueueUs: us(totals[s].enqueueMs, totals[s].jobs), drainUs: us(totals[s].drainMs, totals[s].jobs) }])) as Record<Strategy, { enqueueUs: number; drainUs: number }>;
  }
}

const str = (params: Record<string, unknown>, key: string) => String(params[key]);

export const countsWorkloads: Record<string, (env: BenchEnv, params: Record<string, unknown>) => Promise<object>> = {
  /** The per-job cost of the upkeep on batch enqueue and on the drain: whole, by the old triggers, and per kind. */
  async countsCost(env, params) {
    const lane = (env as CountsEnv).COUNTS_LANE.getByName(`counts-cost-${str(params, "run")}`);
    const n = int(params, "n", 20_000);
    const rounds = int(params, "rounds", 3);
    const cost = await lane.benchCountsCost(n, rounds);
    const round2 = (x: number) => Math.round(x * 100) / 100;
    const above = (s: Strategy, base: Strategy) => ({ enqueueUs: round2(cost[s].enqueueUs - cost[base].enqueueUs), drainUs: round2(cost[s].drainUs - cost[base].drainUs) });
    // What each kind costs: the whole upkeep less the upkeep without it.
    const perKindUs = Object.fromEntries(UPKEEP_KINDS.map((k) => [k, above("store", `without-${k}`)]));
    // The outbox's triggers (kept: see migrations/v10-18.ts), whose WHEN every job's update runs.
    const outboxTriggersUs = above("store", "without-outbox-triggers");
    // The event log's triggers (a job's stream: transitions and progress written in the statement that changes the job).
    const eventLogUs = above("store", "without-event-log");
    // The six triggers kept for their promises (KEPT_TRIGGERS: withdrawals, dead letters, R2 objects), whose WHEN alone a bench job pays.
    const guardedTriggersUs = above("store", "without-guarded-triggers");
    return { n, rounds, perJobUs: cost, upkeepUs: { store: above("store", "none"), triggers: above("triggers", "none") }, perKindUs, outboxTriggersUs, eventLogUs, guardedTriggersUs };
  },

  /**
   * `info()` over RPC at each growth lane's backlog: µs per call, sequential, in rounds that visit
   * every lane in turn (as the growth workload does), so that the machine's drifting load weighs on
   * every backlog alike.
   */
  async infoGrowth(env, params) {
    const reps = int(params, "reps", 1000);
    const rounds = int(params, "rounds", 10);
    const perRound = Math.ceil(reps / rounds);
    const levels = [];
    for (const name of params.lanes as string[]) {
      const lane = env.PLAIN_LANE.getByName(name) as DurableObjectStub<PlainLane>;
      levels.push({ lane: name, stub: lane, queued: unwrap(await lane.info()).counts.queued, reps: 0, ms: 0 });
    }
    for (let round = 0; round < rounds; round++) {
      for (const level of levels) {
        const t0 = Date.now();
        for (let i = 0; i < perRound; i++) unwrap(await level.stub.info());
        level.ms += Date.now() - t0;
        level.reps += perRound;
      }
    }
    return { levels: levels.map(({ lane, queued, reps, ms }) => ({ lane, queued, reps, ms, usPerCall: us(ms, reps) })) };
  },

  /** One retention pass over `n` expired jobs: every alarm's duration, and how long an `info()` waited at worst meanwhile. */
  async retentionPass(env, params) {
    const n = int(params, "n", 100_000);
    const lane = (env as CountsEnv).COUNTS_LANE.getByName(`retention-${str(params, "run")}`);
    await lane.benchAlarmTimes();
    await lane.benchFillSettled(n);
    const t0 = Date.now();
    let waitedMs = 0;
    for (;;) {
      const asked = Date.now();
      const left = unwrap(await lane.info()).counts.completed;
      waitedMs = Math.max(waitedMs, Date.now() - asked);
      if (left === 0) break;
      if (Date.now() - t0 > 600_000) throw new Error(`${left} of ${n} expired jobs left after 10 minutes`);
      await sleep(5);
    }
    const wallMs = Date.now() - t0;
    const times = (await lane.benchAlarmTimes()).sort((a, b) => a - b);
    return {
      n, wallMs, alarms: times.length, jobsPerAlarm: times.length ? n / times.length : null,
      alarmMs: { p50: percentile(times, 50), p99: percentile(times, 99), max: times.at(-1) ?? null, mean: times.length ? times.reduce((a, b) => a + b, 0) / times.length : null },
      infoWaitedMaxMs: waitedMs,
    };
  },
};
