/**
 * All SQL of a lane. One named method per statement family; `now` and randomness are injected;
 * every write on behalf of an attempt is fenced by `state='running' AND lease_token=? AND lease_until>now`,
 * and a fenced write that matches nothing says why.
 */
import { backoffDelayMs } from "../shared/backoff.js";
import type { Clock, Entropy } from "../shared/clock.js";
import { DEFAULT_CONCURRENCY } from "../shared/defaults.js";
import { fail, ok, type ErrorBody, type Result } from "../shared/errors.js";
import { canonicalJson } from "../shared/json.js";
import type { ClaimedJob, Counts, Job, JobState, Json, Lease, Outcome } from "../shared/job.js";

/** A validated, defaulted enqueue request, ready to insert. */
export interface JobSpec {
  id: string;
  kind: string;
  payload: string;
  queue: string | null;
  priority: number;
  runAt: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number;
  maxRecoveries: number;
  recoveryWindowMs: number;
}

export type JobRow = {
  seq: number;
  id: string;
  kind: string;
  payload: string;
  queue: string | null;
  priority: number;
  run_at: number;
  state: JobState;
  outcome: Outcome | null;
  attempts: number;
  max_attempts: number;
  backoff_base_ms: number;
  backoff_max_ms: number;
  timeout_ms: number;
  result: string | null;
  error: string | null;
  cancel_requested: number;
  generation: number;
  lease_token: string | null;
  lease_until: number | null;
  claimed_at: number | null;
  created_at: number;
  updated_at: number;
  settled_at: number | null;
  max_recoveries: number;
  recovery_window_ms: number;
  recovery_count: number;
  recovery_window_start: number | null;
  cancel_reason: string | null;
  lease_holder: "lane" | "consumer" | null;
};

type LaneRow = { name: string | null; concurrency: number; paused: number; registered: number };

export interface LaneSettings {
  name: string | null;
  concurrency: number;
  paused: boolean;
  registered: boolean;
}

const JOB_COLUMNS = `seq, id, kind, payload, queue, priority, run_at, state, outcome, attempts, max_attempts,
  backoff_base_ms, backoff_max_ms, timeout_ms, result, error, cancel_requested, generation, lease_token,
  lease_until, claimed_at, created_at, updated_at, settled_at, max_recoveries, recovery_window_ms,
  recovery_count, recovery_window_start, cancel_reason, lease_holder`;

const INSERT_COLUMNS = `id, kind, payload, queue, priority, run_at, max_attempts, backoff_base_ms, backoff_max_ms,
  timeout_ms, max_recoveries, recovery_window_ms, state, created_at, updated_at`;

/** One new job; returns its seq, or nothing when the id exists. */
const INSERT_ONE_SQL = `INSERT INTO jobs (${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)
  ON CONFLICT (id) DO NOTHING RETURNING seq`;

/** Many new jobs from one JSON array of `specValues` rows, in order; returns the ids it inserted. ?1 rows, ?2 now. */
const INSERT_MANY_SQL = `INSERT INTO jobs (${INSERT_COLUMNS})
  SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9,
    value->>10, value->>11, 'queued', ?2, ?2
  FROM json_each(?1) WHERE true ORDER BY key
  ON CONFLICT (id) DO NOTHING RETURNING id`;

/** The columns a transition needs (`TransitionSubject`, plus when the attempt began). */
const SUBJECT_COLUMNS = `id, kind, state, outcome, attempts, generation, claimed_at`;
type SubjectRow = TransitionSubject & { claimed_at: number | null };

/**
 * The fence (DESIGN.md): a write on behalf of an attempt touches the job only while that attempt's
 * token holds an unexpired lease on a running job nobody asked to cancel. Binds id, token, now.
 */
const FENCE = `id = ? AND state = 'running' AND lease_token = ? AND lease_until > ? AND cancel_requested = 0`;

/** A queued job may start only if it heads its queue and nothing of its queue runs. */
const IS_QUEUE_HEAD = `(j.queue IS NULL OR (
  NOT EXISTS (SELECT 1 FROM jobs r WHERE r.queue = j.queue AND r.state = 'running')
  AND NOT EXISTS (SELECT 1 FROM jobs h WHERE h.queue = j.queue AND h.state = 'queued'
    AND (h.priority > j.priority OR (h.priority = j.priority AND h.seq < j.seq)))))`;

/**
 * The statements on the hot paths, exported so that a test can read their `EXPLAIN QUERY PLAN` and
 * fail on a full table scan (issue 2): the claim, the wake computation and lease recovery.
 */
