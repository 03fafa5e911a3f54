/**
 * The dead-letter outbox (docs/api.md "Dead letters"): the copies this lane owes its dead-letter
 * lanes, written by the statement that settles a job failed or interrupted while the lane names one
 * (the trigger of migration 28; one row per job and dead-letter lane while owed), delivered by the
 * alarm until the dead-letter lane has each. It runs as the dependencies' outbox does (deps/outbox.ts):
 * due copies are taken in hand (postponed by `OUTBOX_IN_FLIGHT_MS`, so that a crash mid-delivery only
 * delays them), grouped by dead-letter lane, at most `OUTBOX_BATCH` and about a page of bytes per call
 * (routed to the lane's shards by routing/dead-letter-routing.ts); a copy the lane has is deleted, in
 * one transaction with the count of copies made; one whose delivery failed is due again after a
 * backoff doubling per failed try. The receiving lane writes each id once, so a copy delivered twice
 * is still made once.
 *
 * What one delivery holds is bounded: it reads the due rows' sizes first and takes about
 * `DELIVERY_BYTES` of them (one copy at least, whatever its size), builds each call's copies only when
 * that call goes, and has at most `CALLS_IN_FLIGHT` calls under way; the rest wait for the next
 * delivery, which starts once this one is over. A payload held in R2 is read from the bucket when its
 * copy goes: the object outlives its job until then (payloads/payload-sweep.ts).
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { deadLetterId, MAX_DEAD_LETTER_ID_CHARS } from "../../shared/dead-letters.js";
import { describeError } from "../../shared/describe-error.js";
import { MAX_PAGE_BYTES, OUTBOX_BATCH, OUTBOX_IN_FLIGHT_MS } from "../../shared/defaults.js";
import type { Result } from "../../shared/errors.js";
import { log } from "../../shared/log.js";
import type { DeadLetterAnswer, DeadLetterCopy } from "../../routing/dead-letter-routing.js";
import { chunks, noticeBackoffMs } from "../deps/outbox.js";
import * as D from "./dead-letter-statements.js";

/** How many due rows one delivery reads the sizes of. */
const DELIVERY_ROWS = 4 * OUTBOX_BATCH;
/** Calls to dead-letter lanes one delivery has under way at once. */
const CALLS_IN_FLIGHT = 2;
/** About how many bytes of copies one delivery takes in hand: a page for each call under way. */
const DELIVERY_BYTES = CALLS_IN_FLIGHT * MAX_PAGE_BYTES;

export interface DeadLetterOutboxHost {
  /** The lane's name: what a copy's id and payload name. */
  readonly lane: string;
  /** The lane's dead-letter lane now (null: none), as its settings hold it in memory. */
  deadLetter(): string | null;
  /** Sends copies to a dead-letter lane (routing/dead-letter-routing.ts). */
  send(lane: string, copies: readonly DeadLetterCopy[]): Promise<Result<DeadLetterAnswer[]>>;
  /** The JSON text of a payload held in R2, by its key (null: not in the bucket). */
  payloadText(key: string): Promise<string | null>;
  /** Copies that held these objects were delivered, in the caller's transaction (payloads/payload-store.ts `releasedByCopies`). */
  released(keys: readonly string[]): void;
  /** Keeps the object alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
  /** Rows changed (copies acknowledged or postponed): flush. */
  changed(): void;
}

type DueRow = { seq: number; lane: string; id: string; tries: number; bytes: number };

