/**
 * The outbox (docs/api.md "Dependencies"): the notices this lane owes dependents, written by the
 * statement that settles a dependency (the triggers of migration 13), delivered by the alarm until
 * the receiving lane acknowledges each. Due notices are taken in hand (postponed by
 * `OUTBOX_IN_FLIGHT_MS`, so that a crash mid-delivery only delays them), grouped by receiving object
 * (a lane, or a shard `lane#i` of a sharded lane), at most `OUTBOX_BATCH` and about 4 MiB per call:
 * this object's own are applied here and now, others' go by one RPC per object. An acknowledged notice is deleted; one that failed, or that its receiver
 * asked to hear again, is due again after a backoff that doubles per failed try (jittered, capped).
 * The earliest due notice is a wake term.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import { MAX_PAGE_BYTES, OUTBOX_BACKOFF_BASE_MS, OUTBOX_BACKOFF_MAX_MS, OUTBOX_BATCH, OUTBOX_IN_FLIGHT_MS } from "../../shared/defaults.js";
import type { Result } from "../../shared/errors.js";
import type { Outcome } from "../../shared/job.js";
import { utf8Length } from "../../shared/json.js";
import { log } from "../../shared/log.js";
import * as D from "./dependency-statements.js";
import type { Notice, NoticeAnswer } from "./notices.js";

/** How many due notices one delivery takes in hand at most. */
const DELIVERY_LIMIT = 4 * OUTBOX_BATCH;

/** What a lane calls on another lane to tell it of settled dependencies (env.ts's `LanePeer`). */
export interface NoticePeer {
  notifyDependencies(notices: unknown): Promise<Result<NoticeAnswer[]>>;
}

export interface OutboxHost {
  /** The lane's name: what a notice names its dependency's lane. */
  readonly lane: string;
  /** This object's name (`lane#i` for shard i of a sharded lane): a dependent kept under it is told here and now. */
  readonly objectName: string;
  /** Applies notices for this lane's own dependents (dependencies.ts). */
  apply(notices: readonly Notice[]): NoticeAnswer[];
  peer(lane: string): NoticePeer;
  /** Keeps the object alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
  /** Rows changed (notices acknowledged or postponed, jobs released): flush. */
  changed(): void;
  /** Whether a settlement here may write notices (a job of this object has dependents: dependencies.ts). */
  mayNotify(): boolean;
}

type DueRow = { seq: number; dep_id: string; outcome: Outcome; error: string | null; generation: number; lane: string; id: string; attempts: number; result: string | null };

export class Outbox {
  private readonly sql: SqlStorage;
  /** Every notice call sent, and how many notices they carried (the benchmark's RPCs per notice). */
  readonly sent = { calls: 0, notices: 0 };

  constructor(
    storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly host: OutboxHost,
  ) {
    this.sql = storage.sql;
  }

  /**
   * When the next notice is due (null: none owed); the outbox's wake term, from the outbox's own rows
   * (one seek of `outbox_due`). Notices are written only by the settlement or deletion of a job that
   * has dependents, so once the rows read empty while no job here has dependents, none can appear
   * until one has: a lane without dependents reads it once an instance, not at every wake computation.
   * Never from the registrations alone: a purge deletes the last of them while notices are still owed.
   */
  nextAt(): number | null {
    if (this.knownEmpty && !this.host.mayNotify()) return null;
    const at = this.sql.exec<{ at: number | null }>(D.NEXT_NOTICE_SQL).one().at;
    this.knownEmpty = at === null && !this.host.mayNotify();
    return at;
  }

  /** The rows read empty while no job here had dependents (false: unknown, read them). */
  private knownEmpty = false;

