/**
 * A job's event log (docs/api.md "Results"): read a page after a seq, and write an attempt's chunks
 * through the fence within the job's limits. Transitions and progress need nothing here: the
 * triggers of migration 24 write them in the statement that changes the job, so a job that nobody
 * streams pays no statement for its log; deleting a job deletes its log, whatever deletes it.
 */
import type { Clock } from "../../shared/clock.js";
import { MAX_STREAM_BYTES_PER_JOB, MAX_STREAM_CHUNKS_PER_JOB } from "../../shared/defaults.js";
import { fail, ok, type ErrorBody, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { utf8Length } from "../../shared/json.js";
import type { StoredStreamEvent, StreamPage, StreamWritten } from "../../shared/stream.js";
import type { FenceOp } from "../attempts/fence.js";
import * as Q from "./stream-statements.js";

/** How many events a page holds at most (a stream holds about 1,200 at most: 1,000 chunks, 100 progress, transitions). */
export const STREAM_PAGE_EVENTS = 500;

export interface StreamLogOptions {
  lane: string;
  /** The fence refused a write: why (and, for the holder of a cancel-requested job, its settlement). */
  missed(id: string, token: string, op: FenceOp): Result<unknown>;
  /** The job as it stands (for the `end` event). */
  job(id: string): Job | null;
  /** Chunks were written: held readers may have something new. */
  written(): void;
}

type JobHead = { seq: number; state: string; blocked: number; outcome: string | null; created_at: number };

type EventRow = {
  seq: number;
  type: StoredStreamEvent["type"];
  at: number;
  attempt: number | null;
  from_state: string | null;
  to_state: string | null;
  outcome: string | null;
  data: string | null;
};

/** An event's one-line JSON, built from its columns and the stored JSON text (nothing parsed). */
function eventData(row: EventRow): string {
  if (row.type === "transition") return JSON.stringify({ from: row.from_state, to: row.to_state, outcome: row.outcome, attempt: row.attempt, at: row.at });
  if (row.type === "progress") return `{"progress":${row.data},"at":${row.at}}`;
  return `{"data":${row.data},"attempt":${row.attempt},"at":${row.at}}`;
}

export class StreamLog {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly options: StreamLogOptions,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Writes `chunks` (each one's JSON text) for the attempt holding `token`, all or none, in one
   * transaction: refused by the fence (the token kept otherwise, as progress keeps it) or by the
   * job's limits (`stream_limit`: nothing written).
   */
  write(id: string, token: string, chunks: readonly string[]): Result<StreamWritten> {
    const now = this.clock.now();
    let bytes = 0;
    for (const chunk of chunks) bytes += utf8Length(chunk);
    const answer = this.storage.transactionSync((): Result<StreamWritten> | null => {
      const writer = this.sql.exec<{ seq: number; attempts: number; chunks: number; bytes: number }>(Q.STREAM_WRITER_SQL, id, token, now).toArray()[0];
      if (!writer) return null;
      if (writer.chunks + chunks.length > MAX_STREAM_CHUNKS_PER_JOB || writer.bytes + bytes > MAX_STREAM_BYTES_PER_JOB) {
        return fail(
          "stream_limit",
          `writing ${chunks.length} chunk(s) of ${bytes} bytes would take the stream of job ${id} past ${MAX_STREAM_CHUNKS_PER_JOB} chunks or ${MAX_STREAM_BYTES_PER_JOB} bytes (it holds ${writer.chunks} chunks, ${writer.bytes} bytes)`,
        );
      }
      const seqs = this.sql.exec<{ seq: number }>(Q.INSERT_CHUNKS_SQL, writer.seq, now, writer.attempts, JSON.stringify(chunks)).toArray();
      this.sql.exec(Q.COUNT_CHUNKS_SQL, writer.seq, chunks.length, bytes);
      return ok({ written: chunks.length, lastEventId: Math.max(...seqs.map((r) => r.seq)) });
    });
    // The fence's answer outside the transaction: for a cancel-requested job it settles the job.
    if (answer === null) return this.refused(id, token);
    if (answer.ok) this.options.written();
    return answer;
  }

  /** The job's seq (its log's key) and whether it is settled; null for an unknown job. */
  locate(id: string): { seq: number; settled: boolean } | null {
    const row = this.jobRow(id);
    return row ? { seq: row.seq, settled: row.state === "settled" } : null;
  }

  /** Whether a reader after `after` has something: an event past it, or the job settled (null: the job is gone). */
  ready(seq: number, after: number): boolean | null {
    const head = this.sql.exec<{ state: string; last: number }>(Q.STREAM_HEAD_SQL, seq).toArray()[0];
    if (!head) return null;
    return head.last > after || head.state === "settled";
  }

  private jobRow(id: string): JobHead | undefined {
    return this.sql.exec<JobHead>(Q.STREAM_JOB_SQL, id).toArray()[0];
  }

  /**
   * The events an insert made, which no statement stores (an enqueue writes no event row): seq 1, the
   * enqueue, from null to the state its first stored transition left (or the job's state now, when
   * none is stored); and for a job inserted running (started in its enqueue's turn), seq 2, its claim,
   * at the same instant. A job settled in its enqueue was failed by a dependency (docs/api.md
   * "Dependencies").
   */
  private inserted(job: JobHead): StoredStreamEvent[] {
    const first = this.sql.exec<{ from_state: string }>(Q.FIRST_TRANSITION_SQL, job.seq).toArray()[0]?.from_state;
    const state = first ?? (job.state === "queued" && job.blocked > 0 ? "blocked" : job.state);
    const transition = (seq: number, from: string | null, to: string, outcome: string | null, attempt: number): StoredStreamEvent => ({
      seq, type: "transition", data: JSON.stringify({ from, to, outcome, attempt, at: job.created_at }),
    });
    if (state === "running") return [transition(1, null, "queued", null, 0), transition(2, "queued", "running", null, 1)];
    return [transition(1, null, state, state !== "settled" ? null : first === undefined ? job.outcome : "failed", 0)];
  }

  /**
   * A page of job `id`'s events after `after`, and the job itself when it is settled and the page
   * holds its last event (the stream's `end`). The events and the state are read in one synchronous
   * stretch, so a settled job's last transition is in the page that ends it.
   */
  page(id: string, after: number): Result<StreamPage> {
    const job = this.jobRow(id);
    if (!job) return fail("job_not_found", `no job ${id} in lane ${this.options.lane}`);
    const rows = this.sql.exec<EventRow>(Q.STREAM_EVENTS_SQL, job.seq, after, STREAM_PAGE_EVENTS + 1).toArray();
    const more = rows.length > STREAM_PAGE_EVENTS;
    const events = rows.slice(0, STREAM_PAGE_EVENTS).map((row) => ({ seq: row.seq, type: row.type, data: eventData(row) }));
    if (after < 2) events.unshift(...this.inserted(job).filter((e) => e.seq > after));
    const end = job.state === "settled" && !more ? this.options.job(id) : null;
    return ok({ events, end });
  }

  private refused(id: string, token: string): { ok: false; error: ErrorBody } {
    const missed = this.options.missed(id, token, "progress");
    return missed.ok ? fail("internal", "a stream write cannot be a repeat") : missed;
  }
}
