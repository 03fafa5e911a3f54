/**
 * The bench's lane classes: the real `Lane` (built by `defineLane`, transition logs off so stdout is
 * not the bottleneck) plus bench-only methods that measure the platform inside the same object: raw
 * SQLite on the lane's own `jobs` table (same schema, indexes and CHECKs as the queue writes) and on
 * the bare table beside it (bare.ts: the same columns, only the primary key), and the floor RPCs
 * (empty, one row written). Never deployed.
 */
import { defineLane, type TransitionEvent } from "../src/durable/lane.js";
import type { JobSpec } from "../src/durable/store/job-row.js";
import { readEnqueueAnswer } from "../src/shared/enqueue-text.js";
import { CLAIM_CANDIDATES_SQL, CLAIM_KINDS_CANDIDATES_SQL } from "../src/durable/attempts/claim-statements.js";
import { serializeJson } from "../src/shared/json.js";
import { BatchEnqueueRequest, EnqueueRequest, simpleEnqueueRequest } from "../src/shared/schemas.js";
import { BARE_CLAIM_ONE, bareClaims, CLAIM_ONE, ensureBareTable, insertJobSql, tableName, updateByPkSql, type FloorTable } from "./bare.js";
import { noopOrSteps, rawUpserts } from "./steps.js";

/** The no-op executor: records when it started, so latency is measured where the job starts. */
export const NOOP_KIND = "bench.noop";
/** A kind with no executor on any bench lane: it waits for pull consumers. */
export const PULL_KIND = "bench.pull";

const executors = {
  // With `payload.steps`, it runs that many `ctx.step`s first (bench/steps.ts): no kind of its own,
  // since every kind of a lane costs each pump and each wake a lookup.
  [NOOP_KIND]: noopOrSteps,
};

const INSERT_JOB = insertJobSql("jobs");
const UPDATE_BY_PK = updateByPkSql("jobs");

/** What a lane did since the counters were last read: the cost model behind every figure. */
export interface LaneCounters {
  /** `sql.exec` calls (every statement the store runs). */
  statements: number;
  /** `transactionSync` calls (explicit transactions; implicit commits come on top). */
  transactions: number;
  /** `setAlarm` and `deleteAlarm` calls. */
  alarmWrites: number;
  /** `alarm()` runs. */
  alarms: number;
  /**
   * Milliseconds inside `sql.exec`, summed from a 1 ms clock: each reading is off by under a tick,
   * but at a random phase, so the sum over thousands of statements estimates the true total.
   * (A cursor's later rows, read while iterating, are not in it: the hot statements return one row.)
   */
  sqlMs: number;
}

const noCounters = (): LaneCounters => ({ statements: 0, transactions: 0, alarmWrites: 0, alarms: 0, sqlMs: 0 });

/**
 * Counts statements, transactions and alarm writes by wrapping the storage methods of one object
 * (own properties shadowing the prototype's; the store holds the same `sql` object). A counter
 * increment per call: nothing next to a SQLite statement.
 */
class Meter {
  private counters = noCounters();
  /** What-if: setAlarm writes nothing (what coalescing alarm writes could gain at most). */
  skipAlarmWrites = false;

  constructor(storage: DurableObjectStorage) {
    const counters = () => this.counters;
    const sql = storage.sql;
    const exec = sql.exec.bind(sql);
    sql.exec = ((query: string, ...bindings: unknown[]) => {
      const t0 = Date.now();
      const cursor = exec(query, ...bindings);
      counters().statements++;
      counters().sqlMs += Date.now() - t0;
      return cursor;
    }) as typeof sql.exec;
    const transactionSync = storage.transactionSync.bind(storage);
    storage.transactionSync = <T>(closure: () => T): T => {
      counters().transactions++;
      return transactionSync(closure);
    };
    const setAlarm = storage.setAlarm.bind(storage);
    storage.setAlarm = (...args) => {
      counters().alarmWrites++;
      return this.skipAlarmWrites ? Promise.resolve() : setAlarm(...args);
    };
    const deleteAlarm = storage.deleteAlarm.bind(storage);
    storage.deleteAlarm = (...args) => {
      counters().alarmWrites++;
      return deleteAlarm(...args);
    };
  }

  alarm(): void {
    this.counters.alarms++;
  }

  /** The counters since the last call, then zero. */
  take(): LaneCounters {
    const taken = this.counters;
    this.counters = noCounters();
    return taken;
  }
}

