/**
 * Jobs that wait on a waitpoint of another object: another lane, or another shard of a sharded lane,
 * whose waitpoints live in the shard their id hashes to (docs/api.md "Waitpoints"). As a job's
 * dependencies on jobs of other lanes do (deps/dependencies.ts):
 * - the waiter's side registers the job with the waitpoint's object before it writes (which proves the
 *   waitpoint exists, or creates it pending for an attempt's wait, and answers how it stands); the
 *   registrations of an enqueue that wrote nothing are withdrawn by its token;
 * - the waitpoint's side keeps the registrations (`waitpoint_waiters`, counted in its `waiters`), and
 *   its settlement turns them into notices of its outbox in the same transaction (waitpoint-outbox.ts
 *   delivers them), the waitpoint held from retention and sweep until each is acknowledged;
 * - the waiter's side, told, applies each notice at most once to its job's waits.
 * A registration is routed among the waitpoint lane's shards by routing/registrations.ts, each
 * waitpoint held by its id's shard.
 */
import type { Clock } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import { fail, type Result } from "../../shared/errors.js";
import type { DependsOnItem, WaitpointRef } from "../../shared/job.js";
import { shardOf } from "../../shared/shards.js";
import type { Waitpoint } from "../../shared/waitpoint.js";
import { registerAmongShards, unregisterAmongShards, type RegisteringShard, type RegistrationPeer } from "../../routing/registrations.js";
import type { JobRow } from "../store/job-row.js";
import type { Waitpoints } from "../waitpoints/waitpoints.js";
import { isWaitpointRef, timedOutError, type WaitOutcome } from "./depends-on-waits.js";
import * as R from "./remote-wait-statements.js";
import { FIRST_ATTEMPT_WAIT } from "./wait-statements.js";
import type { Registered, WaitpointNotice, WaitpointNoticeAnswer, WaitpointRegistration, WaitpointRegistrationAnswer, WaitpointWaiterPeer, WaitRegistrations } from "./waitpoint-notices.js";

export type { Registered, WaitRegistrations };

export interface RemoteWaitsHost {
  /** The lane's name. */
  readonly lane: string;
  /** This object's name (`lane#i` for shard i of a sharded lane): where its jobs' notices come. */
  readonly objectName: string;
  readonly shard: { readonly index: number; count(): number };
  readonly waitpoints: Waitpoints;
  /** A job of this object by id. */
  row(id: string): JobRow | undefined;
  /** Whether job `id`'s enqueue or wait is between its registration and its write (deps/dependencies.ts `isPending`). */
  isPending(id: string): boolean;
  /** A job heard of something it waits for (deps/dependencies.ts `heard`). */
  heard(row: JobRow, failure: string | null, now: number): void;
  /** The object of that name (a lane, or a shard `lane#i`). */
  peer(name: string): WaitpointWaiterPeer;
  /** Notices were written into the waitpoints' outbox (its term is read again). */
  owed(): void;
}

/** A waitpoint item's key in maps: its lane and id. */
export const waitKey = (ref: WaitpointRef) => `${ref.lane}\u0000${ref.waitpoint}`;

/** How a remote waitpoint stood when its waiter registered: settled (how), or pending (outcome null). */
export type RemoteState = { outcome: WaitOutcome | null; result: string | null };

const remoteMay = new WeakMap<SqlStorage, boolean>();