/** Due queued jobs a claimer may take, best first. ?1 now, ?2 kinds (JSON array or null), ?3 kinds excluded (JSON array), ?4 limit. */
export const CLAIM_CANDIDATES_SQL = `SELECT j.seq FROM jobs j
  WHERE j.state = 'queued' AND j.run_at <= ?1
    AND (?2 IS NULL OR j.kind IN (SELECT value FROM json_each(?2)))
    AND j.kind NOT IN (SELECT value FROM json_each(?3))
    AND ${IS_QUEUE_HEAD}
  ORDER BY j.priority DESC, j.seq LIMIT ?4`;

/**
 * Due queued jobs of one kind a claimer may take, best first: asked once per kind on `jobs_kind`,
 * so that a backlog of other kinds is never walked. ?1 now, ?2 kind, ?3 limit.
 */
export const CLAIM_KIND_CANDIDATES_SQL = `SELECT j.seq, j.priority FROM jobs j
  WHERE j.state = 'queued' AND j.kind = ?2 AND j.run_at <= ?1 AND ${IS_QUEUE_HEAD}
  ORDER BY j.priority DESC, j.seq LIMIT ?3`;

/** Claims the given queued jobs, each with its own token. ?1 JSON [[seq, token], …], ?2 lease until, ?3 holder, ?4 now. */
export const CLAIM_SQL = `UPDATE jobs SET state = 'running', attempts = attempts + 1, generation = generation + 1,
    lease_token = c.c_token, lease_until = ?2, lease_holder = ?3, claimed_at = ?4, updated_at = ?4
  FROM (SELECT value->>0 AS c_seq, value->>1 AS c_token FROM json_each(?1)) AS c
  WHERE jobs.seq = c.c_seq AND jobs.state = 'queued'
  RETURNING ${JOB_COLUMNS}`;

/** Completes attempts through the fence. ?1 JSON [[id, token, result], …], ?2 state, ?3 settled at, ?4 now. */
export const COMPLETE_MANY_SQL = `UPDATE jobs SET state = ?2, outcome = 'completed', result = c.c_result, error = NULL,
    settled_at = ?3, updated_at = ?4
  FROM (SELECT value->>0 AS c_id, value->>1 AS c_token, value->>2 AS c_result FROM json_each(?1)) AS c
  WHERE jobs.id = c.c_id AND jobs.state = 'running' AND jobs.lease_token = c.c_token AND jobs.lease_until > ?4
    AND jobs.cancel_requested = 0
  RETURNING ${SUBJECT_COLUMNS}`;

/** Wake: is an outcome waiting for delivery. */
export const COMPLETING_COUNT_SQL = `SELECT COUNT(*) AS n FROM jobs WHERE state = 'completing'`;

/** Wake: the earliest lease expiry. */
export const EARLIEST_LEASE_SQL = `SELECT MIN(lease_until) AS t FROM jobs WHERE state = 'running'`;

/** Wake and claim: how many jobs run. */
export const RUNNING_COUNT_SQL = `SELECT COUNT(*) AS n FROM jobs WHERE state = 'running'`;

/** Wake: is a queue head of an in-process kind due now. ?1 now, ?2 one kind (asked once per kind, on `jobs_kind`). */
export const DUE_EXECUTOR_HEAD_SQL = `SELECT 1 FROM jobs j WHERE j.state = 'queued' AND j.kind = ?2 AND j.run_at <= ?1
  AND ${IS_QUEUE_HEAD} LIMIT 1`;

/** Wake: outcomes to deliver, the earliest lease expiry and how many run, in one statement. */
export const WAKE_STATE_SQL = `SELECT (${COMPLETING_COUNT_SQL}) AS completing, (${EARLIEST_LEASE_SQL}) AS lease,
  (${RUNNING_COUNT_SQL}) AS running`;

/** Wake: the earliest future runAt of a queue head. ?1 now. */
export const EARLIEST_FUTURE_HEAD_SQL = `SELECT j.run_at FROM jobs j WHERE j.state = 'queued' AND j.run_at > ?1 AND ${IS_QUEUE_HEAD}
  ORDER BY j.run_at LIMIT 1`;

