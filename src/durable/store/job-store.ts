/**
 * The lane's store: runs the named statements of `statements.ts` on the lane's SQLite, inside
 * transactions where a change takes more than one. Rows become jobs through `toJob` (job-row.ts);
 * a fenced write that matches nothing is explained by `explainMiss` (fence.ts); retries and
 * recoveries are decided by `policy.ts`. `now` and randomness are injected.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { MAX_PAGE_BYTES, RECOVERY_BATCH } from "../../shared/defaults.js";
import { fail, ok, type ErrorBody, type Result } from "../../shared/errors.js";
import type { ClaimedJob, Counts, Job, JobState, Lease, Outcome } from "../../shared/job.js";
import { explainMiss, type FenceOp } from "../attempts/fence.js";
import { firstJobRow, identityOfRow, jobRows, newRow, newSubject, oneJobRow, sameIdentity, seqSubjectRows, specValues, toClaimedJob, toJob, type Inserted, type JobRow, type JobSpec, type TransitionSubject } from "./job-row.js";
import { rowBytes, withinBytes, type Candidate, type ClaimFilter, type ListFilter } from "./page.js";
import { decideRecovery, decideRetry } from "../attempts/policy.js";
import { LaneCounts } from "./counts.js";
import { LaneSettingsStore } from "./settings.js";
import { WakeReads } from "../wake/reads.js";
import * as Q from "./job-statements.js";
import { checkpointBytes } from "../steps/checkpoints.js";
import { deleteCompletedCheckpoints } from "./owned-rows.js";

/** One change of a job's state, for logs, hooks and events. */
export interface Transition {
  job: TransitionSubject;
  /** null: the job was just enqueued. */
  from: JobState | null;
  to: JobState;
  /** Milliseconds since the attempt was claimed, for transitions that end an attempt. */
  durationMs: number | null;
}

export interface StoreOptions {
  /** The lane's name, as jobs carry it. */
  lane: string;
  /** Record outcomes as `completing` (to be delivered, then settled) rather than `settled` at once. */
  deliverOutcomes: boolean;
  /** Told of every transition, inside the write (`wanted`: whether anyone listens at all). */
  transitions?: { readonly wanted: boolean; record(transition: Transition): void };
}

/** Thrown inside a transaction to roll it back with an answer. */
class Rollback {
  constructor(readonly error: ErrorBody) {}
}