export class RemoteWaits {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly host: RemoteWaitsHost,
  ) {
    this.sql = storage.sql;
  }

  /** Whether waitpoint `ref` lives in this object (its lane's, on its id's shard). */
  here(ref: WaitpointRef): boolean {
    if (ref.lane !== this.host.lane) return false;
    const shards = this.host.shard.count();
    return shards === 1 || shardOf(ref.waitpoint, shards) === this.host.shard.index;
  }

  // ---- the waiter's side ----

  /** The registrations the waitpoint items of `specs` elsewhere call for, by lane. */
  registrationsOf(specs: readonly { id: string; items: readonly DependsOnItem[] }[]): WaitRegistrations {
    const byLane: WaitRegistrations = new Map();
    for (const { id, items } of specs) {
      for (const item of items) {
        if (!isWaitpointRef(item) || this.here(item)) continue;
        let list = byLane.get(item.lane);
        if (!list) byLane.set(item.lane, (list = []));
        list.push({ id: item.waitpoint, waiter: { lane: this.host.objectName, id } });
      }
    }
    return byLane;
  }

  /** The registrations of attempts' waits on waitpoints of this lane elsewhere (each created pending, timing out in `timeoutMs`, when missing). */
  attemptRegistrations(waits: readonly { id: string; waitpoint: string; timeoutMs?: number }[]): WaitRegistrations {
    const list = waits.map(({ id, waitpoint, timeoutMs }) => ({ id: waitpoint, waiter: { lane: this.host.objectName, id }, create: { timeoutMs: timeoutMs ?? null } }));
    return list.length === 0 ? new Map() : new Map([[this.host.lane, list]]);
  }

  /** Registers `byLane` with the waitpoints' objects under `token`, one call per lane: what each said (`known` carries the token, which the waits written keep). */
  async register(byLane: WaitRegistrations, token: string): Promise<Registered> {
    const known = Object.assign(new Map<string, Waitpoint>(), { token });
    const missing: WaitpointRef[] = [];
    let refusal: Result<never> | null = null;
    const answers = await Promise.all(
      [...byLane].map(async ([lane, registrations]) => ({
        lane,
        registrations,
        answer: await this.registerWith(lane, registrations, token).catch((error: unknown) => fail("lane_unavailable", `registering with lane ${lane} failed: ${describeError(error)}`)),
      })),
    );
    for (const { lane, registrations, answer } of answers) {
      if (!answer.ok) {
        refusal ??= answer;
        continue;
      }
      registrations.forEach((r, i) => {
        const said = answer.value[i];
        const ref = { lane, waitpoint: r.id };
        if (!said || said.status === "missing") missing.push(ref);
        else known.set(waitKey(ref), said.waitpoint);
      });
    }
    return { known, missing, refusal };
  }

  /** Withdraws what `token` registered (an enqueue or wait that wrote nothing); a call that fails leaves a registration whose notice finds no wait, and is dropped. */
  async withdraw(byLane: WaitRegistrations, token: string): Promise<void> {
    await Promise.all([...byLane].map(([lane, registrations]) => (lane === this.host.lane ? this.unregisterInLane(registrations, 0, token) : this.host.peer(lane).unregisterWaitpointWaiters(registrations, 0, token)).catch(() => undefined)));
  }

  /**
   * Takes back registrations with waitpoints of `lane`, each what its own `token` (else `token`)
   * registered (jobs that stopped waiting: withdrawals.ts), routed as `register` routed them: one call
   * for the lane, whatever their tokens.
   */
  unregisterWith(lane: string, registrations: WaitpointRegistration[], token: string | null): Promise<Result<{ removed: number }>> {
    return lane === this.host.lane ? this.unregisterInLane(registrations, 0, token) : this.host.peer(lane).unregisterWaitpointWaiters(registrations, 0, token ?? undefined);
  }

  private registerWith(lane: string, registrations: WaitpointRegistration[], token: string): Promise<Result<WaitpointRegistrationAnswer[]>> {
    return lane === this.host.lane ? this.registerInLane(registrations, 0, token) : this.host.peer(lane).registerWaitpointWaiters(registrations, 0, token);
  }

  /**
   * Applies notices in one transaction, each at most once: every wait of the job on the waitpoint not
   * yet told hears it (a `dependsOn` item timed out fails its job under policy fail; an attempt's wait
   * never does). Answers what became of each.
   */
  apply(notices: readonly WaitpointNotice[]): WaitpointNoticeAnswer[] {
    const now = this.clock.now();
    return this.storage.transactionSync(() => notices.map((notice) => this.applyOne(notice, now)));
  }

  private applyOne(notice: WaitpointNotice, now: number): WaitpointNoticeAnswer {
    const { lane, waitpoint } = notice.waitpoint;
    const row = this.host.row(notice.waiter);
    if (!row) return this.host.isPending(notice.waiter) ? "pending" : "gone";
    const result = notice.outcome === "completed" ? notice.result : null;
    const told = this.sql.exec<{ position: number }>(R.TELL_JOB_WAITS_SQL, row.seq, lane, waitpoint, notice.outcome, result, now).toArray();
    if (told.length === 0) {
      // Its wait may be on its way (a wait between its registration and its write): hear it again later.
      if (this.host.isPending(notice.waiter)) return "pending";
      return this.sql.exec(R.KNOWN_JOB_WAIT_SQL, row.seq, lane, waitpoint).toArray().length > 0 ? "repeat" : "gone";
    }
    this.sql.exec(R.UNMARK_REMOTE_WAITS_SQL, row.seq);
    told.forEach(({ position }, i) => {
      const failure = notice.outcome === "timedOut" && position < FIRST_ATTEMPT_WAIT ? timedOutError(notice.waitpoint) : null;
      // Read again after the first: hearing changed the row.
      const current = i === 0 ? row : this.host.row(notice.waiter);
      if (current) this.host.heard(current, failure, now);
    });
    return "applied";
  }

  // ---- the waitpoint's side ----

  /** Registrations with waitpoints of this lane, routed among its shards to each waitpoint's own. */
  registerInLane(registrations: readonly WaitpointRegistration[], hop: number, token: string | null): Promise<Result<WaitpointRegistrationAnswer[]>> {
    return registerAmongShards(this.asShard(token), registrations, hop, token);
  }

  unregisterInLane(registrations: readonly WaitpointRegistration[], hop: number, token: string | null): Promise<Result<{ removed: number }>> {
    return unregisterAmongShards(this.asShard(token), registrations, hop, token);
  }

  private asShard(token: string | null): RegisteringShard<WaitpointRegistration, WaitpointRegistrationAnswer> {
    const { lane, shard } = this.host;
    return {
      lane,
      index: shard.index,
      count: () => shard.count(),
      // A waitpoint is its id's shard's, never reserved elsewhere.
      holds: (id) => shard.count() === 1 || shardOf(id, shard.count()) === shard.index,
      reservedFor: () => null,
      register: (registrations) => this.registerHere(registrations, token),
      unregister: (registrations) => this.unregisterHere(registrations, token),
      peer: (name) => this.shardPeer(name),
    };
  }

  private shardPeer(name: string): RegistrationPeer<WaitpointRegistrationAnswer> {
    const stub = this.host.peer(name);
    return {
      registerDependents: (registrations, hop, token) => stub.registerWaitpointWaiters(registrations, hop, token),
      unregisterDependents: (registrations, hop, token) => stub.unregisterWaitpointWaiters(registrations, hop, token),
    };
  }

  /**
   * Registrations with waitpoints of this object, in one transaction: a pending one keeps its waiter
   * (its settlement will tell it), a settled one answers how (that is its notice), a missing one is
   * created pending when the registration says so (an attempt's wait), else answers `missing`.
   */
  registerHere(registrations: readonly WaitpointRegistration[], token: string | null): WaitpointRegistrationAnswer[] {
    const now = this.clock.now();
    const { waitpoints } = this.host;
    return this.storage.transactionSync(() => {
      const found = registrations.map((r) => {
        const got = waitpoints.get(r.id);
        if (got.ok) return got.value;
        return r.create ? waitpoints.create(r.id, r.create.timeoutMs ?? undefined).waitpoint : null;
      });
      registrations.forEach((r, i) => {
        if (found[i]?.state !== "pending") return;
        this.sql.exec(R.REGISTER_WAITER_SQL, r.id, r.waiter.lane, r.waiter.id, now, token);
        remoteMay.set(this.sql, true);
      });
      return found.map((waitpoint): WaitpointRegistrationAnswer => (waitpoint ? { status: "found", waitpoint: { ...waitpoint, waiters: this.host.waitpoints.waiters.count(waitpoint.id) } } : { status: "missing" }));
    });
  }

  /** What each registration's token (else `token`) registered here, withdrawn (a row goes with its last owner; one held for good stays). */
  unregisterHere(registrations: readonly WaitpointRegistration[], token: string | null): number {
    let removed = 0;
    this.storage.transactionSync(() => {
      for (const r of registrations) {
        const owner = r.token ?? token;
        if (owner === null || this.sql.exec(R.UNREGISTER_WAITER_SQL, r.id, r.waiter.lane, r.waiter.id, owner).toArray().length === 0) continue;
        removed++;
        this.sql.exec(R.DROP_UNOWNED_WAITER_SQL, r.id, r.waiter.lane, r.waiter.id);
      }
    });
    return removed;
  }

  /**
   * Waitpoint `waitpoint` settled, inside its transaction: each waiter elsewhere is owed a notice (due
   * now: the wake's term), and the waitpoint is kept until all are acknowledged. Answers how many.
   */
  settled(waitpoint: Waitpoint): number {
    if (waitpoint.state === "pending" || !this.mayHaveRemote()) return 0;
    // Counted by the rows returned: rowsWritten counts the index's writes too.
    const owed = this.sql.exec(R.OWE_NOTICES_SQL, waitpoint.id, waitpoint.state, this.clock.now()).toArray().length;
    if (owed === 0) return 0;
    this.sql.exec(R.DROP_WAITERS_SQL, waitpoint.id);
    this.host.waitpoints.holdForUntold(waitpoint.id, owed);
    this.host.owed();
    return owed;
  }

  /** How many jobs of other objects wait on waitpoint `id` (registered, not yet told of its settlement). */
  count(id: string): number {
    if (!this.mayHaveRemote()) return 0;
    return this.sql.exec<{ n: number }>(R.COUNT_REMOTE_WAITERS_SQL, id).one().n;
  }

  /** Whether a job elsewhere may wait on a waitpoint here: a lane no one registered with pays no statement. */
  private mayHaveRemote(): boolean {
    let any = remoteMay.get(this.sql);
    if (any === undefined) remoteMay.set(this.sql, (any = this.sql.exec(R.ANY_REMOTE_WAITERS_SQL).toArray().length > 0));
    return any;
  }
}

/** How a registration found its waitpoint, as the waiter keeps it. */
export function remoteStateOf(waitpoint: Waitpoint): RemoteState {
  return { outcome: waitpoint.state === "pending" ? null : waitpoint.state, result: waitpoint.state === "completed" ? JSON.stringify(waitpoint.result) : null };
}
