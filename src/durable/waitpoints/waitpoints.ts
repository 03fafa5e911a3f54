/**
 * A lane's waitpoints (docs/api.md "Waitpoints"): one-shot latches, settled exactly once, by a
 * completion or by their timeout, in `settleWaitpoint` alone, whose transaction also tells the jobs
 * that wait (waiters.ts) and keeps the counts (`waitpoints.pending`, the stats). The alarm times
 * them out and drops the settled ones past the lane's `retention.completedMs`.
 *
 * The wake's term (the earliest pending timeout, the first settled waitpoint past its horizon) is
 * read from the rows once, then kept in memory until a waitpoint changes: the wake is computed at
 * every flush, and a lane that never uses waitpoints must not pay a statement for them there.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { RETENTION_BATCH } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Json, WaitpointStats } from "../../shared/job.js";
import type { Waitpoint, WaitpointCompleted, WaitpointCreated, WaitpointState } from "../../shared/waitpoint.js";

export type { WaitpointCompleted };
import { idOnShard } from "../../shared/shards.js";
import { retentionWake } from "../operator/retention.js";
import { NO_WAITERS, type WaitpointWaiters } from "./waiters.js";
import * as W from "./waitpoint-statements.js";

/** How many waitpoints one alarm times out at most (more due: the term stays now, the alarm comes back). */
export const WAITPOINT_TIMEOUT_BATCH = 500;

/** A waitpoint's row, as its statements select it. */
export type WaitpointRow = {
  id: string;
  state: WaitpointState;
  result: string | null;
  timeout_at: number | null;
  created_at: number;
  settled_at: number | null;
};

/** How a waitpoint settles: completed with a result (its JSON text), or timed out. */
export type Settlement = { state: "completed"; result: string } | { state: "timedOut" };


