/**
 * The writes an attempt's holder makes through the fence (fence.ts): renew, complete, fail and
 * release, each one statement guarded by token + unexpired lease (in a transaction where a second
 * statement goes with it). A write that matches nothing is explained by `missed`: a repeat answers
 * the job as it is; anything else is refused with why.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Job, Lease } from "../../shared/job.js";
import { firstJobRow, oneJobRow, seqSubjectRows, toJob } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import { deleteCompletedCheckpoints } from "../store/deletion.js";
import type { Cancels } from "./cancel.js";
import { explainMiss, type FenceOp } from "./fence.js";
import * as L from "./lease-statements.js";
import { decideRetry } from "./policy.js";
import { fromRunning, keepUpkeep, subjectSnap } from "../store/upkeep.js";

export class FencedWrites {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly store: JobStore,
    private readonly cancels: Cancels,
  ) {
    this.sql = storage.sql;
  }

  /** A new token and expiry for the holder of the current lease (and its progress, when given); the old token is then superseded. */
  renew(id: string, token: string, leaseMs: number, progressJson: string | null = null): Result<Lease> {
    const now = this.clock.now();
    const fresh = this.entropy.token();
    const row = this.sql.exec<{ generation: number; lease_until: number }>(L.RENEW_SQL, id, token, now, fresh, now + leaseMs, progressJson).toArray()[0];
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
    const to = this.store.endState();
    return this.storage.transactionSync(() => {
      const row = firstJobRow(this.sql.exec(L.COMPLETE_SQL, id, token, now, to, resultJson, to === "settled" ? now : null));
      if (!row) return this.missed(id, token, "complete");
      keepUpkeep(this.sql, [fromRunning(row)], now);
      deleteCompletedCheckpoints(this.sql, [row]);
      this.store.emit(row, "running", now - (row.claimed_at ?? now), now);
      return ok(toJob(row, this.store.lane));
    });
  }

  /**
   * Completes many attempts in one statement, each through the fence by its own token, and deletes
   * the checkpoints of those that may have some (`checkpoints`: the caller knows) up to each
   * completing lease's generation in the same transaction; returns the ids it settled. The caller
   * sends each one not settled through `complete` to learn why.
   */
  completeBatch(items: readonly { id: string; token: string; resultJson: string; checkpoints: boolean }[]): Set<string> {
    const now = this.clock.now();
    const to = this.store.endState();
    const settledAt = to === "settled" ? now : null;
    const one = items.length === 1 ? items[0]! : null;
    const complete = () => {
      const rows = seqSubjectRows(one
        ? this.sql.exec(L.COMPLETE_ONE_SQL, one.id, one.token, now, to, one.resultJson, settledAt)
        : this.sql.exec(L.COMPLETE_MANY_SQL, JSON.stringify(items.map((i) => [i.id, i.token, i.resultJson])), to, settledAt, now));
      keepUpkeep(this.sql, rows.map((row) => fromRunning(subjectSnap(row, now))), now);
      return rows;
    };
    const stepped = new Set(items.filter((i) => i.checkpoints).map((i) => i.id));
    // A batch of jobs that cannot have checkpoints (most of them) costs no more than it did without them.
    const rows = stepped.size === 0 ? complete() : this.storage.transactionSync(() => {
      const rows = complete();
      deleteCompletedCheckpoints(this.sql, rows.filter((r) => stepped.has(r.id)));
      return rows;
    });
    for (const row of rows) this.store.emit(row, "running", now - (row.claimed_at ?? now), now);
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
        .exec<{ seq: number; attempts: number; max_attempts: number; backoff_base_ms: number; backoff_max_ms: number }>(L.HELD_FOR_FAIL_SQL, id, token, now)
        .toArray()[0];
      if (!held) return this.missed(id, token, "fail");
      const decision = decideRetry(held, retry, retryAfterMs, now, this.entropy.random());
      const to = this.store.endState();
      const row = decision.retry
        ? oneJobRow(this.sql.exec(L.RETRY_SQL, held.seq, decision.runAt, message, now))
        : oneJobRow(this.sql.exec(L.FAIL_SQL, held.seq, to, message, to === "settled" ? now : null, now));
      keepUpkeep(this.sql, [fromRunning(row)], now);
      this.store.emit(row, "running", now - (row.claimed_at ?? now), now);
      return ok(toJob(row, this.store.lane));
    });
  }

  /** Gives the job back at once, and the attempt it spent with it. */
  release(id: string, token: string): Result<Job> {
    const now = this.clock.now();
    const row = firstJobRow(this.sql.exec(L.RELEASE_SQL, id, token, now));
    if (!row) return this.missed(id, token, "release");
    keepUpkeep(this.sql, [fromRunning(row)], now);
    this.store.emit(row, "running", now - (row.claimed_at ?? now), now);
    return ok(toJob(row, this.store.lane));
  }

  /**
   * Ends the attempt and queues its job again in `delayMs`, giving back the attempt it spent; its
   * checkpoints stay (a durable sleep resumes past them). The token then answers `lease_superseded`.
   */
  snooze(id: string, token: string, delayMs: number): Result<Job> {
    const now = this.clock.now();
    const row = firstJobRow(this.sql.exec(L.SNOOZE_SQL, id, token, now, now + delayMs));
    if (!row) return this.missed(id, token, "snooze");
    keepUpkeep(this.sql, [fromRunning(row)], now);
    this.store.emit(row, "running", now - (row.claimed_at ?? now), now);
    return ok(toJob(row, this.store.lane));
  }

  /**
   * Whether `token` holds the job's lease now, as the fence says: a fenced write that checks more
   * than the fence (a checkpoint's limits) and matched nothing asks this to tell which refused it.
   */
  holds(id: string, token: string): boolean {
    return this.sql.exec(L.HOLDS_FENCE_SQL, id, token, this.clock.now()).toArray().length > 0;
  }

  /**
   * The answer to a fenced write that matched nothing (fence.ts says why). A repeat answers the job
   * as it is; the holder of a cancel-requested job speaking ends its attempt: the job settles
   * `cancelled` here, and the holder hears `job_cancelled`. Public for the fenced writes of steps/.
   */
  missed(id: string, token: string, op: FenceOp): Result<Job> {
    const now = this.clock.now();
    const row = this.store.row(id);
    const miss = explainMiss(row, id, token, op, now);
    if (miss.kind === "repeat") return ok(toJob(row!, this.store.lane));
    if (miss.kind === "cancel") this.cancels.settle(row!, now);
    return { ok: false, error: miss.error };
  }

  /** The current lease of a running job, for the in-process holder (never exposed over the API). */
  leaseOf(id: string): { token: string; until: number } | null {
    const row = this.sql.exec<{ lease_token: string; lease_until: number }>(L.LEASE_OF_SQL, id).toArray()[0];
    return row ? { token: row.lease_token, until: row.lease_until } : null;
  }
}
