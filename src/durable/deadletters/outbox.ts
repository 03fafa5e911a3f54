/**
 * The dead-letter outbox (docs/api.md "Dead letters"): the copies this lane owes its dead-letter
 * lanes, written by the statement that settles a job failed or interrupted while the lane names one
 * (the trigger of migration 28), delivered by the alarm until the dead-letter lane has each. It runs
 * as the dependencies' outbox does (deps/outbox.ts): due copies are taken in hand (postponed by
 * `OUTBOX_IN_FLIGHT_MS`, so that a crash mid-delivery only delays them), grouped by dead-letter lane,
 * at most `OUTBOX_BATCH` and about a page of bytes per call (routed to the lane's shards by
 * routing/dead-letter-routing.ts); a copy the lane has is deleted, in one transaction with the count of
 * copies made; one whose delivery failed is due again after a backoff doubling per failed try. The
 * receiving lane writes each id once, so a copy delivered twice is still made once.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { deadLetterId, MAX_DEAD_LETTER_ID_CHARS } from "../../shared/dead-letters.js";
import { describeError } from "../../shared/describe-error.js";
import { OUTBOX_BATCH, OUTBOX_IN_FLIGHT_MS } from "../../shared/defaults.js";
import type { Result } from "../../shared/errors.js";
import { utf8Length } from "../../shared/json.js";
import { log } from "../../shared/log.js";
import type { DeadLetterAnswer, DeadLetterCopy } from "../../routing/dead-letter-routing.js";
import { chunks, noticeBackoffMs } from "../deps/outbox.js";
import * as D from "./dead-letter-statements.js";

/** How many due copies one delivery takes in hand at most. */
const DELIVERY_LIMIT = 4 * OUTBOX_BATCH;

export interface DeadLetterOutboxHost {
  /** The lane's name: what a copy's id and payload name. */
  readonly lane: string;
  /** The lane's dead-letter lane now (null: none), as its settings hold it in memory. */
  deadLetter(): string | null;
  /** Sends copies to a dead-letter lane (routing/dead-letter-routing.ts). */
  send(lane: string, copies: readonly DeadLetterCopy[]): Promise<Result<DeadLetterAnswer[]>>;
  /** Keeps the object alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
  /** Rows changed (copies acknowledged or postponed): flush. */
  changed(): void;
}

type DueRow = { seq: number; lane: string; id: string; tries: number; copy: string };

export class DeadLetterOutbox {
  private readonly sql: SqlStorage;
  /** The rows read empty while the lane named no dead-letter lane (false: unknown, read them). */
  private knownEmpty = false;

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
   */
  nextAt(): number | null {
    if (this.knownEmpty && this.host.deadLetter() === null) return null;
    const at = this.sql.exec<{ at: number | null }>(D.NEXT_DEAD_LETTER_SQL).one().at;
    this.knownEmpty = at === null && this.host.deadLetter() === null;
    return at;
  }

  /** Delivers the due copies, without waiting for the answers (each acknowledges or postpones its copies, then flushes). */
  deliver(): void {
    if (this.knownEmpty && this.host.deadLetter() === null) return;
    const now = this.clock.now();
    const due = this.sql.exec<DueRow>(D.DUE_DEAD_LETTERS_SQL, this.host.lane, now, DELIVERY_LIMIT).toArray();
    if (due.length === 0) return;
    this.postpone(due, now + OUTBOX_IN_FLIGHT_MS, false);
    const byLane = new Map<string, DueRow[]>();
    const tooLong: DueRow[] = [];
    for (const row of due) {
      if (deadLetterId(this.host.lane, row.id).length > MAX_DEAD_LETTER_ID_CHARS) {
        tooLong.push(row);
        continue;
      }
      let list = byLane.get(row.lane);
      if (!list) byLane.set(row.lane, (list = []));
      list.push(row);
    }
    if (tooLong.length > 0) {
      log({ event: "lane.dead_letter_dropped", lane: this.host.lane, to: tooLong[0]!.lane, ids: tooLong.map((r) => r.id), message: `a copy's id would pass ${MAX_DEAD_LETTER_ID_CHARS} characters` });
      this.sql.exec(D.ACK_DEAD_LETTERS_SQL, JSON.stringify(tooLong.map((r) => r.seq)));
    }
    for (const [lane, rows] of byLane) for (const chunk of chunks(rows, (r) => 256 + utf8Length(r.copy))) this.send(lane, chunk);
  }

  private send(lane: string, rows: readonly DueRow[]): void {
    const copies = rows.map((r) => ({ id: deadLetterId(this.host.lane, r.id), payload: r.copy }));
    const failed = (message: string) => {
      log({ event: "lane.outbox_failed", lane: this.host.lane, to: lane, notices: rows.length, message });
      this.retry(rows);
    };
    const delivery = Promise.resolve()
      .then(() => this.host.send(lane, copies))
      .then(
        (answer) => (answer.ok ? this.answered(rows, answer.value) : failed(`${answer.error.code}: ${answer.error.message}`)),
        (error: unknown) => failed(describeError(error)),
      )
      .finally(() => this.host.changed());
    this.host.waitUntil(delivery);
  }

  /** The dead-letter lane has every copy of `rows`: they go, and those it made (or had made from this very copy) count. */
  private answered(rows: readonly DueRow[], answers: readonly DeadLetterAnswer[]): void {
    const made = new Set(rows.filter((_, i) => answers[i] === "created" || answers[i] === "same").map((r) => r.seq));
    this.storage.transactionSync(() => {
      let counted = 0;
      for (const { seq } of this.sql.exec<{ seq: number }>(D.ACK_DEAD_LETTERS_SQL, JSON.stringify(rows.map((r) => r.seq)))) if (made.has(seq)) counted++;
      if (counted > 0) this.sql.exec(D.COUNT_DEAD_LETTERED_SQL, counted);
    });
  }

  /** Due again after the backoff of the group's most tried copy. */
  private retry(rows: readonly DueRow[]): void {
    this.postpone(rows, this.clock.now() + noticeBackoffMs(rows.map((r) => ({ attempts: r.tries })), this.entropy.random()), true);
  }

  private postpone(rows: readonly DueRow[], until: number, counted: boolean): void {
    this.sql.exec(D.POSTPONE_DEAD_LETTERS_SQL, JSON.stringify(rows.map((r) => r.seq)), until, counted ? 1 : 0);
  }
}
