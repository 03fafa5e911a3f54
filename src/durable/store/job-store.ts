/**
 * The lane's job rows: inserts (one, started at once, a batch), reads, lists and requeue, each one
 * statement or one transaction of the statements in job-statements.ts. Rows become jobs through
 * `toJob` (job-row.ts). What happens to a job once an attempt holds it is attempts/'s. `now` and
 * randomness are injected.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { MAX_PAGE_BYTES } from "../../shared/defaults.js";
import { fail, ok, type ErrorBody, type Result } from "../../shared/errors.js";
import type { ClaimedJob, Counts, EnqueueStatus, Job, JobState } from "../../shared/job.js";
import { firstJobRow, identityOfRow, jobRows, newRow, newSubject, oneJobRow, sameIdentity, specValues, toClaimedJob, toJob, type Inserted, type JobRow, type JobSpec, type TransitionSubject } from "./job-row.js";
import { rowBytes, type ListFilter } from "./page.js";
import { LaneCounts } from "./counts.js";
import { LaneSettingsStore } from "./settings.js";
import * as Q from "./job-statements.js";
import { keepUpkeep, queuedSnap } from "./upkeep.js";

/** One change of a job's state, for logs, hooks and events. */
export interface Transition {
  job: TransitionSubject;
  /** null: the job was just enqueued. */
  from: JobState | null;
  to: JobState;
  /** Milliseconds since the attempt was claimed, for transitions that end an attempt. */
  durationMs: number | null;
  /** The instant the write used (its `now`), when the writer has it; else the log's own now. */
  at?: number;
}

/** Who is told of transitions as they are written (events/transitions.ts): `wanted` says whether anyone listens at all. */
export interface TransitionSink {
  readonly wanted: boolean;
  record(transition: Transition): void;
}

export interface StoreOptions {
  /** The lane's name, as jobs carry it. */
  lane: string;
  /** Record outcomes as `completing` (to be delivered, then settled) rather than `settled` at once. */
  deliverOutcomes: boolean;
  /** Told of every transition, inside the write (`wanted`: whether anyone listens at all). */
  transitions?: TransitionSink;
}

/** Thrown inside a transaction to roll it back with an answer. */
class Rollback {
  constructor(readonly error: ErrorBody) {}
}