export class Waitpoints {
  private readonly sql: SqlStorage;
  /** The wake's inputs as the rows last said (null: not read since the last change). */
  private next: { timeout: number | null; settled: number | null } | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly lane: string,
    private readonly shard: { readonly index: number; count(): number },
    /** The jobs waiting on waitpoints; nothing waits until a lane's parts say otherwise. */
    public waiters: WaitpointWaiters = NO_WAITERS,
  ) {
    this.sql = storage.sql;
  }

  /** Creates waitpoint `id` (a UUID when none) pending, timing out `timeoutMs` from now; an existing one answers as it is. */
  create(id: string | undefined, timeoutMs: number | undefined): WaitpointCreated {
    // A shard of a sharded lane makes an id it owns itself (its router names one: this is a stale router's call).
    const name = id ?? (this.shard.count() > 1 ? idOnShard(this.shard.index, this.shard.count(), () => this.entropy.id()) : this.entropy.id());
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const made = this.sql.exec<WaitpointRow>(W.INSERT_PENDING_SQL, name, timeoutMs === undefined ? null : now + timeoutMs, now).toArray()[0];
      if (!made) return { waitpoint: this.toWaitpoint(this.row(name)!), created: false };
      this.sql.exec(W.COUNT_SQL, 1, 0, 0, 0);
      this.changed();
      return { waitpoint: this.toWaitpoint(made), created: true };
    });
  }

  get(id: string): Result<Waitpoint> {
    const row = this.row(id);
    return row ? ok(this.toWaitpoint(row)) : fail("waitpoint_not_found", `no waitpoint ${id} in lane ${this.lane}`);
  }

  /**
   * Completes waitpoint `id` with `result` (its JSON text): the first settlement wins. An unknown id
   * is created already completed, so that a signal before anyone waits is kept; a settled one is
   * refused, `waitpoint_settled` with the waitpoint as it is, and nothing changes.
   */
  complete(id: string, result: string): Result<WaitpointCompleted> {
    return this.storage.transactionSync(() => {
      const settled = this.settleWaitpoint(id, { state: "completed", result });
      if (settled) return ok(settled);
      const waitpoint = this.toWaitpoint(this.row(id)!);
      return fail("waitpoint_settled", `waitpoint ${id} is already ${waitpoint.state}`, { waitpoint });
    });
  }

  /**
   * The one settlement of a waitpoint, inside the caller's transaction: a pending one settles as
   * `settlement` says; an unknown one is created already completed (a completion alone: a timeout
   * settles only what exists). Keeps the counts, then tells the waiting jobs (waiters.ts). Null when
   * the waitpoint had settled already (or a timeout finds none): nothing changes, nobody is told.
   */
  settleWaitpoint(id: string, settlement: Settlement): WaitpointCompleted | null {
    const now = this.clock.now();
    const result = settlement.state === "completed" ? settlement.result : null;
    let row = this.sql.exec<WaitpointRow>(W.SETTLE_SQL, id, settlement.state, result, now).toArray()[0];
    let created = false;
    if (row) {
      this.sql.exec(W.COUNT_SQL, 0, 1, settlement.state === "completed" ? 1 : 0, settlement.state === "timedOut" ? 1 : 0);
    } else if (settlement.state === "completed") {
      row = this.sql.exec<WaitpointRow>(W.INSERT_COMPLETED_SQL, id, result, now).toArray()[0];
      if (!row) return null;
      created = true;
      this.sql.exec(W.COUNT_SQL, 0, 0, 1, 0);
    } else {
      return null;
    }
    this.changed();
    // Told first: the answer counts no waiter it released (told with none counted, a statement saved).
    this.waiters.settled(this.toWaitpoint(row, 0));
    return { waitpoint: this.toWaitpoint(row), created };
  }

  /** The alarm's work: times out the pending waitpoints whose timeout has come, then drops settled ones past the horizon. */
  alarm(completedMs: number | null): void {
    this.timeOutDue();
    if (completedMs !== null) this.removeSettled(this.clock.now() - completedMs, RETENTION_BATCH);
  }

  /** Times out at most `limit` due pending waitpoints, each settled on its own; answers how many. */
  timeOutDue(limit = WAITPOINT_TIMEOUT_BATCH): number {
    if (this.next !== null && (this.next.timeout === null || this.next.timeout > this.clock.now())) return 0;
    return this.storage.transactionSync(() => {
      let timedOut = 0;
      const due = this.sql.exec<WaitpointRow>(W.DUE_TIMEOUTS_SQL, this.clock.now(), limit).toArray();
      for (const { id } of due) {
        if (this.settleWaitpoint(id, { state: "timedOut" })) timedOut++;
      }
      // The cached term said one was due and none is: read it again, else the wake stays due for ever.
      if (due.length === 0) this.changed();
      return timedOut;
    });
  }

  /** Deletes at most `limit` settled waitpoints settled before `before` whose waiters were all told; a sweep's too. */
  removeSettled(before: number, limit: number): number {
    if (this.next !== null && (this.next.settled === null || this.next.settled >= before)) return 0;
    const removed = this.storage.transactionSync(() => this.sql.exec(W.DELETE_SETTLED_SQL, before, limit).rowsWritten);
    // Removed, or the cached term was past and nothing was: either way it is read again.
    this.changed();
    return removed;
  }

  /**
   * The waitpoints' wake term: the earliest pending timeout, and the first settled waitpoint past the
   * lane's `completedMs` (as retention's: its horizon plus the slack, or now once that has passed).
   */
  nextAt(completedMs: number | null): number | null {
    const next = (this.next ??= {
      timeout: this.sql.exec<{ at: number | null }>(W.NEXT_TIMEOUT_SQL).one().at,
      settled: this.sql.exec<{ at: number }>(W.OLDEST_SETTLED_SQL).toArray()[0]?.at ?? null,
    });
    const now = this.clock.now();
    const timeout = next.timeout === null ? null : Math.max(now, next.timeout);
    const retention = next.settled === null || completedMs === null ? null : retentionWake(next.settled + completedMs, now);
    return timeout === null ? retention : retention === null ? timeout : Math.min(timeout, retention);
  }

  /** How many waitpoints are pending, and the lifetime stats: the kept counts, one row read. */
  counts(): { pending: number; stats: WaitpointStats } {
    const { pending, waitpointsCompleted, waitpointsTimedOut } = this.sql.exec<{ pending: number } & WaitpointStats>(W.COUNTS_SQL).one();
    return { pending, stats: { waitpointsCompleted, waitpointsTimedOut } };
  }

  /** Whether the lane holds any waitpoint, settled or not (its shard count may not change then). */
  any(): boolean {
    return this.sql.exec<{ any: number }>(W.ANY_SQL).one().any === 1;
  }

  /**
   * `n` waiters in other lanes are owed a notice of waitpoint `id`'s settlement: retention and sweep
   * keep it until `releaseUntold` says they were told.
   */
  holdForUntold(id: string, n: number): void {
    this.sql.exec(W.HOLD_UNTOLD_SQL, id, n);
    this.changed();
  }

  /** `n` of waitpoint `id`'s untold waiters were told (their notices acknowledged). */
  releaseUntold(id: string, n: number): void {
    this.sql.exec(W.RELEASE_UNTOLD_SQL, id, n);
    this.changed();
  }

  /** The wake's inputs must be read again: a waitpoint was made, settled, held or removed. */
  changed(): void {
    this.next = null;
  }

  private row(id: string): WaitpointRow | undefined {
    return this.sql.exec<WaitpointRow>(W.WAITPOINT_SQL, id).toArray()[0];
  }

  private toWaitpoint(row: WaitpointRow, waiters = this.waiters.count(row.id)): Waitpoint {
    return {
      id: row.id, lane: this.lane, state: row.state, result: row.result === null ? null : (JSON.parse(row.result) as Json),
      timeoutAt: row.timeout_at, createdAt: row.created_at, settledAt: row.settled_at, waiters,
    };
  }
}
