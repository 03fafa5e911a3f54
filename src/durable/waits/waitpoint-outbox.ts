/**
 * The waitpoints' outbox: the notices this object owes jobs of other objects that wait on its
 * waitpoints (remote-waits.ts writes them in the settlement's transaction), delivered by the alarm
 * until each is acknowledged, as the jobs' outbox delivers its own (deps/outbox.ts): due notices are
 * taken in hand (postponed by `OUTBOX_IN_FLIGHT_MS`, so a crash mid-delivery only delays them),
 * grouped by receiving object, one RPC per object and batch; an acknowledged one is deleted and its
 * waitpoint told one fewer untold waiter; one that failed, or that its receiver asked to hear again,
 * is due again after a backoff doubling per failed try (jittered, capped). Its earliest due notice is
 * part of the waitpoints' wake term. Kept in memory once read, so that a lane whose waitpoints no one
 * elsewhere waits on reads its rows once an instance, not at every wake. The withdrawals this
 * object's jobs owe waitpoints elsewhere (withdrawals.ts) go with its deliveries and its term.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import type { Result } from "../../shared/errors.js";
import { OUTBOX_BATCH, OUTBOX_IN_FLIGHT_MS } from "../../shared/defaults.js";
import { log } from "../../shared/log.js";
import { noticeBackoffMs } from "../deps/outbox.js";
import type { Waitpoints } from "../waitpoints/waitpoints.js";
import * as R from "./remote-wait-statements.js";
import { DUE_WAITPOINT_NOTICES_SQL } from "./wait-statements.js";
import type { WaitpointNotice, WaitpointNoticeAnswer, WaitpointRegistration, WaitpointWaiterPeer } from "./waitpoint-notices.js";
import { mayWithdraw, Withdrawals } from "./withdrawals.js";

/** How many due notices one delivery takes in hand at most. */
const DELIVERY_LIMIT = 4 * OUTBOX_BATCH;

/** How long a completion waits at most for its waiters elsewhere to hear it before it answers (a slow lane's notice goes on meanwhile). */
export const TELL_NOW_MAX_MS = 2_000;

export interface WaitpointOutboxHost {
  /** The lane's name: what a notice names its waitpoint's lane. */
  readonly lane: string;
  /** This object's name: a waiter kept under it is told here and now. */
  readonly objectName: string;
  readonly waitpoints: Waitpoints;
  /** Applies notices for this object's own jobs (remote-waits.ts). */
  apply(notices: readonly WaitpointNotice[]): WaitpointNoticeAnswer[];
  peer(name: string): WaitpointWaiterPeer;
  /** Takes back registrations with waitpoints of `lane`, each what its own token registered (remote-waits.ts `unregisterWith`). */
  withdraw(lane: string, registrations: WaitpointRegistration[], token: string | null): Promise<Result<{ removed: number }>>;
  waitUntil(promise: Promise<unknown>): void;
  /** Rows changed (notices acknowledged or postponed, jobs released): flush. */
  changed(): void;
}

type DueRow = { seq: number; waitpoint: string; outcome: "completed" | "timedOut"; lane: string; id: string; attempts: number; result: string | null };