export class JobStore {
  private readonly sql: SqlStorage;
  readonly lane: string;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly options: StoreOptions,
  ) {
    this.sql = storage.sql;
    this.lane = options.lane;
    this.settings = new LaneSettingsStore(storage);
    this.laneCounts = new LaneCounts(storage);
  }

  /** The lane's settings (concurrency, pause, retention, registration). */
  readonly settings: LaneSettingsStore;

  /** The lane's kept counts and lifetime stats (counts.ts): a room of their own. */
  readonly laneCounts: LaneCounts;

  /** The counts of jobs now, kept as they change: one row read at any size. */
  counts(): Counts {
    return this.laneCounts.counts();
  }

  // ---- enqueue ----

  /**
   * Enqueues one job in one statement. The answer is built from the spec, not read back. An id that
   * exists writes nothing: that job is read, and is a duplicate with the same spec, else a conflict.
   * `now`: the enqueue's one reading of the clock, the one its spec was built with (its `createdAt`).
   */
  insertJob(spec: JobSpec, now: number): Result<Inserted> {
    const inserted = this.sql.exec(Q.INSERT_ONE_SQL, ...specValues(spec), now).toArray().length > 0;
    if (!inserted) return this.existing(spec);
    keepUpkeep(this.sql, [{ old: null, new: queuedSnap(spec, now) }], now);
    this.emit(newSubject(spec), null, null);
    return ok({ status: "queued", at: now });
  }

  /** The answer to an enqueue whose id exists: the stored job when its spec is the same, else a conflict. */
  existing(spec: JobSpec): Result<Inserted> {
    const existing = this.row(spec.id);
    if (!existing) throw new Error(`the insert of ${spec.id} wrote nothing, and no job has that id`);
    if (sameIdentity(identityOfRow(existing), spec)) return ok({ status: "duplicate", job: toJob(existing, this.lane) });
    return fail("job_conflict", `job id already used with a different spec: ${spec.id}`, { ids: [spec.id] });
  }

  /**
   * A new due job started at once by the lane's dispatcher (`holder` lane): inserted running with its
   * first lease when a slot is free (`heldSlots` besides running rows, `concurrency`), in one statement;
   * the lease records the code's `version`.
   * `now`: the enqueue's one reading of the clock, its creation, claim and lease start alike; answered
   * as `at`, for the enqueue's answer (`enqueuedJob`). Null when no slot is free or the id exists: the
   * caller enqueues it queued (`insertJob`).
   */
  insertStarted(spec: JobSpec, leaseMs: number, heldSlots: number, concurrency: number, version: string, now: number): { job: ClaimedJob; seq: number; at: number } | null {
    const lease = { token: this.entropy.token(), generation: 1, expiresAt: now + leaseMs };
    const seq = this.sql.exec<{ seq: number }>(Q.INSERT_STARTED_SQL, ...specValues(spec), now, lease.token, lease.expiresAt, heldSlots, concurrency, version).toArray()[0]?.seq;
    if (seq === undefined) return null;
    const queued = { ...newRow(spec, now), seq };
    const row: JobRow = { ...queued, state: "running", attempts: 1, generation: 1, lease_token: lease.token, lease_until: lease.expiresAt, lease_holder: "lane", claimed_at: now };
    keepUpkeep(this.sql, [{ old: null, new: row }], now);
    this.emit(queued, null, null); // as if enqueued, then claimed: observers see the two transitions of any job
    this.emit(row, "queued", null);
    return { job: toClaimedJob(row, this.lane), seq, at: now };
  }

  /**
   * Enqueues 1..1000 jobs in one transaction, all or nothing, with one `INSERT … SELECT` over a JSON
   * array of them. An id that exists (or came earlier in the batch) with the same spec is a
   * duplicate; with a different spec, a conflict that rolls the whole batch back. `now`: as `insertJob`'s.
   */
  insertJobs(specs: readonly JobSpec[], now: number): Result<{ id: string; status: EnqueueStatus }[]> {
    const first = new Map<string, JobSpec>();
    for (const spec of specs) if (!first.has(spec.id)) first.set(spec.id, spec);
    return this.transaction(() => {
      const rows = JSON.stringify([...first.values()].map(specValues));
      // Read as value arrays: up to 1,000 ids, where an object per row costs several times more (job-row.ts).
      const inserted = new Set<string>();
      for (const [id] of this.sql.exec(Q.INSERT_MANY_SQL, rows, now).raw()) inserted.add(id as string);
      this.keepInserted(inserted, first, now);
      const existing = new Map<string, JobRow>();
      if (inserted.size < first.size) {
        const others = JSON.stringify([...first.keys()].filter((id) => !inserted.has(id)));
        for (const row of jobRows(this.sql.exec(Q.JOBS_BY_IDS_SQL, others))) existing.set(row.id, row);
      }
      const results: { id: string; status: EnqueueStatus }[] = [];
      const conflicts = new Set<string>();
      for (const spec of specs) {
        const old = existing.get(spec.id);
        const earlier = first.get(spec.id)!;
        const fresh = !old && earlier === spec;
        const same = fresh || sameIdentity(old ? identityOfRow(old) : earlier, spec);
        if (same) results.push({ id: spec.id, status: fresh ? "queued" : "duplicate" });
        else conflicts.add(spec.id);
      }
      if (conflicts.size > 0) {
        const ids = [...conflicts];
        throw new Rollback({ code: "job_conflict", message: `job id already used with a different spec: ${ids.join(", ")}`, details: { ids } });
      }
      // Checked once for the batch, not in `emit` for each of up to 1,000 jobs.
      if (this.options.transitions?.wanted) for (const id of inserted) this.emit(newSubject(first.get(id)!), null, null);
      return results;
    });
  }

  /**
   * The enqueues of many callers in one statement (group commit): each spec answered as its own
   * `insertJob` would be, in order — a new job, a duplicate of an existing job or of an earlier spec
   * of the same id, or a conflict — and one spec's conflict refuses that spec alone. Run it in the
   * caller's transaction. `now`: the group's one reading of the clock.
   */
  insertEach(specs: readonly JobSpec[], now: number): Result<Inserted>[] {
    const first = new Map<string, JobSpec>();
    for (const spec of specs) if (!first.has(spec.id)) first.set(spec.id, spec);
    const inserted = new Set<string>();
    for (const [id] of this.sql.exec(Q.INSERT_MANY_SQL, JSON.stringify([...first.values()].map(specValues)), now).raw()) inserted.add(id as string);
    this.keepInserted(inserted, first, now);
    const existing = new Map<string, JobRow>();
    if (inserted.size < first.size) {
      const others = JSON.stringify([...first.keys()].filter((id) => !inserted.has(id)));
      for (const row of jobRows(this.sql.exec(Q.JOBS_BY_IDS_SQL, others))) existing.set(row.id, row);
    }
    if (this.options.transitions?.wanted) for (const id of inserted) this.emit(newSubject(first.get(id)!), null, null);
    return specs.map((spec) => {
      const earlier = first.get(spec.id)!;
      if (earlier === spec && inserted.has(spec.id)) return ok({ status: "queued", at: now });
      const old = existing.get(spec.id);
      // A later spec of an id this group inserted is compared with the row as that spec wrote it.
      const row = old ?? newRow(earlier, now);
      if (sameIdentity(identityOfRow(row), spec)) return ok({ status: "duplicate", job: toJob(row, this.lane) });
      return fail("job_conflict", `job id already used with a different spec: ${spec.id}`, { ids: [spec.id] });
    });
  }

  // ---- read ----

  getJob(id: string): Job | null {
    const row = this.row(id);
    return row ? toJob(row, this.lane) : null;
  }

  /** A page of jobs in enqueue order: at most `limit` of them and at most 4 MiB of JSON (never none while one is there). */
  listJobs(filter: ListFilter): { jobs: Job[]; seqs: number[]; lastSeq: number | null; more: boolean } {
    const rows = jobRows(this.sql.exec(Q.LIST_SQL, filter.afterSeq, filter.state ?? null, filter.outcome ?? null, filter.kind ?? null, filter.queue ?? null, filter.limit + 1));
    const jobs: Job[] = [];
    const seqs: number[] = [];
    let bytes = 0;
    let lastSeq: number | null = null;
    for (const row of rows.slice(0, filter.limit)) {
      bytes += rowBytes(row);
      if (jobs.length > 0 && bytes > MAX_PAGE_BYTES) break;
      jobs.push(toJob(row, this.lane));
      seqs.push(row.seq);
      lastSeq = row.seq;
    }
    return { jobs, seqs, lastSeq, more: rows.length > jobs.length };
  }

  // ---- requeue ----

  requeue(id: string): Result<Job> {
    const now = this.clock.now();
    const row = this.row(id);
    if (!row) return fail("job_not_found", `no job ${id} in this lane`);
    if (row.state !== "settled") return fail("job_not_requeueable", `job ${id} is ${row.state}`);
    if (row.outcome === "completed") return fail("job_settled", `job ${id} completed; it cannot be requeued`);
    const updated = oneJobRow(this.sql.exec(Q.REQUEUE_SQL, row.seq, now));
    keepUpkeep(this.sql, [{ old: row, new: updated }], now);
    this.emit(updated, "settled", null);
    return ok(toJob(updated, this.lane));
  }

  // ---- internals ----

  /** The upkeep of a batch's new jobs: one write per upkeep row they touch. */
  private keepInserted(inserted: ReadonlySet<string>, specs: ReadonlyMap<string, JobSpec>, now: number): void {
    if (inserted.size > 0) keepUpkeep(this.sql, [...inserted].map((id) => ({ old: null, new: queuedSnap(specs.get(id)!, now) })), now);
  }

  /** A job's whole row, by id (the fence's and the cancel's reads). */
  row(id: string): JobRow | undefined {
    return firstJobRow(this.sql.exec(Q.JOB_BY_ID_SQL, id));
  }

  /** A job's kind, by id (undefined: no such job): a completion's result check reads nothing more. */
  kindOf(id: string): string | undefined {
    return this.sql.exec<{ kind: string }>(Q.KIND_BY_ID_SQL, id).toArray()[0]?.kind;
  }

  /** The state an outcome is recorded in: `completing` when a hook is to be told of it first, else `settled`. */
  endState(): "completing" | "settled" {
    return this.options.deliverOutcomes ? "completing" : "settled";
  }

  /** Tells the transition sink of a change just written, when anyone listens. */
  emit(job: TransitionSubject, from: JobState | null, durationMs: number | null, at?: number): void {
    const sink = this.options.transitions;
    if (sink?.wanted) sink.record({ job, from, to: job.state, durationMs, ...(at === undefined ? {} : { at }) });
  }

  /** Runs `body` in one transaction, all or nothing: a refusal it answers undoes everything it wrote. */
  allOrNothing<T>(body: () => Result<T>): Result<T> {
    return this.transaction(() => {
      const answer = body();
      if (!answer.ok) throw new Rollback(answer.error);
      return answer.value;
    });
  }

  /** Runs `body` in one transaction (one commit): a throw undoes it. */
  transactionSync<T>(body: () => T): T {
    return this.storage.transactionSync(body);
  }

  /** Runs `body` in a transaction; a `Rollback` thrown inside undoes it and becomes the answer. */
  private transaction<T>(body: () => T): Result<T> {
    try {
      return ok(this.storage.transactionSync(body));
    } catch (error) {
      if (error instanceof Rollback) return { ok: false, error: error.error };
      throw error;
    }
  }
}

