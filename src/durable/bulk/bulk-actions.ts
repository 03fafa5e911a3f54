/**
 * Bulk actions (docs/api.md "Bulk actions"): one runs at a time; the alarm applies it a chunk a turn
 * (at most `BULK_CHUNK` matching jobs, at most `BULK_SCAN` looked at), each chunk in one transaction
 * with the cursor that says how far it got, so that a restart goes on after it and no job is acted on
 * twice. Each job is acted on as its single route would (chunk.ts). While one runs, its term of the
 * wake is now, and requests are served between two turns; a finished one is kept `BULK_KEPT_MS`, its
 * removal a term too. Both terms are kept in memory: a plain job's flush reads no row of this table.
 */
import { BULK_CHUNK, BULK_KEPT_MS, BULK_SCAN, type Bulk, type BulkFilter } from "../../shared/bulk.js";
import type { BulkRequest } from "../../shared/bulk-schemas.js";
import type { Clock, Entropy } from "../../shared/clock.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import { actOn, type ChunkParts } from "./chunk.js";
import * as B from "./bulk-statements.js";

export type BulkParts = ChunkParts;

export class BulkActions {
  private readonly sql: SqlStorage;
  /** The row of the one that runs, and when the oldest finished one finished; read once, then kept here (this object is their only writer). */
  private memory: { running: B.BulkRow | null; oldestFinished: number | null } | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly parts: BulkParts,
  ) {
    this.sql = storage.sql;
  }

  /** Accepts a bulk action (`id`: the router's, for every shard of a lane; else made here). Another one running: `bulk_running`. */
  start(request: BulkRequest, id: string | null): Result<Bulk> {
    const known = this.memo();
    const running = known.running;
    if (running !== null) {
      if (running.id === id) return ok(toBulk(running));
      return fail("bulk_running", `bulk action ${running.id} runs in this lane; one runs at a time`, { bulk: toBulk(running) });
    }
    if (id !== null) {
      const same = this.row(id);
      if (same) return ok(toBulk(same)); // the router's call again, after this shard finished it
    }
    const row = this.sql.exec<B.BulkRow>(B.INSERT_BULK_SQL, id ?? this.entropy.id(), request.action, JSON.stringify(request.filter), request.reason ?? null, this.clock.now()).one();
    known.running = row;
    return ok(toBulk(row));
  }

  /** A bulk action by id, while kept. */
  get(id: string): Result<Bulk> {
    const row = this.row(id);
    if (!row || (row.finished_at !== null && row.finished_at + BULK_KEPT_MS <= this.clock.now())) return fail("bulk_not_found", `no bulk action ${id} in this lane`);
    return ok(toBulk(row));
  }

  /** The one that runs here, if any. */
  running(): Bulk | null {
    const running = this.memo().running;
    return running && toBulk(running);
  }

  /** Its wake term: now while one runs, else when the oldest finished one is past its keeping (null: none). */
  nextAt(): number | null {
    const { running, oldestFinished } = this.memo();
    if (running !== null) return this.clock.now();
    return oldestFinished === null ? null : oldestFinished + BULK_KEPT_MS;
  }

  /** One turn of the alarm: a chunk of the running one, or the removal of finished ones past their keeping. */
  turn(): void {
    const known = this.memo();
    const now = this.clock.now();
    if (known.oldestFinished !== null && known.oldestFinished + BULK_KEPT_MS <= now) {
      this.sql.exec(B.PRUNE_BULKS_SQL, now - BULK_KEPT_MS);
      known.oldestFinished = this.sql.exec<{ at: number | null }>(B.OLDEST_FINISHED_SQL).one().at;
    }
    const running = known.running;
    if (running === null) return;
    const aborts: string[] = [];
    const row = this.storage.transactionSync(() => this.chunk(running, now, aborts));
    known.running = row.finished_at === null ? row : null;
    if (row.finished_at !== null) known.oldestFinished ??= row.finished_at;
    // After the commit, as the cancel route does: the in-process attempts of jobs now cancel-requested.
    for (const id of aborts) this.parts.dispatcher.abort(id, "cancelled");
  }

  /** Acts on one chunk and moves the cursor past what it looked at, in the caller's transaction. */
  private chunk(bulk: B.BulkRow, now: number, aborts: string[]): B.BulkRow {
    const filter = JSON.parse(bulk.filter) as BulkFilter;
    const upTo = Math.min(bulk.last_seq, bulk.cursor + BULK_SCAN);
    const jobs = this.sql.exec<B.ReachedJob>(B.CHUNK_SQL, bulk.cursor, upTo, filter.state ?? null, filter.outcome ?? null, filter.kind ?? null, filter.queue ?? null,
      filter.createdAfter ?? null, filter.createdBefore ?? null, BULK_CHUNK).toArray();
    const { done, skipped } = actOn(this.sql, this.parts, bulk, jobs, now, aborts);
    // A full chunk may leave matches before the scan's bound: the cursor stops at its last job.
    const cursor = jobs.length === BULK_CHUNK ? jobs.at(-1)!.seq : upTo;
    return this.sql.exec<B.BulkRow>(B.ADVANCE_BULK_SQL, bulk.id, cursor, done, skipped, cursor >= bulk.last_seq ? now : null).one();
  }

  private row(id: string): B.BulkRow | undefined {
    return this.sql.exec<B.BulkRow>(B.BULK_BY_ID_SQL, id).toArray()[0];
  }

  private memo(): { running: B.BulkRow | null; oldestFinished: number | null } {
    return (this.memory ??= {
      running: this.sql.exec<B.BulkRow>(B.RUNNING_BULK_SQL).toArray()[0] ?? null,
      oldestFinished: this.sql.exec<{ at: number | null }>(B.OLDEST_FINISHED_SQL).one().at,
    });
  }
}

function toBulk(row: B.BulkRow): Bulk {
  const finished = row.finished_at !== null;
  return {
    id: row.id, action: row.action, filter: JSON.parse(row.filter) as BulkFilter, state: finished ? "done" : "running",
    matched: finished ? row.done + row.skipped : null, done: row.done, skipped: row.skipped, createdAt: row.created_at, finishedAt: row.finished_at,
  };
}