export class WaitpointOutbox {
  private readonly sql: SqlStorage;
  /** The earliest due notice as the rows last said (undefined: not read since the last change). */
  private next: number | null | undefined = undefined;
  private readonly withdrawals: Withdrawals;
  /** How long a caller's answer waits for its tell (`TELL_NOW_MAX_MS`; a test that holds a delivery raises it). */
  tellNowMaxMs = TELL_NOW_MAX_MS;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly host: WaitpointOutboxHost,
  ) {
    this.sql = storage.sql;
    this.withdrawals = new Withdrawals(storage, clock, entropy, {
      lane: host.lane, objectName: host.objectName, withdraw: (lane, registrations) => host.withdraw(lane, registrations, null),
      waitUntil: (promise) => host.waitUntil(promise), changed: () => host.changed(),
    });
  }

  /** When the next notice or withdrawal is due (null: none owed). */
  nextAt(): number | null {
    if (this.next === undefined) this.next = this.sql.exec<{ at: number | null }>(R.NEXT_WAITPOINT_NOTICE_SQL).one().at;
    const notice = this.next === null ? null : Math.max(this.clock.now(), this.next);
    const withdrawal = this.withdrawals.nextAt();
    return notice === null ? withdrawal : withdrawal === null ? notice : Math.min(notice, withdrawal);
  }

  /** Notices were written or changed: the term is read again. */
  changed(): void {
    this.next = undefined;
  }

  /** Settlements wrote notices since the last delivery (in memory: a new instance leaves them to the alarm). */
  private owed = false;

  /** A settlement wrote notices: `tellNow` delivers them. */
  noticesOwed(): void {
    this.owed = true;
    this.changed();
  }

  /**
   * The notices a settlement just wrote, delivered before its caller is answered, so that a
   * completion's waiters elsewhere have heard it once it answers (as its waiters here have), or
   * `TELL_NOW_MAX_MS` passed; what fails is retried by the alarm. Null when none was written.
   */
  tellNow(): Promise<void> | null {
    if (!this.owed) return null;
    this.owed = false;
    return this.bounded(() => this.deliver());
  }

  /**
   * The withdrawals a change just wrote (a cancel, a purge, the lane's fail: the triggers of migration
   * 26), delivered before its caller is answered, so that the waitpoints' `waiters` no longer count
   * those jobs once it answers, or `TELL_NOW_MAX_MS` passed; what fails is retried by the alarm. Null
   * when none is due (a lane whose jobs never registered elsewhere reads nothing).
   */
  withdrawNow(): Promise<void> | null {
    if (!mayWithdraw(this.sql)) return null;
    const at = this.withdrawals.nextAt();
    if (at === null || at > this.clock.now()) return null;
    return this.bounded(() => this.withdrawals.deliver());
  }

  /** `deliver` awaited at most `TELL_NOW_MAX_MS`, and never a throw into the caller's answer: its change is committed, and the alarm retries. */
  private bounded(deliver: () => Promise<void>): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.tellNowMaxMs)));
    const delivered = Promise.resolve().then(deliver).catch((error: unknown) => {
      log({ event: "waitpoint.tell_failed", lane: this.host.lane, message: describeError(error) });
    });
    return Promise.race([delivered, bound]).finally(() => clearTimeout(timer));
  }

  /**
   * Delivers the due notices (this object's own at once, others' by RPC) and withdrawals; resolves
   * once every call is answered (the alarm does not wait: each answer acknowledges or postpones its
   * rows, then flushes).
   */
  deliver(): Promise<void> {
    return Promise.all([this.deliverNotices(), this.withdrawals.deliver()]).then(() => undefined);
  }

  private deliverNotices(): Promise<void> {
    this.owed = false;
    if (this.next === null) return Promise.resolve();
    const now = this.clock.now();
    const due = this.sql.exec<DueRow>(DUE_WAITPOINT_NOTICES_SQL, now, DELIVERY_LIMIT).toArray();
    if (due.length === 0) return Promise.resolve();
    const sent: Promise<void>[] = [];
    this.postpone(due.map((r) => r.seq), now + OUTBOX_IN_FLIGHT_MS, false);
    const byObject = new Map<string, DueRow[]>();
    for (const row of due) {
      let list = byObject.get(row.lane);
      if (!list) byObject.set(row.lane, (list = []));
      list.push(row);
    }
    for (const [object, rows] of byObject) {
      for (let at = 0; at < rows.length; at += OUTBOX_BATCH) {
        const chunk = rows.slice(at, at + OUTBOX_BATCH);
        const notices = chunk.map((r): WaitpointNotice => ({ key: r.seq, waitpoint: { lane: this.host.lane, waitpoint: r.waitpoint }, waiter: r.id, outcome: r.outcome, result: r.result }));
        if (object === this.host.objectName) this.answered(chunk, this.host.apply(notices));
        else sent.push(this.send(object, chunk, notices));
      }
    }
    return Promise.all(sent).then(() => undefined);
  }

  private send(object: string, rows: readonly DueRow[], notices: WaitpointNotice[]): Promise<void> {
    const failed = (message: string) => {
      log({ event: "lane.outbox_failed", lane: this.host.lane, to: object, notices: notices.length, message });
      this.retry(rows);
    };
    const delivery = this.host
      .peer(object)
      .notifyWaitpointWaiters(notices)
      .then(
        (answer) => (answer.ok ? this.answered(rows, answer.value) : failed(`${answer.error.code}: ${answer.error.message}`)),
        (error: unknown) => failed(describeError(error)),
      )
      .finally(() => this.host.changed());
    this.host.waitUntil(delivery);
    return delivery;
  }

  /** The receiver's answers: acknowledged notices go (their waitpoints told one fewer untold); `pending` ones come due again soon. */
  private answered(rows: readonly DueRow[], answers: readonly WaitpointNoticeAnswer[]): void {
    const heard = (i: number) => answers[i] !== undefined && answers[i] !== "pending";
    const acked = rows.filter((_, i) => heard(i));
    const again = rows.filter((_, i) => !heard(i));
    if (acked.length > 0) {
      this.storage.transactionSync(() => {
        const told = new Map<string, number>();
        for (const { waitpoint } of this.sql.exec<{ waitpoint: string }>(R.ACK_WAITPOINT_NOTICES_SQL, JSON.stringify(acked.map((r) => r.seq)))) told.set(waitpoint, (told.get(waitpoint) ?? 0) + 1);
        for (const [id, n] of told) this.host.waitpoints.releaseUntold(id, n);
      });
      this.changed();
    }
    if (again.length > 0) this.retry(again);
  }

  /** Due again after the backoff of the group's most tried notice. */
  private retry(rows: readonly DueRow[]): void {
    this.postpone(rows.map((r) => r.seq), this.clock.now() + noticeBackoffMs(rows, this.entropy.random()), true);
  }

  private postpone(seqs: readonly number[], until: number, counted: boolean): void {
    this.sql.exec(R.POSTPONE_WAITPOINT_NOTICES_SQL, JSON.stringify(seqs), until, counted ? 1 : 0);
    this.changed();
  }
}