  /**
   * Delivers the due notices: this lane's own at once, the others' by RPC, without waiting for their
   * answers (each answer acknowledges or postpones its notices, then flushes).
   */
  deliver(): void {
    const now = this.clock.now();
    const due = this.sql.exec<DueRow>(D.DUE_NOTICES_SQL, now, DELIVERY_LIMIT).toArray();
    if (due.length === 0) return;
    this.postpone(due.map((r) => r.seq), now + OUTBOX_IN_FLIGHT_MS, false);
    const byLane = new Map<string, DueRow[]>();
    for (const row of due) {
      let list = byLane.get(row.lane);
      if (!list) byLane.set(row.lane, (list = []));
      list.push(row);
    }
    for (const [lane, rows] of byLane) {
      for (const chunk of chunks(rows, noticeBytes)) {
        const notices = chunk.map((r) => noticeOf(r, this.host.lane));
        log({ event: "lane.outbox_sent", lane: this.host.lane, from: this.host.objectName, to: lane, keys: chunk.map((r) => r.seq), dependencies: chunk.map((r) => r.dep_id), dependents: chunk.map((r) => r.id) });
        if (lane === this.host.objectName) this.answered(chunk, this.host.apply(notices));
        else this.send(lane, chunk, notices);
      }
    }
  }

  private send(lane: string, rows: readonly DueRow[], notices: Notice[]): void {
    this.sent.calls++;
    this.sent.notices += notices.length;
    const delivery = this.host
      .peer(lane)
      .notifyDependencies(notices)
      .then(
        (answer) => {
          if (answer.ok) return this.answered(rows, answer.value);
          log({ event: "lane.outbox_failed", lane: this.host.lane, to: lane, notices: notices.length, message: `${answer.error.code}: ${answer.error.message}` });
          this.retry(rows);
        },
        (error: unknown) => {
          log({ event: "lane.outbox_failed", lane: this.host.lane, to: lane, notices: notices.length, message: describeError(error) });
          this.retry(rows);
        },
      )
      .finally(() => this.host.changed());
    this.host.waitUntil(delivery);
  }

  /** The receiver's answers: acknowledged notices go; `pending` ones come due again soon. */
  private answered(rows: readonly DueRow[], answers: readonly NoticeAnswer[]): void {
    log({ event: "lane.outbox_answered", lane: this.host.lane, from: this.host.objectName, to: rows[0]?.lane ?? "", keys: rows.map((r) => r.seq), answers: rows.map((_, i) => answers[i] ?? null) });
    const heard = (i: number) => answers[i] !== undefined && answers[i] !== "pending";
    const acked = rows.filter((_, i) => heard(i));
    const again = rows.filter((_, i) => !heard(i));
    if (acked.length > 0) this.sql.exec(D.ACK_NOTICES_SQL, JSON.stringify(acked.map((r) => r.seq)));
    if (again.length > 0) this.retry(again);
  }

  /** Due again after the backoff of the group's most tried notice. */
  private retry(rows: readonly DueRow[]): void {
    this.postpone(rows.map((r) => r.seq), this.clock.now() + noticeBackoffMs(rows, this.entropy.random()), true);
  }

  private postpone(seqs: readonly number[], until: number, counted: boolean): void {
    this.sql.exec(D.POSTPONE_NOTICES_SQL, JSON.stringify(seqs), until, counted ? 1 : 0);
  }
}

/** How long notices wait before their next try: the backoff of the group's most tried one, doubling per try (jittered by `random`, capped). */
export function noticeBackoffMs(rows: readonly { attempts: number }[], random: number): number {
  const tries = Math.max(...rows.map((r) => r.attempts));
  const backoff = Math.min(OUTBOX_BACKOFF_MAX_MS, OUTBOX_BACKOFF_BASE_MS * 2 ** Math.min(tries, 20));
  return Math.ceil(backoff * (0.5 + random / 2));
}

/** A due row as the notice its receiver reads. */
function noticeOf(row: DueRow, lane: string): Notice {
  return { key: row.seq, dependency: { lane, id: row.dep_id }, dependent: row.id, outcome: row.outcome, result: row.result, error: row.error, generation: row.generation };
}

/** About how many bytes a notice adds to its call. */
const noticeBytes = (row: DueRow) => 512 + (row.result === null ? 0 : utf8Length(row.result)) + (row.error === null ? 0 : utf8Length(row.error));

/** Rows in calls of at most `OUTBOX_BATCH` rows and about a page of bytes, each row `sizeOf` (never none): an outbox's calls. */
export function chunks<T>(rows: readonly T[], sizeOf: (row: T) => number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = sizeOf(row);
    if (current.length > 0 && (current.length >= OUTBOX_BATCH || bytes + size > MAX_PAGE_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(row);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}