/**
 * Settled jobs per lane, counted by the lane's own `onTransition` hook: an O(1) answer to "is the
 * drain done?", where `info()` counts every row (GROUP BY over the table) and, polled every few ms,
 * would steal a large share of the very object being measured.
 */
const settledByLane = new Map<string, number>();

function countSettled(event: TransitionEvent): void {
  if (event.to === "settled") settledByLane.set(event.lane, (settledByLane.get(event.lane) ?? 0) + 1);
}

/** LANE: the no-op executor for `bench.noop`; `bench.pull` waits for pull consumers (HTTP workloads). */
export class BenchLane extends defineLane({ executors, log: false, onTransition: countSettled }) {
  private readonly meter: Meter;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.meter = new Meter(ctx.storage);
  }

  override async alarm(): Promise<void> {
    this.meter.alarm();
    return super.alarm();
  }

  async benchCounters(): Promise<LaneCounters> {
    return this.meter.take();
  }

  /** Jobs this lane settled since the object started. */
  async benchWhatIf(options: { skipAlarmWrites: boolean }): Promise<void> {
    this.meter.skipAlarmWrites = options.skipAlarmWrites;
  }

  async benchSettled(): Promise<number> {
    return settledByLane.get(this.store.lane) ?? 0;
  }

  /** When job `id` heard of its dependencies: the first and last notice applied (epoch ms). */
  async benchToldAt(id: string): Promise<{ first: number | null; last: number | null }> {
    return this.ctx.storage.sql
      .exec<{ first: number | null; last: number | null }>(`SELECT MIN(told_at) AS first, MAX(told_at) AS last FROM dependencies WHERE job_seq = (SELECT seq FROM jobs WHERE id = ?)`, id)
      .one();
  }

  /** The outbox's calls to other lanes since the object started, and the notices they carried. */
  async benchOutbox(): Promise<{ calls: number; notices: number }> {
    return { ...this.outbox.sent };
  }
}

/**
 * PLAIN_LANE: no executors at all, so nothing but the producer's and consumer's calls runs in it; plus
 * the probes, which run on fresh lane names so they share no rows with a workload.
 */