/** Recovery: running jobs whose lease ran out, oldest expiry first. ?1 now, ?2 limit. */
export const EXPIRED_LEASES_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE state = 'running' AND lease_until <= ?1
  ORDER BY lease_until LIMIT ?2`;

/** What a transition says of its job: enough for a log line, without parsing payload or result. */
export type TransitionSubject = Pick<Job, "id" | "kind" | "state" | "outcome" | "attempts" | "generation">;

/** One change of a job's state, for logs and hooks. */
export interface Transition {
  job: TransitionSubject;
  from: JobState;
  to: JobState;
  /** Milliseconds since the attempt was claimed, for transitions that end an attempt. */
  durationMs: number | null;
}

export type FenceOp = "renew" | "complete" | "fail" | "release";

export interface StoreOptions {
  /** Record outcomes as `completing` (to be delivered, then settled) rather than `settled` at once. */
  deliverOutcomes: boolean;
  onTransition?: (transition: Transition) => void;
}

export interface ClaimFilter {
  /** Only these kinds (null: any). */
  kinds: readonly string[] | null;
  /** Never these kinds (the lane's in-process executors, when a pull consumer claims). */
  excludeKinds: readonly string[];
  max: number;
  leaseMs: number;
  /** Who will hold the leases: the lane's own dispatcher, or (the default) a pull consumer. */
  holder?: "lane" | "consumer";
}

export interface ListFilter {
  state?: JobState | undefined;
  outcome?: Outcome | undefined;
  kind?: string | undefined;
  queue?: string | undefined;
  afterSeq: number;
  limit: number;
}

/** Thrown inside a transaction to roll it back with an answer. */
class Rollback {
  constructor(readonly error: ErrorBody) {}
}

export class LaneStore {
  private readonly sql: SqlStorage;
  private cachedSettings: LaneSettings | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly options: StoreOptions,
  ) {
    this.sql = storage.sql;
  }

  // ---- lane settings ----

  /** The lane row, read once: this object is its only writer, and every write goes through here. */
  settings(): LaneSettings {
    if (this.cachedSettings) return this.cachedSettings;
    const row = this.sql.exec<LaneRow>(`SELECT name, concurrency, paused, registered FROM lane WHERE id = 1`).toArray()[0];
    this.cachedSettings = row
      ? { name: row.name, concurrency: row.concurrency, paused: row.paused === 1, registered: row.registered === 1 }
      : { name: null, concurrency: DEFAULT_CONCURRENCY, paused: false, registered: false };
    return this.cachedSettings;
  }

  setName(name: string): void {
    this.sql.exec(`UPDATE lane SET name = ? WHERE id = 1 AND (name IS NULL OR name <> ?)`, name, name);
    this.cachedSettings = null;
  }

  markRegistered(): void {
    this.sql.exec(`UPDATE lane SET registered = 1 WHERE id = 1`);
    this.cachedSettings = null;
  }

  configure(patch: { concurrency?: number | undefined; paused?: boolean | undefined }): void {
    this.sql.exec(
      `UPDATE lane SET concurrency = COALESCE(?, concurrency), paused = COALESCE(?, paused) WHERE id = 1`,
      patch.concurrency ?? null,
      patch.paused === undefined ? null : patch.paused ? 1 : 0,
    );
    this.cachedSettings = null;
  }

  counts(): Counts {
    const counts: Counts = { queued: 0, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 };
    const rows = this.sql.exec<{ state: JobState; outcome: Outcome | null; n: number }>(
      `SELECT state, outcome, COUNT(*) AS n FROM jobs GROUP BY state, outcome`,
    );
    for (const row of rows) {
      if (row.state === "settled" && row.outcome) counts[row.outcome] += row.n;
      else if (row.state !== "settled") counts[row.state] += row.n;
    }
    return counts;
  }

  // ---- enqueue ----

  /**
   * Enqueues one job in one statement. The answer is built from the spec, not read back; an id that
   * exists is a duplicate with the same spec, else a conflict.
   */
  insertJob(spec: JobSpec): Result<{ status: "queued" | "duplicate"; job: Job }> {
    const now = this.clock.now();
    const inserted = this.sql.exec(INSERT_ONE_SQL, ...specValues(spec), now, now).toArray().length > 0;
    if (inserted) return ok({ status: "queued", job: this.specToJob(spec, now) });
    const existing = this.rowById(spec.id)!;
    if (sameSpec(existing, spec)) return ok({ status: "duplicate", job: this.toJob(existing) });
    return fail("job_conflict", `job id already used with a different spec: ${spec.id}`, { ids: [spec.id] });
  }

  /**
   * Enqueues 1..1000 jobs in one transaction, all or nothing, with one `INSERT … SELECT` over a JSON
   * array of them. An id that exists (or came earlier in the batch) with the same spec is a
   * duplicate; with a different spec, a conflict that rolls the whole batch back.
   */
  insertJobs(specs: readonly JobSpec[]): Result<{ id: string; status: "queued" | "duplicate" }[]> {
    const now = this.clock.now();
    const first = new Map<string, JobSpec>();
    for (const spec of specs) if (!first.has(spec.id)) first.set(spec.id, spec);
    try {
      return ok(
        this.storage.transactionSync(() => {
          const rows = JSON.stringify([...first.values()].map(specValues));
          const inserted = new Set(this.sql.exec<{ id: string }>(INSERT_MANY_SQL, rows, now).toArray().map((r) => r.id));
          const existing = new Map<string, JobRow>();
          if (inserted.size < first.size) {
            const others = JSON.stringify([...first.keys()].filter((id) => !inserted.has(id)));
            for (const row of this.sql.exec<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id IN (SELECT value FROM json_each(?))`, others)) {
              existing.set(row.id, row);
            }
          }
          const results: { id: string; status: "queued" | "duplicate" }[] = [];
          const conflicts = new Set<string>();
          for (const spec of specs) {
            const old = existing.get(spec.id);
            const earlier = first.get(spec.id)!;
            const fresh = !old && earlier === spec;
            const same = fresh || (old ? sameSpec(old, spec) : sameSpecs(earlier, spec));
            if (same) results.push({ id: spec.id, status: fresh ? "queued" : "duplicate" });
            else conflicts.add(spec.id);
          }
          if (conflicts.size > 0) {
            const ids = [...conflicts];
            throw new Rollback({ code: "job_conflict", message: `job id already used with a different spec: ${ids.join(", ")}`, details: { ids } });
          }
          return results;
        }),
      );
    } catch (error) {
      if (error instanceof Rollback) return { ok: false, error: error.error };
      throw error;
    }
  }

  /** The job a spec just became, as `toJob` would read it back. */
  private specToJob(spec: JobSpec, now: number): Job {
    return {
      id: spec.id,
      lane: this.laneName,
      kind: spec.kind,
      payload: JSON.parse(spec.payload) as Json,
      queue: spec.queue,
      priority: spec.priority,
      runAt: spec.runAt,
      state: "queued",
      outcome: null,
      attempts: 0,
      generation: 0,
      maxAttempts: spec.maxAttempts,
      timeoutMs: spec.timeoutMs,
      result: null,
      error: null,
      cancelRequested: false,
      lease: null,
      createdAt: now,
      updatedAt: now,
      settledAt: null,
    };
  }

  // ---- read ----

  getJob(id: string): Job | null {
    const row = this.rowById(id);
    return row ? this.toJob(row) : null;
  }

  listJobs(filter: ListFilter): { jobs: Job[]; lastSeq: number | null; more: boolean } {
    const rows = this.sql
      .exec<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs
         WHERE seq > ? AND (?2 IS NULL OR state = ?2) AND (?3 IS NULL OR outcome = ?3)
           AND (?4 IS NULL OR kind = ?4) AND (?5 IS NULL OR queue = ?5)
         ORDER BY seq LIMIT ?6`,
        filter.afterSeq,
        filter.state ?? null,
        filter.outcome ?? null,
        filter.kind ?? null,
        filter.queue ?? null,
        filter.limit + 1,
      )
      .toArray();
    const more = rows.length > filter.limit;
    const page = more ? rows.slice(0, filter.limit) : rows;
    return { jobs: page.map((r) => this.toJob(r)), lastSeq: page.at(-1)?.seq ?? null, more };
  }

  // ---- claim and the fence ----

  /** Claims up to `max` due jobs, honouring pause, concurrency, priority, enqueue order and queue heads. */
  claimDue(filter: ClaimFilter): ClaimedJob[] {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const { concurrency, paused } = this.settings();
      if (paused) return [];
      const free = concurrency - this.runningCount();
      const limit = Math.min(filter.max, free);
      if (limit <= 0) return [];
      const candidates = filter.kinds
        ? this.candidatesOfKinds(filter.kinds.filter((k) => !filter.excludeKinds.includes(k)), now, limit)
        : this.sql.exec<{ seq: number }>(CLAIM_CANDIDATES_SQL, now, null, JSON.stringify(filter.excludeKinds), limit).toArray();
      if (candidates.length === 0) return [];
      // One statement for all of them, each with its own token; answered in the candidates' order.
      const leases = candidates.map(({ seq }) => [seq, this.entropy.token()] as const);
      const order = new Map(candidates.map(({ seq }, i) => [seq, i]));
      const rows = this.sql
        .exec<JobRow>(CLAIM_SQL, JSON.stringify(leases), now + filter.leaseMs, filter.holder ?? "consumer", now)
        .toArray()
        .sort((a, b) => order.get(a.seq)! - order.get(b.seq)!);
      return rows.map((row) => {
        const job = this.toJob(row);
        this.emit(job, "queued", null);
        return { ...job, lease: { token: row.lease_token!, generation: row.generation, expiresAt: row.lease_until! } };
      });
    });
  }

  /** The best `limit` due heads among the given kinds: the best of each kind, merged. */
  private candidatesOfKinds(kinds: readonly string[], now: number, limit: number): { seq: number }[] {
    if (kinds.length === 1) return this.sql.exec<{ seq: number }>(CLAIM_KIND_CANDIDATES_SQL, now, kinds[0]!, limit).toArray();
    const all: { seq: number; priority: number }[] = [];
    for (const kind of new Set(kinds)) {
      all.push(...this.sql.exec<{ seq: number; priority: number }>(CLAIM_KIND_CANDIDATES_SQL, now, kind, limit));
    }
    return all.sort((a, b) => b.priority - a.priority || a.seq - b.seq).slice(0, limit);
  }

  /** A new token and expiry for the holder of the current lease; the old token is then superseded. */
  renew(id: string, token: string, leaseMs: number): Result<Lease> {
    const now = this.clock.now();
    const fresh = this.entropy.token();
    const row = this.sql
      .exec<{ generation: number; lease_until: number }>(
        `UPDATE jobs SET lease_token = ?, lease_until = ?, updated_at = ?
         WHERE ${FENCE}
         RETURNING generation, lease_until`,
        fresh,
        now + leaseMs,
        now,
        id,
        token,
        now,
      )
      .toArray()[0];
    if (row) return ok({ token: fresh, generation: row.generation, expiresAt: row.lease_until });
    const refusal = this.refuse(id, token, "renew");
    return refusal.ok ? fail("internal", "renew cannot be idempotent") : refusal;
  }

  /** Records the attempt's success. The same token completing again answers the settled job. */
  complete(id: string, token: string, resultJson: string): Result<Job> {
    const row = this.completeRow<JobRow>(id, token, resultJson, JOB_COLUMNS);
    return row ? ok(this.toJob(row)) : this.refuse(id, token, "complete");
  }

  /** `complete` for the dispatcher, which needs no job back: no row read back, no JSON parsed. */
  completeAttempt(id: string, token: string, resultJson: string): Result<null> {
    if (this.completeRow(id, token, resultJson, SUBJECT_COLUMNS)) return ok(null);
    const refusal = this.refuse(id, token, "complete");
    return refusal.ok ? ok(null) : refusal;
  }

  /**
   * Completes many in-process attempts in one statement, each through the fence; returns the ids it
   * settled. The caller sends each one not settled through `completeAttempt` to learn why.
   */
  completeAttempts(items: readonly { id: string; token: string; resultJson: string }[]): Set<string> {
    const now = this.clock.now();
    const to = this.outcomeState();
    const rows = this.sql
      .exec<SubjectRow>(
        COMPLETE_MANY_SQL,
        JSON.stringify(items.map((i) => [i.id, i.token, i.resultJson])),
        to,
        to === "settled" ? now : null,
        now,
      )
      .toArray();
    for (const row of rows) this.emit(row, "running", now - (row.claimed_at ?? now));
    return new Set(rows.map((r) => r.id));
  }

  private completeRow<R extends SubjectRow>(id: string, token: string, resultJson: string, columns: string): R | undefined {
    const now = this.clock.now();
    const to = this.outcomeState();
    const row = this.sql
      .exec<R>(
        `UPDATE jobs SET state = ?, outcome = 'completed', result = ?, error = NULL, settled_at = ?, updated_at = ?
         WHERE ${FENCE}
         RETURNING ${columns}`,
        to,
        resultJson,
        to === "settled" ? now : null,
        now,
        id,
        token,
        now,
      )
      .toArray()[0];
    if (row) this.emit(row, "running", now - (row.claimed_at ?? now));
    return row;
  }

  /**
   * Records a failed attempt: queued again after the backoff (or `retryAfterMs`) while attempts remain
   * and `retry` is not false, else settled `failed`.
   */
  failAttempt(id: string, token: string, message: string, retry: boolean, retryAfterMs: number | null): Result<Job> {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const held = this.sql
        .exec<{ seq: number; attempts: number; max_attempts: number; backoff_base_ms: number; backoff_max_ms: number }>(
          `SELECT seq, attempts, max_attempts, backoff_base_ms, backoff_max_ms FROM jobs
           WHERE ${FENCE}`,
          id,
          token,
          now,
        )
        .toArray()[0];
      if (!held) return this.refuse(id, token, "fail");
      let row: JobRow;
      if (retry && held.attempts < held.max_attempts) {
        const delay =
          retryAfterMs ?? backoffDelayMs(held.attempts, held.backoff_base_ms, held.backoff_max_ms, this.entropy.random());
        row = this.sql
          .exec<JobRow>(
            `UPDATE jobs SET state = 'queued', run_at = ?, error = ?, updated_at = ? WHERE seq = ? RETURNING ${JOB_COLUMNS}`,
            now + delay,
            message,
            now,
            held.seq,
          )
          .one();
      } else {
        const to = this.outcomeState();
        row = this.sql
          .exec<JobRow>(
            `UPDATE jobs SET state = ?, outcome = 'failed', error = ?, settled_at = ?, updated_at = ?
             WHERE seq = ? RETURNING ${JOB_COLUMNS}`,
            to,
            message,
            to === "settled" ? now : null,
            now,
            held.seq,
          )
          .one();
      }
      const job = this.toJob(row);
      this.emit(job, "running", now - (row.claimed_at ?? now));
      return ok(job);
    });
  }

  /** Gives the job back at once, and the attempt it spent with it. */
  release(id: string, token: string): Result<Job> {
    const now = this.clock.now();
    const row = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_at = ?, updated_at = ?
         WHERE ${FENCE}
         RETURNING ${JOB_COLUMNS}`,
        now,
        now,
        id,
        token,
        now,
      )
      .toArray()[0];
    if (!row) return this.refuse(id, token, "release");
    const job = this.toJob(row);
    this.emit(job, "running", now - (row.claimed_at ?? now));
    return ok(job);
  }

  /**
   * Why a fenced write matched nothing, in DESIGN.md's order: settled, cancel requested, another
   * token, out of time. A holder speaking for a cancel-requested job settles it `cancelled` here.
   * The same token completing (or failing) an attempt it already settled is idempotent.
   */
  private refuse(id: string, token: string, op: FenceOp): Result<Job> {
    const now = this.clock.now();
    const row = this.rowById(id);
    if (!row) return fail("job_not_found", `no job ${id} in this lane`);
    const own = row.lease_token === token;
    if (row.state === "settled" || row.state === "completing") {
      if (own && row.outcome === "cancelled") return fail("job_cancelled", `job ${id} was cancelled`);
      const repeated = (op === "complete" && row.outcome === "completed") || (op === "fail" && row.outcome === "failed");
      if (own && repeated) return ok(this.toJob(row));
      return fail("job_settled", `job ${id} is already settled (${row.outcome})`);
    }
    if (row.state === "running" && own && row.cancel_requested === 1) {
      this.settleCancelled(row, now);
      return fail("job_cancelled", `job ${id} was cancelled`);
    }
    if (!own) return fail("lease_superseded", `the token is not the current lease of job ${id}`);
    if (row.lease_until !== null && row.lease_until <= now) {
      return fail("lease_expired", `the lease of job ${id} expired at ${row.lease_until}`);
    }
    return fail("lease_superseded", `the attempt holding this token of job ${id} has already ended`);
  }

  // ---- cancel and requeue ----

  cancel(id: string, reason: string | null): Result<{ status: "cancelled" | "cancelling"; job: Job }> {
    const now = this.clock.now();
    const row = this.rowById(id);
    if (!row) return fail("job_not_found", `no job ${id} in this lane`);
    switch (row.state) {
      case "queued": {
        const settled = this.settleCancelled(row, now, reason);
        return ok({ status: "cancelled", job: settled });
      }
      case "running": {
        if (row.cancel_requested === 1) return ok({ status: "cancelling", job: this.toJob(row) });
        const updated = this.sql
          .exec<JobRow>(
            `UPDATE jobs SET cancel_requested = 1, cancel_reason = ?, updated_at = ? WHERE seq = ? RETURNING ${JOB_COLUMNS}`,
            reason,
            now,
            row.seq,
          )
          .one();
        return ok({ status: "cancelling", job: this.toJob(updated) });
      }
      default:
        if (row.outcome === "cancelled") return ok({ status: "cancelled", job: this.toJob(row) });
        return fail("job_settled", `job ${id} is already settled (${row.outcome})`);
    }
  }

  /** Settles a queued or running job `cancelled` (running: its attempt is over). */
  private settleCancelled(row: JobRow, now: number, reason: string | null = null): Job {
    const to = this.outcomeState();
    const updated = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET state = ?, outcome = 'cancelled', cancel_requested = 1,
           cancel_reason = COALESCE(?, cancel_reason), settled_at = ?, updated_at = ?
         WHERE seq = ? AND state = ? RETURNING ${JOB_COLUMNS}`,
        to,
        reason,
        to === "settled" ? now : null,
        now,
        row.seq,
        row.state,
      )
      .one();
    const job = this.toJob(updated);
    this.emit(job, row.state, row.state === "running" ? now - (row.claimed_at ?? now) : null);
    return job;
  }

  /** Settles `cancelled` the running job whose cancellation was requested, if `token` still holds it: the wind-up of an aborted in-process attempt. */
  settleCancelledAttempt(id: string, token: string): Job | null {
    const row = this.rowById(id);
    if (!row || row.state !== "running" || row.lease_token !== token || row.cancel_requested !== 1) return null;
    return this.settleCancelled(row, this.clock.now());
  }

  requeue(id: string): Result<Job> {
    const now = this.clock.now();
    const row = this.rowById(id);
    if (!row) return fail("job_not_found", `no job ${id} in this lane`);
    if (row.state !== "settled") return fail("job_not_requeueable", `job ${id} is ${row.state}`);
    if (row.outcome === "completed") return fail("job_settled", `job ${id} completed; it cannot be requeued`);
    const updated = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET state = 'queued', outcome = NULL, attempts = 0, run_at = ?, result = NULL,
           cancel_requested = 0, cancel_reason = NULL, recovery_count = 0, recovery_window_start = NULL,
           settled_at = NULL, updated_at = ?
         WHERE seq = ? AND state = 'settled' RETURNING ${JOB_COLUMNS}`,
        now,
        now,
        row.seq,
      )
      .one();
    const job = this.toJob(updated);
    this.emit(job, "settled", null);
    return ok(job);
  }

  sweep(settledBefore: number, limit: number): number {
    this.sql.exec(
      `DELETE FROM jobs WHERE seq IN (
         SELECT seq FROM jobs WHERE state = 'settled' AND settled_at < ? ORDER BY settled_at LIMIT ?)`,
      settledBefore,
      limit,
    );
    // Not `rowsWritten`: it counts index entries as well as rows.
    return this.sql.exec<{ n: number }>(`SELECT changes() AS n`).one().n;
  }

  // ---- what the alarm does ----

  /**
   * Recovers running jobs whose lease ran out: a cancel-requested one settles `cancelled`; another is
   * queued again (its attempt given back) while its recovery budget for the current window lasts,
   * else settled `interrupted`. Idempotent: a second pass finds nothing.
   */
  recoverExpired(limit = 500): { recovered: number; interrupted: number; cancelled: number } {
    const now = this.clock.now();
    const tally = { recovered: 0, interrupted: 0, cancelled: 0 };
    this.storage.transactionSync(() => {
      const expired = this.sql
        .exec<JobRow>(EXPIRED_LEASES_SQL, now, limit)
        .toArray();
      for (const row of expired) {
        const durationMs = now - (row.claimed_at ?? now);
        if (row.cancel_requested === 1) {
          this.settleCancelled(row, now);
          tally.cancelled++;
          continue;
        }
        const windowOpen = row.recovery_window_start !== null && now - row.recovery_window_start < row.recovery_window_ms;
        const windowStart = windowOpen ? row.recovery_window_start! : now;
        const used = windowOpen ? row.recovery_count : 0;
        let updated: JobRow;
        if (used < row.max_recoveries) {
          updated = this.sql
            .exec<JobRow>(
              `UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_at = ?, recovery_count = ?,
                 recovery_window_start = ?, error = ?, updated_at = ?
               WHERE seq = ? AND state = 'running' RETURNING ${JOB_COLUMNS}`,
              now,
              used + 1,
              windowStart,
              `lease expired at ${row.lease_until}; recovered (${used + 1} of ${row.max_recoveries} in this window)`,
              now,
              row.seq,
            )
            .one();
          tally.recovered++;
        } else {
          const to = this.outcomeState();
          updated = this.sql
            .exec<JobRow>(
              `UPDATE jobs SET state = ?, outcome = 'interrupted', error = ?, settled_at = ?, updated_at = ?
               WHERE seq = ? AND state = 'running' RETURNING ${JOB_COLUMNS}`,
              to,
              `lease expired at ${row.lease_until}; recovery budget of ${row.max_recoveries} per ${row.recovery_window_ms} ms spent`,
              to === "settled" ? now : null,
              now,
              row.seq,
            )
            .one();
          tally.interrupted++;
        }
        this.emit(this.toJob(updated), "running", durationMs);
      }
    });
    return tally;
  }

  /**
   * Ends, as of now, every lease held by the lane's own dispatcher. Called when the object starts: a
   * new instance runs no executor yet, so such a lease belongs to a previous instance that is gone,
   * and its job need not wait out the lease to be recovered. Returns how many.
   */
  expireOrphanedLeases(): number {
    const now = this.clock.now();
    return this.sql.exec(
      `UPDATE jobs SET lease_until = ? WHERE state = 'running' AND lease_holder = 'lane' AND lease_until > ?`,
      now,
      now,
    ).rowsWritten;
  }

  /** Jobs whose outcome is recorded but not yet delivered, oldest first. */
  completingJobs(limit = 100): Job[] {
    return this.sql
      .exec<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE state = 'completing' ORDER BY seq LIMIT ?`, limit)
      .toArray()
      .map((r) => this.toJob(r));
  }

  /** Second phase of an outcome: delivered, now settled. Idempotent. */
  markSettled(id: string): Job | null {
    const now = this.clock.now();
    const row = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET state = 'settled', settled_at = ?, updated_at = ? WHERE id = ? AND state = 'completing'
         RETURNING ${JOB_COLUMNS}`,
        now,
        now,
        id,
      )
      .toArray()[0];
    if (!row) return null;
    const job = this.toJob(row);
    this.emit(job, "completing", null);
    return job;
  }

  /**
   * The lane's one wake time, from its rows: the earliest of a claimable queued job's `runAt` (not
   * paused, queue head, a free concurrency slot; a due job only if an in-process executor would run
   * it), a running job's lease expiry, and now if an outcome awaits delivery that nobody is delivering
   * (`delivering`: how many this process has in hand). Null: nothing to do.
   */
  nextWakeAt(executorKinds: readonly string[], delivering = 0): number | null {
    const now = this.clock.now();
    const candidates: number[] = [];
    const state = this.sql
      .exec<{ completing: number; lease: number | null; running: number }>(WAKE_STATE_SQL)
      .one();
    if (state.completing > delivering) return now;
    if (state.lease !== null) candidates.push(state.lease);
    const { concurrency, paused } = this.settings();
    if (!paused && state.running < concurrency) {
      for (const kind of executorKinds) {
        if (this.sql.exec(DUE_EXECUTOR_HEAD_SQL, now, kind).toArray().length > 0) return now;
      }
      const future = this.sql.exec<{ run_at: number }>(EARLIEST_FUTURE_HEAD_SQL, now).toArray()[0];
      if (future) candidates.push(future.run_at);
    }
    return candidates.length > 0 ? Math.min(...candidates) : null;
  }

  runningCount(): number {
    return this.sql.exec<{ n: number }>(RUNNING_COUNT_SQL).one().n;
  }

  /** The current lease of a running job, for the in-process holder (never exposed over the API). */
  leaseOf(id: string): { token: string; until: number } | null {
    const row = this.sql
      .exec<{ lease_token: string; lease_until: number }>(
        `SELECT lease_token, lease_until FROM jobs WHERE id = ? AND state = 'running'`,
        id,
      )
      .toArray()[0];
    return row ? { token: row.lease_token, until: row.lease_until } : null;
  }

  // ---- mapping ----

  private rowById(id: string): JobRow | undefined {
    return this.sql.exec<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`, id).toArray()[0];
  }

  private outcomeState(): "completing" | "settled" {
    return this.options.deliverOutcomes ? "completing" : "settled";
  }

  private emit(job: TransitionSubject, from: JobState, durationMs: number | null): void {
    this.options.onTransition?.({ job, from, to: job.state, durationMs });
  }

  toJob(row: JobRow): Job {
    return {
      id: row.id,
      lane: this.laneName,
      kind: row.kind,
      payload: JSON.parse(row.payload) as Json,
      queue: row.queue,
      priority: row.priority,
      runAt: row.run_at,
      state: row.state,
      outcome: row.outcome,
      attempts: row.attempts,
      generation: row.generation,
      maxAttempts: row.max_attempts,
      timeoutMs: row.timeout_ms,
      result: row.result === null ? null : (JSON.parse(row.result) as Json),
      error: row.error,
      cancelRequested: row.cancel_requested === 1,
      lease:
        row.state === "running" && row.lease_until !== null
          ? { generation: row.generation, expiresAt: row.lease_until }
          : null,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      settledAt: row.settled_at,
    };
  }

  /** The lane's name, as learned from its first caller. */
  laneName = "";
}

/** The columns of `INSERT_ONE_SQL` and of each element of `INSERT_MANY_SQL`'s array, in order. */
function specValues(spec: JobSpec): [string, string, string, string | null, number, number, number, number, number, number, number, number] {
  return [
    spec.id,
    spec.kind,
    spec.payload,
    spec.queue,
    spec.priority,
    spec.runAt,
    spec.maxAttempts,
    spec.backoffBaseMs,
    spec.backoffMaxMs,
    spec.timeoutMs,
    spec.maxRecoveries,
    spec.recoveryWindowMs,
  ];
}

/** What makes two enqueues with one id the same job (API.md, enqueue). */
type Identity = Pick<JobSpec, "kind" | "payload" | "queue" | "priority" | "maxAttempts">;

/** Same id, same spec: kind, payload (as JSON, whatever its key order), queue, priority and maxAttempts. */
function sameSpecs(a: Identity, b: Identity): boolean {
  return (
    a.kind === b.kind &&
    a.queue === b.queue &&
    a.priority === b.priority &&
    a.maxAttempts === b.maxAttempts &&
    canonicalJson(JSON.parse(a.payload) as Json) === canonicalJson(JSON.parse(b.payload) as Json)
  );
}

/** `sameSpecs` of a stored job and a new request. */
function sameSpec(row: JobRow, spec: JobSpec): boolean {
  return sameSpecs({ kind: row.kind, payload: row.payload, queue: row.queue, priority: row.priority, maxAttempts: row.max_attempts }, spec);
}