export class LaneStore {
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
    this.settings = new LaneSettingsStore(storage, options.lane);
    this.laneCounts = new LaneCounts(storage);
    this.wakeReads = new WakeReads(this.sql, clock, this.settings);
  }

  /** The lane's settings (concurrency, pause, registration): a room of their own. */
  readonly settings: LaneSettingsStore;
  /** What the wake reads of the jobs, and the running count (wake-rows.ts). */
  readonly wakeReads: WakeReads;

  /** The lane's kept counts and lifetime stats (counts.ts): a room of their own. */
  readonly laneCounts: LaneCounts;

  /** The counts of jobs now, kept as they change: one row read at any size. */
  counts(): Counts {
    return this.laneCounts.counts();
  }

  // ---- enqueue ----

  /**
   * Enqueues one job in one statement. The answer is built from the spec, not read back; an id that
   * exists is a duplicate with the same spec, else a conflict. `now`: the enqueue's one reading of the
   * clock, the one its spec was built with (its `createdAt`).
   */
  insertJob(spec: JobSpec, now: number): Result<Inserted> {
    try {
      this.sql.exec(Q.INSERT_ONE_SQL, ...specValues(spec), now);
    } catch (error) {
      // The id's unique constraint failed the statement, which wrote nothing; any other failure rethrows.
      const existing = this.row(spec.id);
      if (!existing) throw error;
      if (sameIdentity(identityOfRow(existing), spec)) return ok({ status: "duplicate", job: toJob(existing, this.lane) });
      return fail("job_conflict", `job id already used with a different spec: ${spec.id}`, { ids: [spec.id] });
    }
    this.emit(newSubject(spec), null, null);
    return ok({ status: "queued", at: now });
  }

  /**
   * A new due job started at once by the lane's dispatcher (`holder` lane): inserted running with its
   * first lease when a slot is free (`heldSlots` besides running rows, `concurrency`), in one statement.
   * `now`: the enqueue's one reading of the clock, its creation, claim and lease start alike; answered
   * as `at`, for the enqueue's answer (`enqueuedJob`). Null when no slot is free or the id exists: the
   * caller enqueues it queued (`insertJob`).
   */
  insertStarted(spec: JobSpec, leaseMs: number, heldSlots: number, concurrency: number, now: number): { job: ClaimedJob; seq: number; at: number } | null {
    const lease = { token: this.entropy.token(), generation: 1, expiresAt: now + leaseMs };
    const seq = this.sql.exec<{ seq: number }>(Q.INSERT_STARTED_SQL, ...specValues(spec), now, lease.token, lease.expiresAt, heldSlots, concurrency).toArray()[0]?.seq;
    if (seq === undefined) return null;
    const queued = { ...newRow(spec, now), seq };
    const row: JobRow = { ...queued, state: "running", attempts: 1, generation: 1, lease_token: lease.token, lease_until: lease.expiresAt, lease_holder: "lane", claimed_at: now };
    this.emit(queued, null, null); // as if enqueued, then claimed: observers see the two transitions of any job
    this.emit(row, "queued", null);
    return { job: toClaimedJob(row, this.lane), seq, at: now };
  }

  /**
   * Enqueues 1..1000 jobs in one transaction, all or nothing, with one `INSERT … SELECT` over a JSON
   * array of them. An id that exists (or came earlier in the batch) with the same spec is a
   * duplicate; with a different spec, a conflict that rolls the whole batch back. `now`: as `insertJob`'s.
   */
  insertJobs(specs: readonly JobSpec[], now: number): Result<{ id: string; status: "queued" | "duplicate" }[]> {
    const first = new Map<string, JobSpec>();
    for (const spec of specs) if (!first.has(spec.id)) first.set(spec.id, spec);
    return this.transaction(() => {
      const rows = JSON.stringify([...first.values()].map(specValues));
      // Read as value arrays: up to 1,000 ids, where an object per row costs several times more (job-row.ts).
      const inserted = new Set<string>();
      for (const [id] of this.sql.exec(Q.INSERT_MANY_SQL, rows, now).raw()) inserted.add(id as string);
      const existing = new Map<string, JobRow>();
      if (inserted.size < first.size) {
        const others = JSON.stringify([...first.keys()].filter((id) => !inserted.has(id)));
        for (const row of jobRows(this.sql.exec(Q.JOBS_BY_IDS_SQL, others))) existing.set(row.id, row);
      }
      const results: { id: string; status: "queued" | "duplicate" }[] = [];
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

  // ---- read ----

  getJob(id: string): Job | null {
    const row = this.row(id);
    return row ? toJob(row, this.lane) : null;
  }

  /** A page of jobs in enqueue order: at most `limit` of them and at most 4 MiB of JSON (never none while one is there). */
  listJobs(filter: ListFilter): { jobs: Job[]; lastSeq: number | null; more: boolean } {
    const rows = jobRows(this.sql.exec(Q.LIST_SQL, filter.afterSeq, filter.state ?? null, filter.outcome ?? null, filter.kind ?? null, filter.queue ?? null, filter.limit + 1));
    const jobs: Job[] = [];
    let bytes = 0;
    let lastSeq: number | null = null;
    for (const row of rows.slice(0, filter.limit)) {
      bytes += rowBytes(row);
      if (jobs.length > 0 && bytes > MAX_PAGE_BYTES) break;
      jobs.push(toJob(row, this.lane));
      lastSeq = row.seq;
    }
    return { jobs, lastSeq, more: rows.length > jobs.length };
  }

  // ---- claim and the fence ----

  /**
   * Claims up to `max` due jobs, honouring pause, concurrency, priority, enqueue order, queue heads and
   * the page's bytes. `seqs` learns each claimed job's seq (the dispatcher's records find rows by it);
   * `seen.all`, whether no other due job it may claim was left (false when it could take none).
   */
  claimDue(filter: ClaimFilter, seqs?: Map<string, number>, seen?: { all: boolean }): ClaimedJob[] {
    const now = this.clock.now();
    // No transaction: everything below runs in one synchronous stretch (nothing else runs in the object
    // meanwhile), the reads change nothing, and the claim is one statement, whole or not at all.
    const { concurrency, paused } = this.settings.read();
    if (paused) return [];
    const free = concurrency - this.wakeReads.runningCount() - filter.heldSlots;
    const limit = Math.min(filter.max, free);
    if (limit <= 0) return [];
    const excludeIds = JSON.stringify(filter.excludeIds);
    const candidates = filter.kinds
      ? this.candidatesOfKinds(filter.kinds.filter((k) => !filter.excludeKinds.includes(k)), now, excludeIds, limit)
      : this.sql.exec<Candidate>(Q.CLAIM_CANDIDATES_SQL, now, JSON.stringify(filter.excludeKinds), excludeIds, limit).toArray();
    // A pull claim's answer carries the jobs' checkpoints too; an in-process claim sends nothing.
    const extra = filter.maxBytes === Infinity ? null : checkpointBytes(this.sql, candidates.map((c) => c.seq));
    const page = withinBytes(extra ? candidates.map((c) => ({ ...c, bytes: c.bytes + (extra.get(c.seq) ?? 0) })) : candidates, filter.maxBytes);
    // Fewer than it could take: every due head it may claim is in this page (the dispatcher keeps that).
    if (seen) seen.all = candidates.length < limit;
    if (page.length === 0) return [];
    // One statement for all of them, each with its own token; answered in the candidates' order.
    const leases = page.map(({ seq }) => [seq, this.entropy.token()] as const);
    const order = new Map(page.map(({ seq }, i) => [seq, i]));
    const rows = jobRows(this.sql.exec(Q.CLAIM_SQL, JSON.stringify(leases), now + filter.leaseMs, filter.holder, now))
      .sort((a, b) => order.get(a.seq)! - order.get(b.seq)!);
    return rows.map((row) => {
      this.emit(row, "queued", null);
      seqs?.set(row.id, row.seq);
      return toClaimedJob(row, this.lane);
    });
  }

  /** The best `limit` due heads among the given kinds: the best of each kind, merged. */
  private candidatesOfKinds(kinds: readonly string[], now: number, excludeIds: string, limit: number): Candidate[] {
    if (kinds.length === 1) return this.sql.exec<Candidate>(Q.CLAIM_KIND_CANDIDATES_SQL, now, kinds[0]!, excludeIds, limit).toArray();
    const all: Candidate[] = [];
    for (const kind of new Set(kinds)) all.push(...this.sql.exec<Candidate>(Q.CLAIM_KIND_CANDIDATES_SQL, now, kind, excludeIds, limit));
    return all.sort((a, b) => b.priority - a.priority || a.seq - b.seq).slice(0, limit);
  }

  /** A new token and expiry for the holder of the current lease (and its progress, when given); the old token is then superseded. */
  renew(id: string, token: string, leaseMs: number, progressJson: string | null = null): Result<Lease> {
    const now = this.clock.now();
    const fresh = this.entropy.token();
    const row = this.sql.exec<{ generation: number; lease_until: number }>(Q.RENEW_SQL, id, token, now, fresh, now + leaseMs, progressJson).toArray()[0];
    if (row) return ok({ token: fresh, generation: row.generation, expiresAt: row.lease_until });
    const missed = this.missed(id, token, "renew");
    return missed.ok ? fail("internal", "renew cannot be a repeat") : missed;
  }

  /**
   * Records the attempt's success and, in the same transaction, deletes the job's checkpoints up to
   * its generation. The same token completing again answers the settled job.
   */
  complete(id: string, token: string, resultJson: string): Result<Job> {
    const now = this.clock.now();
    const to = this.outcomeState();
    return this.storage.transactionSync(() => {
      const row = firstJobRow(this.sql.exec(Q.COMPLETE_SQL, id, token, now, to, resultJson, to === "settled" ? now : null));
      if (!row) return this.missed(id, token, "complete");
      deleteCompletedCheckpoints(this.sql, [row]);
      this.emit(row, "running", now - (row.claimed_at ?? now));
      return ok(toJob(row, this.lane));
    });
  }

  /**
   * Completes many in-process attempts in one statement, each through the fence by its own token, and
   * deletes the checkpoints of those that may have some (`checkpoints`: the caller knows) up to each
   * completing lease's generation in the same transaction; returns the ids it settled. The caller
   * sends each one not settled through `complete` to learn why.
   */
  completeBatch(items: readonly { id: string; token: string; resultJson: string; checkpoints: boolean }[]): Set<string> {
    const now = this.clock.now();
    const to = this.outcomeState();
    const settledAt = to === "settled" ? now : null;
    const one = items.length === 1 ? items[0]! : null;
    const complete = () =>
      seqSubjectRows(one
        ? this.sql.exec(Q.COMPLETE_ONE_SQL, one.id, one.token, now, to, one.resultJson, settledAt)
        : this.sql.exec(Q.COMPLETE_MANY_SQL, JSON.stringify(items.map((i) => [i.id, i.token, i.resultJson])), to, settledAt, now));
    const stepped = new Set(items.filter((i) => i.checkpoints).map((i) => i.id));
    // A batch of jobs that cannot have checkpoints (most of them) costs no more than it did without them.
    const rows = stepped.size === 0 ? complete() : this.storage.transactionSync(() => {
      const rows = complete();
      deleteCompletedCheckpoints(this.sql, rows.filter((r) => stepped.has(r.id)));
      return rows;
    });
    for (const row of rows) this.emit(row, "running", now - (row.claimed_at ?? now));
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Records a failed attempt: queued again after the backoff (or `retryAfterMs`) while attempts remain
   * and `retry` is not false, else settled `failed`.
   */
  fail(id: string, token: string, message: string, retry: boolean, retryAfterMs: number | null): Result<Job> {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const held = this.sql
        .exec<{ seq: number; attempts: number; max_attempts: number; backoff_base_ms: number; backoff_max_ms: number }>(Q.HELD_FOR_FAIL_SQL, id, token, now)
        .toArray()[0];
      if (!held) return this.missed(id, token, "fail");
      const decision = decideRetry(held, retry, retryAfterMs, now, this.entropy.random());
      const to = this.outcomeState();
      const row = decision.retry
        ? oneJobRow(this.sql.exec(Q.RETRY_SQL, held.seq, decision.runAt, message, now))
        : oneJobRow(this.sql.exec(Q.FAIL_SQL, held.seq, to, message, to === "settled" ? now : null, now));
      this.emit(row, "running", now - (row.claimed_at ?? now));
      return ok(toJob(row, this.lane));
    });
  }

  /** Gives the job back at once, and the attempt it spent with it. */
  release(id: string, token: string): Result<Job> {
    const now = this.clock.now();
    const row = firstJobRow(this.sql.exec(Q.RELEASE_SQL, id, token, now));
    if (!row) return this.missed(id, token, "release");
    this.emit(row, "running", now - (row.claimed_at ?? now));
    return ok(toJob(row, this.lane));
  }

  /**
   * The answer to a fenced write that matched nothing (fence.ts says why). A repeat answers the job
   * as it is; the holder of a cancel-requested job speaking ends its attempt: the job settles
   * `cancelled` here, and the holder hears `job_cancelled`. Public for the fenced writes of other
   * stores (checkpoints.ts).
   */
  missed(id: string, token: string, op: FenceOp): Result<Job> {
    const now = this.clock.now();
    const row = this.row(id);
    const miss = explainMiss(row, id, token, op, now);
    if (miss.kind === "repeat") return ok(toJob(row!, this.lane));
    if (miss.kind === "cancel") this.settleCancelled(row!, now);
    return { ok: false, error: miss.error };
  }

  // ---- cancel and requeue ----

  cancel(id: string, reason: string | null): Result<{ status: "cancelled" | "cancelling"; job: Job }> {
    const now = this.clock.now();
    const row = this.row(id);
    if (!row) return fail("job_not_found", `no job ${id} in this lane`);
    switch (row.state) {
      case "queued":
        return ok({ status: "cancelled", job: this.settleCancelled(row, now, reason) });
      case "running": {
        if (row.cancel_requested === 1) return ok({ status: "cancelling", job: toJob(row, this.lane) });
        const updated = oneJobRow(this.sql.exec(Q.REQUEST_CANCEL_SQL, row.seq, reason, now));
        return ok({ status: "cancelling", job: toJob(updated, this.lane) });
      }
      default:
        if (row.outcome === "cancelled") return ok({ status: "cancelled", job: toJob(row, this.lane) });
        return fail("job_settled", `job ${id} is already settled (${row.outcome})`);
    }
  }

  /** Settles a queued or running job `cancelled` (running: its attempt is over). */
  private settleCancelled(row: JobRow, now: number, reason: string | null = null): Job {
    const to = this.outcomeState();
    const updated = oneJobRow(this.sql.exec(Q.SETTLE_CANCELLED_SQL, row.seq, row.state, to, reason, to === "settled" ? now : null, now));
    this.emit(updated, row.state, row.state === "running" ? now - (row.claimed_at ?? now) : null);
    return toJob(updated, this.lane);
  }

  /**
   * Settles `cancelled` the running job whose cancellation was requested, if `token` still holds it
   * (null: it does not): the wind-up of an aborted in-process attempt, or of one whose executor is
   * gone (the alarm).
   */
  settleCancelledAttempt(id: string, token: string): Job | null {
    const row = this.row(id);
    if (!row || row.state !== "running" || row.lease_token !== token || row.cancel_requested !== 1) return null;
    return this.settleCancelled(row, this.clock.now());
  }

  requeue(id: string): Result<Job> {
    const now = this.clock.now();
    const row = this.row(id);
    if (!row) return fail("job_not_found", `no job ${id} in this lane`);
    if (row.state !== "settled") return fail("job_not_requeueable", `job ${id} is ${row.state}`);
    if (row.outcome === "completed") return fail("job_settled", `job ${id} completed; it cannot be requeued`);
    const updated = oneJobRow(this.sql.exec(Q.REQUEUE_SQL, row.seq, now));
    this.emit(updated, "settled", null);
    return ok(toJob(updated, this.lane));
  }

  // ---- what the alarm does ----

  /**
   * Recovers running jobs whose lease ran out: a cancel-requested one settles `cancelled`; another is
   * queued again (its attempt given back) while its recovery budget lasts, else settled
   * `interrupted`. Idempotent: a second pass finds nothing. Returns how many it handled.
   */
  recoverExpired(limit = RECOVERY_BATCH): number {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const expired = jobRows(this.sql.exec(Q.EXPIRED_LEASES_SQL, now, limit));
      for (const row of expired) {
        if (row.cancel_requested === 1) {
          this.settleCancelled(row, now);
          continue;
        }
        const decision = decideRecovery(row, now);
        const to = this.outcomeState();
        const updated = decision.recover
          ? oneJobRow(this.sql.exec(Q.RECOVER_SQL, row.seq, now, decision.count, decision.windowStart, decision.message))
          : oneJobRow(this.sql.exec(Q.INTERRUPT_SQL, row.seq, now, to, decision.message, to === "settled" ? now : null));
        this.emit(updated, "running", now - (row.claimed_at ?? now));
      }
      return expired.length;
    });
  }

  /**
   * Ends, as of now, every lease held by the lane's own dispatcher. Called when the object starts: a
   * new instance runs no executor yet, so such a lease belongs to a previous instance that is gone,
   * and its job need not wait out the lease to be recovered. Returns how many.
   */
  expireLaneLeases(): number {
    return this.sql.exec(Q.EXPIRE_LANE_LEASES_SQL, this.clock.now()).rowsWritten;
  }

  /** Jobs whose outcome is recorded but not yet delivered, oldest first. */
  completingJobs(limit: number): Job[] {
    return jobRows(this.sql.exec(Q.COMPLETING_SQL, limit)).map((r) => toJob(r, this.lane));
  }

  /** Second phase of an outcome: delivered, now settled. Idempotent. */
  markSettled(id: string): Job | null {
    const row = firstJobRow(this.sql.exec(Q.MARK_SETTLED_SQL, id, this.clock.now()));
    if (!row) return null;
    this.emit(row, "completing", null);
    return toJob(row, this.lane);
  }

  /** The current lease of a running job, for the in-process holder (never exposed over the API). */
  leaseOf(id: string): { token: string; until: number } | null {
    const row = this.sql.exec<{ lease_token: string; lease_until: number }>(Q.LEASE_OF_SQL, id).toArray()[0];
    return row ? { token: row.lease_token, until: row.lease_until } : null;
  }

  // ---- internals ----

  private row(id: string): JobRow | undefined {
    return firstJobRow(this.sql.exec(Q.JOB_BY_ID_SQL, id));
  }

  private outcomeState(): "completing" | "settled" {
    return this.options.deliverOutcomes ? "completing" : "settled";
  }

  private emit(job: TransitionSubject, from: JobState | null, durationMs: number | null): void {
    const sink = this.options.transitions;
    if (sink?.wanted) sink.record({ job, from, to: job.state, durationMs });
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

