/**
 * Jobs that wait on waitpoints (docs/api.md "Waitpoints"), in the object that holds the waitpoint:
 * - a dependent's `dependsOn` items `{lane, waitpoint}`: looked up at its enqueue (each must exist),
 *   counted among what it waits for (blocked while one is pending), failed or counted done at once
 *   when one has settled already;
 * - an attempt's wait (the fenced `wait` route, its ack op, `ctx.waitFor`): the lease ends, the
 *   attempt is given back, and the job is blocked on the waitpoint, created pending if need be;
 * - a waitpoint's settlement (waitpoints/waitpoints.ts calls `settled` inside its transaction): every
 *   job here that waits on it hears it there and then, released, or failed by a timeout under policy
 *   `fail` (an attempt's wait never fails its job: the attempt that resumes reads the outcome);
 * - `waiters`: the jobs that wait on a waitpoint now.
 * What a job knows of its waits is read with its dependencies (deps/dependencies.ts), in `dependsOn`
 * order, then its attempts' waits in the order made.
 */
import type { Clock } from "../../shared/clock.js";
import { BLOCKED_RUN_AT } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { DependsOnItem, Job, WaitpointRef } from "../../shared/job.js";
import { shardOf } from "../../shared/shards.js";
import type { Waitpoint } from "../../shared/waitpoint.js";
import type { Dependencies } from "../deps/dependencies.js";
import type { FenceOp } from "../attempts/fence.js";
import { firstJobRow, oneJobRow, stateOf, toJob } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import { fromRunning, keepUpkeep } from "../store/upkeep.js";
import type { Waitpoints } from "../waitpoints/waitpoints.js";
import type { WaitpointWaiters } from "../waitpoints/waiters.js";
import { isWaitpointRef, timedOutError, type DependsOnWaits, type LookedUp, type WaitEntry, type WaitOutcome } from "./depends-on-waits.js";
import { mayHaveWaits, waitsWritten } from "./owned-waits.js";
import { remoteStateOf, waitKey, type Registered, type RemoteWaits, type WaitRegistrations } from "./remote-waits.js";
import type { KnownWaitpoints } from "./waitpoint-notices.js";
import * as W from "./wait-statements.js";
import { REREGISTER_WAIT_SQL } from "./remote-wait-statements.js";
import { registeredElsewhere } from "./withdrawals.js";

export interface WaitsHost {
  /** The lane's name. */
  readonly lane: string;
  /** This object's shard of its lane: a waitpoint lives in the shard its id hashes to. */
  readonly shard: { index: number; count(): number };
  readonly store: JobStore;
  readonly waitpoints: Waitpoints;
  /** Releases and fails the jobs that hear (deps/dependencies.ts `heard`). */
  readonly dependencies: Dependencies;
  /** The answer to a fenced write that matched nothing (attempts/fenced-writes.ts). */
  missed(id: string, token: string, op: FenceOp): Result<Job>;
}

/** What the wait route answers: the job as the wait left it, and the waitpoint it waits on. */
export interface WaitAnswer {
  job: Job;
  waitpoint: Waitpoint;
}

type StateRow = { id: string; state: "pending" | "completed" | "timedOut"; result: string | null };

