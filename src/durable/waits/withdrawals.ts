/**
 * The waiter's side of a registration that is no longer needed: a job of this object registered with
 * a waitpoint of another object (remote-waits.ts) stops waiting without hearing it (cancelled,
 * expired, failed, deleted). The statement that settles or deletes it writes a withdrawal (the
 * triggers of migration 26, whatever path it took), which this delivers as the waitpoints' outbox
 * delivers its notices (waitpoint-outbox.ts): taken in hand, grouped by waitpoint lane, one call per
 * lane and batch, each registration with its own token; acknowledged only once every shard it went to
 * took it (routing/registrations.ts), it goes; failed, it is due again after a backoff. The
 * waitpoint's object takes back what that token holds of that job alone
 * (`unregisterWaitpointWaiters`), so a withdrawal applied twice, or after the waitpoint settled, or
 * after the job was enqueued again under its id and registered anew, changes nothing more.
 *
 * A lane whose jobs never registered elsewhere reads nothing here: whether any did is read once an
 * instance and kept (set when a registration is written), as the upkeep's switches are.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import { OUTBOX_BATCH, OUTBOX_IN_FLIGHT_MS } from "../../shared/defaults.js";
import type { Result } from "../../shared/errors.js";
import { log } from "../../shared/log.js";
import { noticeBackoffMs } from "../deps/outbox.js";
import * as R from "./remote-wait-statements.js";
import type { WaitpointRegistration } from "./waitpoint-notices.js";

/** How many due withdrawals one delivery takes in hand at most. */
const DELIVERY_LIMIT = 4 * OUTBOX_BATCH;

const registered = new WeakMap<SqlStorage, boolean>();

/** Whether a job of this database may hold a registration elsewhere, or a withdrawal be owed. */
export function mayWithdraw(sql: SqlStorage): boolean {
  let any = registered.get(sql);
  if (any === undefined) registered.set(sql, (any = sql.exec(R.ANY_REGISTERED_SQL).toArray().length > 0));
  return any;
}

/** Job `seq` holds a registration elsewhere (written in its transaction): its end unheard owes a withdrawal. */
export function registeredElsewhere(sql: SqlStorage, seq: number): void {
  sql.exec(R.MARK_REMOTE_WAITS_SQL, seq);
  registered.set(sql, true);
}

export interface WithdrawalsHost {
  /** The lane's name. */
  readonly lane: string;
  /** This object's name: the waiter's object its registrations name. */
  readonly objectName: string;
  /** Takes back registrations with waitpoints of `lane`, each what its own token registered (this lane: routed among its shards). */
  withdraw(lane: string, registrations: WaitpointRegistration[]): Promise<Result<{ removed: number }>>;
  waitUntil(promise: Promise<unknown>): void;
  /** Rows changed (withdrawals acknowledged or postponed): flush. */
  changed(): void;
}

type DueRow = { seq: number; lane: string; waitpoint: string; id: string; token: string; attempts: number };

export class Withdrawals {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly host: WithdrawalsHost,
  ) {
    this.sql = storage.sql;
  }

  /**
   * When the next withdrawal is due (null: none owed). Read from the rows at each wake computation of
   * a lane whose jobs registered elsewhere (one seek): the triggers write them behind this object's back.
   */
  nextAt(): number | null {
    if (!mayWithdraw(this.sql)) return null;
    const at = this.sql.exec<{ at: number | null }>(R.NEXT_WITHDRAWAL_SQL).one().at;
    return at === null ? null : Math.max(this.clock.now(), at);
  }

  /** Delivers the due withdrawals; resolves once every call is answered. */
  deliver(): Promise<void> {
    if (!mayWithdraw(this.sql)) return Promise.resolve();
    const now = this.clock.now();
    const due = this.sql.exec<DueRow>(R.DUE_WITHDRAWALS_SQL, now, DELIVERY_LIMIT).toArray();
    if (due.length === 0) return Promise.resolve();
    this.postpone(due, now + OUTBOX_IN_FLIGHT_MS, false);
    const groups = new Map<string, DueRow[]>();
    for (const row of due) {
      let list = groups.get(row.lane);
      if (!list) groups.set(row.lane, (list = []));
      list.push(row);
    }
    const sent: Promise<void>[] = [];
    for (const rows of groups.values()) {
      for (let at = 0; at < rows.length; at += OUTBOX_BATCH) sent.push(this.send(rows.slice(at, at + OUTBOX_BATCH)));
    }
    return Promise.all(sent).then(() => undefined);
  }

  private send(rows: readonly DueRow[]): Promise<void> {
    const { lane } = rows[0]!;
    const registrations = rows.map((r): WaitpointRegistration => ({ id: r.waitpoint, waiter: { lane: this.host.objectName, id: r.id }, token: r.token }));
    const failed = (message: string) => {
      log({ event: "lane.outbox_failed", lane: this.host.lane, to: lane, notices: rows.length, message });
      this.postpone(rows, this.clock.now() + noticeBackoffMs(rows, this.entropy.random()), true);
    };
    // A call that throws at once is a failed delivery like any other: the wake tries again.
    const delivery = Promise.resolve()
      .then(() => this.host.withdraw(lane, registrations))
      .then(
        (answer) => {
          if (answer.ok) this.sql.exec(R.ACK_WITHDRAWALS_SQL, JSON.stringify(rows.map((r) => r.seq)));
          else failed(`${answer.error.code}: ${answer.error.message}`);
        },
        (error: unknown) => failed(describeError(error)),
      )
      .finally(() => this.host.changed());
    this.host.waitUntil(delivery);
    return delivery;
  }

  private postpone(rows: readonly DueRow[], until: number, counted: boolean): void {
    this.sql.exec(R.POSTPONE_WITHDRAWALS_SQL, JSON.stringify(rows.map((r) => r.seq)), until, counted ? 1 : 0);
  }
}