export class DeadLetterOutbox {
  private readonly sql: SqlStorage;
  /** The rows read empty while the lane named no dead-letter lane (false: unknown, read them). */
  private knownEmpty = false;
  /** While a delivery is under way: the instant after which another may start all the same (its calls may hang). */
  private busyUntil: number | null = null;
  private deliveries = 0;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly host: DeadLetterOutboxHost,
  ) {
    this.sql = storage.sql;
  }

  /**
   * When the next copy is due (null: none owed); the outbox's wake term. Copies are written only
   * while the lane names a dead-letter lane, so once the rows read empty while it names none, none can
   * appear until it names one: a lane without one reads them once an instance, not at every wake.
   * While a delivery is under way, the next waits for it (its end flushes).
   */
  nextAt(): number | null {
    if (this.knownEmpty && this.host.deadLetter() === null) return null;
    const at = this.sql.exec<{ at: number | null }>(D.NEXT_DEAD_LETTER_SQL).one().at;
    this.knownEmpty = at === null && this.host.deadLetter() === null;
    return at === null || this.busyUntil === null ? at : Math.max(at, this.busyUntil);
  }

  /** Delivers a budget of due copies, without waiting for the answers (each acknowledges or postpones its copies; the delivery's end flushes). */
  deliver(): void {
    if (this.knownEmpty && this.host.deadLetter() === null) return;
    const now = this.clock.now();
    if (this.busyUntil !== null && now < this.busyUntil) return;
    const due = this.sql.exec<DueRow>(D.DUE_DEAD_LETTERS_SQL, now, DELIVERY_ROWS).toArray();
    let bytes = 0;
    let taken = 0;
    while (taken < due.length && (taken === 0 || bytes + due[taken]!.bytes <= DELIVERY_BYTES)) bytes += due[taken++]!.bytes;
    if (taken === 0) return;
    const rows = due.slice(0, taken);
    this.postpone(rows, now + OUTBOX_IN_FLIGHT_MS, false);
    const byLane = new Map<string, DueRow[]>();
    const tooLong: DueRow[] = [];
    for (const row of rows) {
      if (deadLetterId(this.host.lane, row.id).length > MAX_DEAD_LETTER_ID_CHARS) {
        tooLong.push(row);
        continue;
      }
      let list = byLane.get(row.lane);
      if (!list) byLane.set(row.lane, (list = []));
      list.push(row);
    }
    // A copy of a copy grows by a lane's name each time: past the bound (a cycle of dead-letter lanes
    // whose copies keep failing) it is dropped, logged, rather than copied forever.
    if (tooLong.length > 0) {
      log({ event: "lane.dead_letter_dropped", lane: this.host.lane, to: tooLong[0]!.lane, ids: tooLong.map((r) => r.id), message: `a copy's id would pass ${MAX_DEAD_LETTER_ID_CHARS} characters` });
      this.acknowledge(tooLong, new Set());
    }
    const calls: { lane: string; rows: DueRow[] }[] = [];
    for (const [lane, list] of byLane) for (const chunk of chunks(list, (r) => r.bytes)) calls.push({ lane, rows: chunk });
    if (calls.length === 0) return;
    const mine = ++this.deliveries;
    this.busyUntil = now + OUTBOX_IN_FLIGHT_MS;
    const delivery = this.run(calls).finally(() => {
      if (this.deliveries === mine) this.busyUntil = null;
      this.host.changed();
    });
    this.host.waitUntil(delivery);
  }

  /** The calls, at most `CALLS_IN_FLIGHT` under way at once. */
  private async run(calls: readonly { lane: string; rows: DueRow[] }[]): Promise<void> {
    let next = 0;
    const caller = async () => {
      while (next < calls.length) {
        const call = calls[next++]!;
        await this.send(call.lane, call.rows);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CALLS_IN_FLIGHT, calls.length) }, caller));
  }

  private async send(lane: string, taken: readonly DueRow[]): Promise<void> {
    let rows = taken;
    try {
      const built = await this.copies(taken);
      rows = built.rows;
      if (rows.length === 0) return;
      const answer = await this.host.send(lane, built.copies);
      if (answer.ok) this.answered(rows, answer.value);
      else this.failed(lane, rows, `${answer.error.code}: ${answer.error.message}`);
    } catch (error) {
      this.failed(lane, rows, describeError(error));
    }
  }

  /**
   * The copies of `rows` as they go, each payload whole: one held in R2 read from the bucket now. A row
   * gone meanwhile (acknowledged by an earlier delivery's late answer) is left out.
   */
  private async copies(rows: readonly DueRow[]): Promise<{ rows: DueRow[]; copies: DeadLetterCopy[] }> {
    const built = new Map<number, { held: string | null; copy: string }>();
    for (const row of this.sql.exec<{ seq: number; held: string | null; copy: string }>(D.COPIES_SQL, this.host.lane, JSON.stringify(rows.map((r) => r.seq)))) built.set(row.seq, row);
    const present = rows.filter((r) => built.has(r.seq));
    const copies = await Promise.all(
      present.map(async (row) => {
        const { held, copy } = built.get(row.seq)!;
        const id = deadLetterId(this.host.lane, row.id);
        if (held === null) return { id, payload: copy };
        const text = await this.host.payloadText(held);
        // Kept for the copy until it is delivered: missing, the bucket was changed behind the lane's back.
        if (text === null) log({ event: "lane.dead_letter_payload_missing", lane: this.host.lane, to: row.lane, id: row.id, message: `the object ${held} is missing from PAYLOADS: the copy says null` });
        return { id, payload: `${copy.slice(0, -1)},"payload":${text ?? "null"}}` };
      }),
    );
    return { rows: present, copies };
  }

  /** The dead-letter lane has every copy of `rows`: they go, and those it made (or had made from this very copy) count. */
  private answered(rows: readonly DueRow[], answers: readonly DeadLetterAnswer[]): void {
    this.acknowledge(rows, new Set(rows.filter((_, i) => answers[i] === "created" || answers[i] === "same").map((r) => r.seq)));
  }

  private acknowledge(rows: readonly DueRow[], made: ReadonlySet<number>): void {
    this.storage.transactionSync(() => {
      let counted = 0;
      const held: string[] = [];
      for (const row of this.sql.exec<{ seq: number; held: string | null }>(D.ACK_DEAD_LETTERS_SQL, JSON.stringify(rows.map((r) => r.seq)))) {
        if (made.has(row.seq)) counted++;
        if (row.held !== null) held.push(row.held);
      }
      if (counted > 0) this.sql.exec(D.COUNT_DEAD_LETTERED_SQL, counted);
      if (held.length > 0) this.host.released(held);
    });
  }

  /** Due again after the backoff of the group's most tried copy. */
  private failed(lane: string, rows: readonly DueRow[], message: string): void {
    log({ event: "lane.outbox_failed", lane: this.host.lane, to: lane, notices: rows.length, message });
    this.postpone(rows, this.clock.now() + noticeBackoffMs(rows.map((r) => ({ attempts: r.tries })), this.entropy.random()), true);
  }

  private postpone(rows: readonly DueRow[], until: number, counted: boolean): void {
    this.sql.exec(D.POSTPONE_DEAD_LETTERS_SQL, JSON.stringify(rows.map((r) => r.seq)), until, counted ? 1 : 0);
  }
}