export class Waits implements DependsOnWaits, WaitpointWaiters {
  private readonly sql: SqlStorage;
  /** Waits on waitpoints of other objects (remote-waits.ts): none until the lane's parts say. */
  remote: RemoteWaits | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly host: WaitsHost,
  ) {
    this.sql = storage.sql;
  }

  /** Whether waitpoint `ref` lives in this object (its lane's, on its id's shard). */
  private here(ref: WaitpointRef): boolean {
    if (ref.lane !== this.host.lane) return false;
    const shards = this.host.shard.count();
    return shards === 1 || shardOf(ref.waitpoint, shards) === this.host.shard.index;
  }

  // ---- a dependent's enqueue ----

  look(items: readonly DependsOnItem[], known?: KnownWaitpoints): LookedUp {
    const named = items.flatMap((item, position) => (isWaitpointRef(item) ? [{ position, ref: item }] : []));
    const local = named.filter(({ ref }) => this.here(ref));
    const rows = new Map<string, StateRow>();
    if (local.length > 0) for (const row of this.sql.exec<StateRow>(W.WAITPOINT_STATES_SQL, JSON.stringify(local.map(({ ref }) => ref.waitpoint)))) rows.set(row.id, { ...row });
    const entries: WaitEntry[] = [];
    const missing: WaitpointRef[] = [];
    for (const { position, ref } of named) {
      const elsewhere = this.here(ref) ? undefined : known?.get(waitKey(ref));
      if (elsewhere) entries.push({ position, ref, ...remoteStateOf(elsewhere), ...(known?.token === undefined ? {} : { token: known.token }) });
      const row = this.here(ref) ? rows.get(ref.waitpoint) : undefined;
      if (!row) {
        if (!elsewhere) missing.push(ref);
      } else entries.push({ position, ref, outcome: row.state === "pending" ? null : row.state, result: row.state === "completed" ? row.result : null });
    }
    return { entries, missing };
  }

  registrationsOf(specs: readonly { id: string; items: readonly DependsOnItem[] }[]): WaitRegistrations {
    return this.remote ? this.remote.registrationsOf(specs) : new Map();
  }

  register(byLane: WaitRegistrations, token: string): Promise<Registered> {
    return this.remote ? this.remote.register(byLane, token) : Promise.resolve({ known: new Map(), missing: [], refusal: null });
  }

  async withdraw(byLane: WaitRegistrations, token: string): Promise<void> {
    if (byLane.size > 0) await this.remote?.withdraw(byLane, token);
  }

  insert(seq: number, entries: readonly WaitEntry[], now: number): void {
    if (entries.length === 0) return;
    // A registration kept elsewhere (its waitpoint pending) is withdrawn should the job stop waiting unheard.
    const registered = (e: WaitEntry) => (e.outcome === null ? (e.token ?? null) : null);
    const values = entries.map((e) => [e.position, e.ref.lane, e.ref.waitpoint, e.outcome, e.result, e.outcome === null ? null : now, registered(e)]);
    this.sql.exec(W.INSERT_WAITS_SQL, seq, JSON.stringify(values));
    waitsWritten(this.sql);
    if (entries.some((e) => registered(e) !== null)) registeredElsewhere(this.sql, seq);
  }

  // ---- an attempt's wait ----

  /**
   * Ends the attempt holding `token` in a wait on waitpoint `waitpointId` of this lane, created
   * pending (timing out in `timeoutMs`) when it does not exist: the job is blocked on it, or queued at
   * once when it has settled (or an earlier attempt of the job waited on it already), its attempt given
   * back, its checkpoints kept. Fenced: a refusal changes nothing (but what the fence's answer does).
   */
  wait(id: string, token: string, waitpointId: string, timeoutMs: number | undefined): Result<WaitAnswer> {
    const { lane } = this.host;
    if (!this.here({ lane, waitpoint: waitpointId })) return fail("invalid_request", `waitpoint ${waitpointId} lives on another shard of lane ${lane}`);
    return this.written(id, token, waitpointId, () => this.host.waitpoints.create(waitpointId, timeoutMs).waitpoint, true).answer;
  }

  /**
   * `wait`, wherever the waitpoint lives among the lane's shards: one of another shard is registered
   * with first (created pending there when missing), the attempt checked before and again after;
   * a registration the wait did not keep (refused, or waited on before) is withdrawn.
   */
  waitAnywhere(id: string, token: string, waitpointId: string, timeoutMs: number | undefined): Result<WaitAnswer> | Promise<Result<WaitAnswer>> {
    if (!this.elsewhere(waitpointId)) return this.wait(id, token, waitpointId, timeoutMs);
    // A wait that is refused anyway writes nothing elsewhere.
    if (this.sql.exec(W.HELD_SEQ_SQL, id, token, this.clock.now()).toArray().length === 0) return this.refused(id, token);
    return this.registered([{ id, token, waitpoint: waitpointId, timeoutMs }]).then((waits) => waits.run((wait) => wait(id, token, waitpointId, timeoutMs)));
  }

  /**
   * The dispatcher's wait, which cannot await: `wait` when the waitpoint is this object's; else its
   * registration goes first and the wait is written once answered, `later` handed that write. The
   * attempt's lease is held meanwhile: should the write fail, the lease expires and its job is
   * recovered as after a crash.
   */
  waitSoon(id: string, token: string, waitpointId: string, timeoutMs: number | undefined, later: (written: Promise<Result<WaitAnswer>>) => void): Result<unknown> {
    const answer = this.waitAnywhere(id, token, waitpointId, timeoutMs);
    if (!(answer instanceof Promise)) return answer;
    later(answer);
    return ok(null);
  }

  /** Whether waitpoint `waitpointId` of this lane lives on another of its shards (an attempt's wait registers with it first). */
  elsewhere(waitpointId: string): boolean {
    return this.remote !== null && !this.here({ lane: this.host.lane, waitpoint: waitpointId });
  }

  /**
   * Attempts' waits (the wait route's one, an ack batch's) whose waitpoints live on other shards,
   * registered with them (each created pending there when missing) before the writes, for the
   * attempts that hold their leases now. `run` writes with them (`wait` as `wait` would, any
   * waitpoint), then withdraws every registration no wait kept (refused, or waited on before). Their
   * jobs are held pending meanwhile: a notice of a settlement arriving then is asked to come again.
   */
  async registered(items: readonly { id: string; token: string; waitpoint: string; timeoutMs?: number }[]): Promise<{ run<T>(write: (wait: Waits["wait"]) => T): Promise<T> }> {
    const remote = this.remote!;
    const now = this.clock.now();
    const away = items.filter((i) => this.elsewhere(i.waitpoint) && this.sql.exec(W.HELD_SEQ_SQL, i.id, i.token, now).toArray().length > 0);
    const registrations = remote.attemptRegistrations(away);
    const nonce = crypto.randomUUID();
    const ids = away.map((i) => i.id);
    this.host.dependencies.hold(ids);
    const said = await remote.register(registrations, nonce);
    const kept = new Set<string>();
    const wait = (id: string, token: string, waitpointId: string, timeoutMs: number | undefined): Result<WaitAnswer> => {
      if (!this.elsewhere(waitpointId)) return this.wait(id, token, waitpointId, timeoutMs);
      const found = said.known.get(waitKey({ lane: this.host.lane, waitpoint: waitpointId }));
      // The waitpoint's shard refused (a 4xx of its own, or unreachable): that refusal is the answer, once the fence holds.
      if (said.refusal) return this.written(id, token, waitpointId, () => said.refusal!, false).answer;
      if (!found) return this.written(id, token, waitpointId, () => null, false).answer;
      const written = this.written(id, token, waitpointId, () => found, false, nonce);
      if (written.kept) kept.add(`${id}\u0000${waitpointId}`);
      return written.answer;
    };
    return {
      run: async (write) => {
        try {
          return write(wait);
        } finally {
          const unkept = new Map([...registrations].map(([lane, list]) => [lane, list.filter((r) => !kept.has(`${r.waiter.id}\u0000${r.id}`))] as const).filter(([, list]) => list.length > 0));
          try {
            if (unkept.size > 0) await remote.withdraw(unkept, nonce);
          } finally {
            this.host.dependencies.done(ids);
          }
        }
      },
    };
  }

  private refused(id: string, token: string): Result<never> {
    const missed = this.host.missed(id, token, "snooze");
    return missed.ok ? fail("internal", "a wait cannot be a repeat") : missed;
  }

  /**
   * The wait's one write, fenced: `found` gives the waitpoint once the attempt is known to hold the
   * lease (a refusal: its shard's, the answer; null: its registration answered nothing, a 500). `kept`: whether the job now waits on it (a new
   * wait, written). `recount`: the waitpoint is this object's, its waiters counted again once the job waits.
   */
  private written(id: string, token: string, waitpointId: string, found: () => Waitpoint | Result<never> | null, recount: boolean, registration?: string): { answer: Result<WaitAnswer>; kept: boolean } {
    const now = this.clock.now();
    const { lane } = this.host;
    return this.storage.transactionSync(() => {
      const held = this.sql.exec<{ seq: number }>(W.HELD_SEQ_SQL, id, token, now).toArray()[0];
      if (!held) return { answer: this.refused(id, token), kept: false };
      const waitpoint = found();
      if (!waitpoint) return { answer: fail("internal", `waitpoint ${waitpointId} could not be registered with on its shard`), kept: false };
      if ("ok" in waitpoint) return { answer: waitpoint, kept: false };
      const prior = this.sql.exec<{ last: number | null; earlier: number | null; unheard: number | null }>(W.ATTEMPT_WAITS_SQL, held.seq, lane, waitpointId).one();
      const outcome: WaitOutcome | null = waitpoint.state === "pending" ? null : waitpoint.state;
      const result = waitpoint.state === "completed" ? JSON.stringify(waitpoint.result) : null;
      // Waited on before and heard: this attempt goes on at once, as it would have. Waited on before
      // but unheard (cancelled while it waited, then requeued): the job waits on that wait again, which
      // its settlement tells (here, or by its notice: the registration stays); settled meanwhile, it hears now.
      if (prior.unheard !== null && outcome !== null) this.sql.exec(W.TELL_ATTEMPT_WAIT_SQL, held.seq, prior.unheard, outcome, result, now);
      const waits = outcome === null && (prior.earlier === null || prior.unheard !== null);
      const blocked = waits ? 1 : 0;
      const row = oneJobRow(this.sql.exec(W.WAIT_SQL, held.seq, now, BLOCKED_RUN_AT, blocked));
      if (prior.earlier === null) {
        this.insert(held.seq, [{ position: prior.last === null ? W.FIRST_ATTEMPT_WAIT : prior.last + 1, ref: { lane, waitpoint: waitpointId }, outcome, result, ...(registration === undefined ? {} : { token: registration }) }], now);
      } else if (waits && registration !== undefined) {
        // Its earlier registration was withdrawn when the job stopped waiting: this one is kept instead.
        this.sql.exec(REREGISTER_WAIT_SQL, held.seq, prior.unheard, registration);
        registeredElsewhere(this.sql, held.seq);
      }
      // A wait is no snooze (its stat) and ends its run as a release does (the histogram's label).
      keepUpkeep(this.sql, [fromRunning({ ...row, lease_token: "wait" })], now);
      this.host.store.emit({ ...row, state: stateOf(row) }, "running", now - (row.claimed_at ?? now), now);
      const answer = ok({ job: toJob(row, lane), waitpoint: blocked === 1 && recount ? { ...waitpoint, waiters: this.count(waitpointId) } : waitpoint });
      return { answer, kept: waits };
    });
  }

  // ---- a waitpoint's settlement ----

  settled(waitpoint: Waitpoint): void {
    this.remote?.settled(waitpoint);
    if (waitpoint.state === "pending" || !mayHaveWaits(this.sql)) return;
    const now = this.clock.now();
    const ref = { lane: this.host.lane, waitpoint: waitpoint.id };
    const result = waitpoint.state === "completed" ? JSON.stringify(waitpoint.result) : null;
    const told = this.sql.exec<{ job_seq: number; position: number }>(W.TELL_WAITS_SQL, ref.lane, ref.waitpoint, waitpoint.state, result, now).toArray();
    for (const { job_seq, position } of told) {
      const row = firstJobRow(this.sql.exec(W.JOB_BY_SEQ_SQL, job_seq));
      if (!row) continue;
      // A timed-out `dependsOn` item is a dependency that did not complete; an attempt's wait is not.
      const failure = waitpoint.state === "timedOut" && position < W.FIRST_ATTEMPT_WAIT ? timedOutError(ref) : null;
      this.host.dependencies.heard(row, failure, now);
    }
  }

  count(id: string): number {
    const elsewhere = this.remote?.count(id) ?? 0;
    if (!mayHaveWaits(this.sql)) return elsewhere;
    return elsewhere + this.sql.exec<{ n: number }>(W.COUNT_WAITING_SQL, this.host.lane, id).one().n;
  }
}