export class PlainLane extends defineLane({ log: false }) {
  private readonly meter: Meter;
  private bareReady = false;
  /** The bare table's last claimed seq, its claims' cursor (after a restart 0: one scan over the claimed rows, then seeks again). */
  private bareClaimedTo = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.meter = new Meter(ctx.storage);
  }

  async benchCounters(): Promise<LaneCounters> {
    return this.meter.take();
  }

  /** The empty RPC: the floor of any call to a lane. */
  async benchPing(): Promise<number> {
    return 0;
  }

  /** The one-row-writing RPC: one job row, as raw SQL, with nothing else around it. */
  async benchWrite(id: string): Promise<number> {
    const now = Date.now();
    this.ctx.storage.sql.exec(INSERT_JOB, id, PULL_KIND, `{"i":0}`, now, now, now);
    return 1;
  }

  /** Raw single-row INSERTs into the jobs table (or the bare table), `n` statements. */
  async benchSqlInsert(n: number, prefix: string, table: FloorTable = "jobs"): Promise<number> {
    const sql = this.ctx.storage.sql;
    if (table === "bare") this.ensureBare();
    const insert = table === "bare" ? insertJobSql("bare") : INSERT_JOB;
    const now = Date.now();
    for (let i = 0; i < n; i++) sql.exec(insert, `${prefix}-${i}`, PULL_KIND, `{"i":${i}}`, now, now, now);
    return n;
  }

  /** Raw single-row UPSERTs (steps.ts), `n` statements: milliseconds inside the object. */
  async benchSqlUpsert(n: number, prefix: string): Promise<number> {
    return rawUpserts(this.ctx.storage.sql, n, prefix);
  }

  /** Raw UPDATEs by primary key over the rows `benchSqlInsert` wrote, from its `from`-th row on. */
  async benchSqlUpdate(n: number, table: FloorTable = "jobs", from = 0): Promise<number> {
    const sql = this.ctx.storage.sql;
    if (table === "bare") this.ensureBare();
    const update = table === "bare" ? updateByPkSql("bare") : UPDATE_BY_PK;
    const first = sql.exec<{ s: number }>(`SELECT MIN(seq) AS s FROM ${tableName(table)}`).one().s + from;
    const now = Date.now();
    for (let i = 0; i < n; i++) sql.exec(update, now, "x", first + i);
    return n;
  }

  /** Raw claim-shaped UPDATE … RETURNING, one job per statement: over the claim index, or on the bare table (bare.ts). */
  async benchSqlClaim(n: number, table: FloorTable = "jobs"): Promise<number> {
    const sql = this.ctx.storage.sql;
    const now = Date.now();
    if (table === "bare") {
      this.ensureBare();
      const { claimed, last } = bareClaims(sql, n, this.bareClaimedTo, now);
      this.bareClaimedTo = last;
      return claimed;
    }
    let claimed = 0;
    for (let i = 0; i < n; i++) {
      const row = sql.exec(CLAIM_ONE, `t${i}`, now + 30_000, now, now).toArray()[0];
      if (row) claimed++;
    }
    return claimed;
  }

  private ensureBare(): void {
    if (!this.bareReady) ensureBareTable(this.ctx.storage.sql);
    this.bareReady = true;
  }

  /**
   * Where an enqueue, a claim and a completion spend their time inside the object: each piece of the
   * real path alone, `n` times, in µs per op (the clock moves inside a synchronous loop under local
   * workerd; the bench checks that with its `clock` workload). Run on a fresh lane.
   */
  async benchProfile(n: number): Promise<Record<string, number | null>> {
    if (n > 1000) throw new RangeError("at most 1000: the claims must fit the lane's concurrency");
    const sql = this.ctx.storage.sql;
    /** µs per op of `ops` ops done by `calls` calls of `fn`. */
    const us = (fn: (i: number) => unknown, calls = n, ops = calls): number | null => {
      const t0 = Date.now();
      for (let i = 0; i < calls; i++) fn(i);
      const ms = Date.now() - t0;
      return ms > 0 ? Math.round(((ms * 1000) / ops) * 100) / 100 : null;
    };
    const now = Date.now();
    const spec = (i: number, prefix: string): JobSpec => ({
      id: `${prefix}-${i}`, kind: PULL_KIND, payload: `{"i":${i}}`, queue: null, priority: 0, runAt: now, maxAttempts: 3,
      backoffBaseMs: 1000, backoffMaxMs: 300_000, timeoutMs: 60_000, maxRecoveries: 3, recoveryWindowMs: 3_600_000, ttlMs: null, expiresAt: null, debounce: null, debounceKey: null, debounceDeadline: null, dependsOn: null, dependencyFailure: null, traceparent: null,
    });
    this.store.settings.configure({ concurrency: 1000 });
    await this.enqueue({ kind: PULL_KIND, payload: null }); // registers the lane: no enqueue below calls the registry
    const batch = { jobs: Array.from({ length: n }, (_, i) => ({ kind: PULL_KIND, payload: { i } })) };
    const batchSpecs = Array.from({ length: n }, (_, i) => spec(i, "batch"));
    // claim() and complete() are the lane's own RPC methods, called in process: their bodies never
    // await, so the work is done when the call returns; their answers are read after the timing.
    const claims: ReturnType<typeof this.claim>[] = [];
    const claim = (max: number) => claims.push(this.claim({ kinds: [PULL_KIND], max }));
    let claimed: { id: string; token: string }[] = [];
    const groupTexts = Array.from({ length: n }, (_, i) => JSON.stringify({ kind: PULL_KIND, payload: { i } }));
    let groupAnswers: { ok: true; value: string[] } | { ok: false } = { ok: false };
    const profile = {
      rawInsert: us((i) => sql.exec(INSERT_JOB, `raw-${i}`, PULL_KIND, `{"i":${i}}`, now, now, now)),
      validate: us((i) => EnqueueRequest.safeParse({ kind: PULL_KIND, payload: { i } })),
      validateSimple: us((i) => simpleEnqueueRequest({ kind: PULL_KIND, payload: { i } })),
      serializePayload: us((i) => serializeJson({ i }, "payload")),
      insertJobs: us((i) => this.store.insertJobs([spec(i, "store")], now)),
      wakeNoExecutors: us(() => this.wakeReads.rows([], [], 0)),
      wakeWithExecutors: us(() => this.wakeReads.rows([NOOP_KIND], [], 0)),
      settings: us(() => this.store.settings.read()),
      runningCount: us(() => this.store.laneCounts.running()),
      enqueueInObject: us((i) => void this.enqueue({ kind: PULL_KIND, payload: { i } })),
      batchValidatePerJob: us(() => BatchEnqueueRequest.safeParse(batch), 1, n),
      batchInsertPerJob: us(() => this.store.insertJobs(batchSpecs, now), 1, n),
      // Group commit's path, both ends in this object: the caller's text, the lane's group call, the
      // caller's job built from its answer (shared/enqueue-text.ts); against `batchEnqueuePerJob`.
      clientRequestText: us((i) => JSON.stringify({ kind: PULL_KIND, payload: { i } })),
      enqueueTextInObject: us((i) => this.enqueueText(JSON.stringify({ kind: PULL_KIND, payload: { i } }))),
      enqueueGroupPerJob: us(() => (groupAnswers = this.enqueueGroup(groupTexts) as typeof groupAnswers), 1, n),
      clientReadAnswer: us((i) => readEnqueueAnswer(groupAnswers.ok ? groupAnswers.value[i]! : "", "profile", groupTexts[i]!)),
      batchEnqueuePerJob: await (async () => {
        const t0 = Date.now();
        await this.enqueueBatch(batch);
        const ms = Date.now() - t0;
        return ms > 0 ? Math.round(((ms * 1000) / n) * 100) / 100 : null;
      })(),
      candidatesOfOne: us(() => sql.exec(CLAIM_KINDS_CANDIDATES_SQL, Date.now(), "[]", 1, JSON.stringify([PULL_KIND])).toArray()),
      candidatesOfOneRowOnly: us(() => sql.exec(`SELECT seq FROM jobs WHERE state = 'queued' AND kind = +? ORDER BY priority DESC, seq LIMIT 1`, PULL_KIND).toArray()),
      selectOne: us(() => sql.exec("SELECT 1").toArray()),
      claimOne: us(() => claim(1), n / 2),
      claim16PerJob: us(() => claim(16), n / 32, n / 2),
      completeOne: await (async () => {
        claimed = (await Promise.all(claims)).flatMap((r) => (r.ok ? r.value.jobs.map((job) => ({ id: job.id, token: job.lease.token })) : []));
        return us((i) => claimed[i] && this.complete(claimed[i].id, { token: claimed[i].token }));
      })(),
      getJob: us(() => this.store.getJob("store-0")),
      cloneJob: us(() => structuredClone(this.store.getJob("store-0"))),
      counts: us(() => this.store.counts()),
    };
    return { n, ...profile, claimed: claimed.length, rows: sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM jobs`).one().n };
  }

  /**
   * The wake computation at this lane's backlog, µs per call: as this lane computes it (no executor
   * kinds) and as a lane with an in-process kind would, over the same rows of pull-only jobs.
   */
  async benchWake(reps: number): Promise<{ noExecutorsUs: number; withExecutorUs: number }> {
    const us = (kinds: string[]) => {
      const t0 = Date.now();
      for (let i = 0; i < reps; i++) this.wakeReads.rows(kinds, [], 0);
      return Math.round(((Date.now() - t0) * 1000) / reps);
    };
    return { noExecutorsUs: us([]), withExecutorUs: us([NOOP_KIND]) };
  }

  /**
   * `calls` pull claims of `max` in process, each timed alone (the claim's body never awaits: its work
   * is done when the call returns): µs in all, and the claimed jobs' queues in start order. Each job is
   * completed once claimed (untimed), so that its queue, and the lane, may start the next.
   */
  async benchClaims(calls: number, max: number): Promise<{ us: number; queues: (string | null)[] }> {
    let ms = 0;
    const queues: (string | null)[] = [];
    for (let i = 0; i < calls; i++) {
      const t0 = Date.now();
      const claimed = this.claim({ kinds: [PULL_KIND], max, leaseMs: 600_000 });
      ms += Date.now() - t0;
      const answer = await claimed;
      if (!answer.ok || answer.value.jobs.length === 0) break;
      for (const job of answer.value.jobs) {
        queues.push(job.queue);
        await this.complete(job.id, { token: job.lease.token });
      }
    }
    return { us: ms * 1000, queues };
  }

  /** The query plans of the hot statements, to read next to the figures. */
  async benchPlans(): Promise<Record<string, string[]>> {
    const plan = (query: string, ...args: unknown[]) =>
      this.ctx.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, ...args).toArray().map((r) => r.detail);
    const now = Date.now();
    this.ensureBare();
    return {
      claimOne: plan(CLAIM_ONE, "t", now, now, now),
      bareClaimOne: plan(BARE_CLAIM_ONE, "t", now, now, now, 0),
      queueClaimCandidates: plan(CLAIM_CANDIDATES_SQL, now, "[]", "[]", 1),
      counts: plan(`SELECT state, outcome, COUNT(*) AS n FROM jobs GROUP BY state, outcome`),
    };
  }
}
