/**
 * Dependencies (docs/api.md "Dependencies"), every side of them in one lane:
 * - the dependent's enqueue: registers with the lanes of its remote dependencies first (which proves
 *   they exist), then writes the job in one transaction with its local ones: blocked while any is not
 *   settled, queued when all are, failed at once when one already did not complete (policy fail);
 * - the dependency's lane: answers registrations (and keeps them: its settlement writes a notice per
 *   dependent into the outbox, in the same statement; outbox.ts delivers them);
 * - the dependent's lane, told: applies each notice at most once (a dependency row hears once), so
 *   at-least-once delivery has an exactly-once effect; the last dependency releases the job;
 * - what an attempt reads: its dependencies' outcomes and results.
 *
 * A blocked job is a queued row whose run_at is `BLOCKED_RUN_AT` (job-statements.ts): no claim, wake
 * term or due count sees it, while cancel, TTL, purge and failing the lane treat it as the queued job
 * it is. In a queue it keeps its place, so the queue's later jobs wait behind it (queue order holds).
 */
import type { Clock } from "../../shared/clock.js";
import { parseShardObjectName } from "../../shared/shards.js";
import { registerAmongShards, unregisterAmongShards, type RegisteringShard } from "../../routing/registrations.js";
import { BLOCKED_RUN_AT } from "../../shared/defaults.js";
import { describeError } from "../../shared/describe-error.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { DependencyOutcome, DependsOnItem, Job, JobRef, Json, Outcome } from "../../shared/job.js";
import { oneJobRow, specValues, stateOf, toJob, type Inserted, type JobRow, type JobSpec } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import { dependencyResult } from "../payloads/held-dependencies.js";
import * as Q from "../store/job-statements.js";
import * as D from "./dependency-statements.js";
import { isJobRef, itemsOf, notFound, refsOf } from "./dependency-items.js";
import { keepUpkeep } from "../store/upkeep.js";
import type { Notice, NoticeAnswer, Registration, RegistrationAnswer, Settlement } from "./notices.js";
import { NO_WAITS, timedOutError, type DependsOnWaits } from "../waits/depends-on-waits.js";
import { mayHaveWaits } from "../waits/owned-waits.js";
import type { WaitRegistrations } from "../waits/remote-waits.js";
import type { Waitpoint } from "../../shared/waitpoint.js";

/** How many dependents `GET …/dependents` lists at most. */
export const MAX_DEPENDENTS_LISTED = 10_000;

/**
 * What a lane calls on another lane about dependencies (env.ts's `LanePeer`). `hop`: how many shards
 * of a sharded lane the registrations went through already (routing/registrations.ts).
 */
export interface DependencyPeer {
  registerDependents(registrations: unknown, hop?: number, token?: string): Promise<Result<RegistrationAnswer[]>>;
  unregisterDependents(registrations: unknown, hop?: number, token?: string): Promise<Result<{ removed: number }>>;
}

export interface DependenciesHost {
  /** The lane's name: what dependencies and notices name. */
  readonly lane: string;
  /** This object's name: the lane's, or `lane#i` for shard i of a sharded lane, where a dependent's notices go. */
  readonly objectName: string;
  /** This object's shard of its lane (shards/shard-state.ts). */
  readonly shard: { index: number; count(): number; reservedFor(id: string): number | null };
  /** The object of that name (a lane, or a shard `lane#i`), to register with. */
  peer(name: string): DependencyPeer;
}

/** A dependency's key in maps: its lane and id. */
const keyOf = (ref: JobRef) => `${ref.lane}\u0000${ref.id}`;

/**
 * What an enqueue learned of its remote dependencies: settled already (how), or waiting (null); and,
 * as its writes go, the dependents it wrote and those it found there already (see `surplus`).
 */
export type Known = Map<string, Settlement | null> & { wrote?: Set<string>; found?: Set<string>; waits?: Map<string, Waitpoint> };

/**
 * Registrations an enqueue made with other lanes, by lane, under its own token: withdrawn when its
 * write is refused, which takes back what this enqueue registered and nothing another one did.
 */
export type Registered = { token: string; byLane: Map<string, Registration[]>; waits?: WaitRegistrations };

type DependencyRow = { seq: number; id: string; state: JobRow["state"]; outcome: Outcome | null; result: string | null; error: string | null; generation: number };

export class Dependencies {
  private readonly sql: SqlStorage;
  /** Ids of dependents whose enqueue is between its registrations and its write (count: enqueues of the id at once). */
  private readonly pending = new Map<string, number>();
  /** Whether a job of this lane may have dependents (its settlement then writes the outbox). */
  private registered: boolean;
  /** The waitpoints among dependents' `dependsOn` items (waits/): none known until the lane's parts say. */
  waits: DependsOnWaits = NO_WAITS;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly store: JobStore,
    private readonly host: DependenciesHost,
  ) {
    this.sql = storage.sql;
    this.registered = this.sql.exec(D.ANY_DEPENDENTS_SQL).toArray().length > 0;
  }

  /** Whether a settlement in this lane may write notices (a job here has dependents): the wake then looks at the outbox. */
  get mayNotify(): boolean {
    return this.registered;
  }

  /** Dependents' rows were written here other than by a registration (a debounce key's job moved in with them). */
  dependentsArrived(): void {
    this.registered = true;
  }

  // ---- the dependent's enqueue ----

  /**
   * Registers the dependents among `specs` with the lanes of their remote dependencies, one call per
   * lane; answers what each already knows, or `dependency_not_found` naming every missing one. The
   * specs' ids are held pending meanwhile (and until `done`): a notice for one of them is told to
   * come again rather than dropped.
   */
  async registerRemote(specs: readonly JobSpec[]): Promise<Result<{ known: Known; registered: Registered }>> {
    const byLane = new Map<string, Registration[]>();
    // On a sharded lane, a job of its own lane is local when it is in this object (or an earlier job
    // of the same call); any other goes through the lane's shards (`registerInLane`: the routing layer's hops).
    const sharded = this.host.shard.count() > 1;
    const earlier = new Set<string>();
    for (const spec of specs) {
      for (const ref of refsOf(spec)) {
        if (ref.lane === this.host.lane && (!sharded || earlier.has(ref.id) || this.store.row(ref.id))) continue;
        let list = byLane.get(ref.lane);
        if (!list) byLane.set(ref.lane, (list = []));
        list.push({ id: ref.id, dependent: { lane: this.host.objectName, id: spec.id } });
      }
      earlier.add(spec.id);
    }
    // Waitpoints of other objects are registered with them as jobs are (waits/remote-waits.ts).
    const waits = this.waits.registrationsOf(specs.map((spec) => ({ id: spec.id, items: itemsOf(spec) })));
    // Nothing to register elsewhere (every dependency in this object): no token, nothing to withdraw.
    if (byLane.size === 0 && waits.size === 0) return ok({ known: new Map<string, Settlement | null>(), registered: { token: "", byLane } });
    // Two enqueues of one dependent (a retry, or two callers) register the same row: each registers
    // under a token of its own, a nonce, so that the one that withdraws takes back only its own.
    const token = crypto.randomUUID();
    const known: Known = Object.assign(new Map<string, Settlement | null>(), { wrote: new Set<string>(), found: new Set<string>() });
    const registerWith = (lane: string, registrations: Registration[]) => (lane === this.host.lane ? this.registerInLane(registrations, 0, token) : this.host.peer(lane).registerDependents(registrations, 0, token));
    // A lane whose call throws could not be reached: it refuses this enqueue alone, 503
    // `lane_unavailable` as a waitpoint's registration (waits/remote-waits.ts), never a 500; nothing
    // of it is written and what it registered is withdrawn below.
    const thrown = (lane: string) => (error: unknown) => fail("lane_unavailable", `registering with lane ${lane} failed: ${describeError(error)}`);
    const [answers, waited] = await Promise.all([
      Promise.all([...byLane].map(async ([lane, registrations]) => ({ lane, registrations, answer: await registerWith(lane, registrations).catch(thrown(lane)) }))),
      this.waits.register(waits, token),
    ]);
    const missing: DependsOnItem[] = [];
    const registered: Registered = { token, byLane, waits };
    let refusal: Result<never> | null = waited.refusal;
    known.waits = waited.known;
    missing.push(...waited.missing);
    for (const { lane, registrations, answer } of answers) {
      if (!answer.ok) {
        refusal ??= answer;
        continue;
      }
      registrations.forEach((registration, i) => {
        const said = answer.value[i];
        const ref = { lane, id: registration.id };
        if (!said || said.status === "missing") missing.push(ref);
        else known.set(keyOf(ref), said.status === "waiting" ? null : { outcome: said.outcome, result: said.result, error: said.error, generation: said.generation });
      });
    }
    if (refusal === null && missing.length === 0) return ok({ known, registered });
    // Withdrawn from every lane asked: one whose call threw may have registered all the same, and a
    // token withdrawn where it holds nothing changes nothing.
    await this.withdraw(registered);
    return refusal ?? notFound(missing);
  }

  /**
   * What an enqueue registered and no longer needs once it has written: everything when it was
   * refused (`written` false: nothing of it is written); else the registrations of dependents that it
   * found there already and did not write itself (duplicates), whose jobs rely on their own
   * enqueue's registrations. Null: none.
   */
  surplus({ known, registered }: { known: Known; registered: Registered }, written: boolean): Registered | null {
    if (!written) return registered;
    const unwritten = new Set([...(known.found ?? [])].filter((id) => !known.wrote?.has(id)));
    if (unwritten.size === 0) return null;
    const byLane = new Map<string, Registration[]>();
    for (const [lane, registrations] of registered.byLane) {
      const some = registrations.filter((r) => unwritten.has(r.dependent.id));
      if (some.length > 0) byLane.set(lane, some);
    }
    const waits: WaitRegistrations = new Map();
    for (const [lane, registrations] of registered.waits ?? []) {
      const some = registrations.filter((r) => unwritten.has(r.waiter.id));
      if (some.length > 0) waits.set(lane, some);
    }
    return byLane.size === 0 && waits.size === 0 ? null : { token: registered.token, byLane, waits };
  }

  /**
   * Withdraws the registrations of an enqueue that wrote nothing (it was refused), so that a refused
   * enqueue leaves no trace on any lane: its token's, never another enqueue's of the same dependent.
   * One that cannot be withdrawn is harmless: its notice finds no dependent, and is dropped.
   */
  async withdraw({ token, byLane, waits }: Registered): Promise<void> {
    const withdrawFrom = (lane: string, registrations: Registration[]) => (lane === this.host.lane ? this.unregisterInLane(registrations, 0, token) : this.host.peer(lane).unregisterDependents(registrations, 0, token));
    await Promise.all([...[...byLane].map(([lane, registrations]) => withdrawFrom(lane, registrations).catch(() => undefined)), this.waits.withdraw(waits ?? new Map(), token)]);
  }

  /**
   * Registrations with jobs of this lane, wherever they live among its shards: routed from this
   * object by the routing layer (routing/registrations.ts), which registers here the jobs this object
   * holds. `hop`: how many shards they went through already; `token`: the registering enqueue's.
   */
  registerInLane(registrations: readonly Registration[], hop: number, token: string | null): Promise<Result<RegistrationAnswer[]>> {
    return registerAmongShards(this.asShard(token), registrations, hop, token);
  }

  /** Withdraws registrations with jobs of this lane, routed among its shards as `registerInLane` routed them. */
  unregisterInLane(registrations: readonly Registration[], hop: number, token: string | null): Promise<Result<{ removed: number }>> {
    return unregisterAmongShards(this.asShard(token), registrations, hop, token);
  }

  /** This object as the routing of registrations sees it: its shard, its jobs, and its own side of a registration. */
  private asShard(token: string | null): RegisteringShard<Registration, RegistrationAnswer> {
    const { lane, shard } = this.host;
    return {
      lane,
      index: shard.index,
      count: () => shard.count(),
      holds: (id) => this.store.row(id) !== undefined,
      reservedFor: (id) => shard.reservedFor(id),
      register: (registrations) => this.register(registrations, token),
      unregister: (registrations) => this.unregister(registrations, token),
      peer: (name) => this.host.peer(name),
    };
  }

  /**
   * Registrations of this lane's jobs withdrawn by the dependent's enqueue that made them (it was
   * refused): what its `token` holds, never what another enqueue of the same dependent registered,
   * which its written job may rely on. A row goes with its last owner. Without a token (a lane of an
   * older version) nothing is withdrawn: a registration left behind is harmless, its notice finds no
   * dependent and is dropped.
   */
  unregister(registrations: readonly Registration[], token: string | null): number {
    if (token === null) return 0;
    let removed = 0;
    this.storage.transactionSync(() => {
      for (const r of registrations) {
        if (this.sql.exec(D.UNREGISTER_SQL, r.id, r.dependent.lane, r.dependent.id, token).toArray().length === 0) continue;
        removed++;
        this.sql.exec(D.DROP_UNOWNED_SQL, r.id, r.dependent.lane, r.dependent.id);
      }
    });
    return removed;
  }

  /** Whether `id` is held pending: its job is being written here, once its dependencies elsewhere are registered. */
  isPending(id: string): boolean {
    return this.pending.has(id);
  }

  /** Holds ids pending (see `registerRemote`) until `done`. */
  hold(ids: readonly string[]): void {
    for (const id of ids) this.pending.set(id, (this.pending.get(id) ?? 0) + 1);
  }

  done(ids: readonly string[]): void {
    for (const id of ids) {
      const n = (this.pending.get(id) ?? 1) - 1;
      if (n === 0) this.pending.delete(id);
      else this.pending.set(id, n);
    }
  }

  /**
   * Writes a dependent job, inside the caller's transaction: its local dependencies looked up (each
   * must exist: `dependency_not_found` else, which the caller rolls back) and registered, its remote
   * ones as `known` says. Blocked while any is not settled; queued when all are; failed at once when
   * one did not complete and its policy is `fail`. An id that exists is answered as any enqueue's.
   */
  write(spec: JobSpec, now: number, known: Known): Result<Inserted> {
    const items = itemsOf(spec);
    const refs = items.filter(isJobRef);
    // Its own lane's jobs are here, unless registered through the lane's shards (`registerRemote`).
    const local = refs.filter((ref) => ref.lane === this.host.lane && !known.has(keyOf(ref)));
    const rows = new Map<string, DependencyRow>();
    if (local.length > 0) for (const row of this.sql.exec<DependencyRow>(D.DEPENDENCY_STATE_SQL, JSON.stringify(local.map((r) => r.id)))) rows.set(row.id, { ...row });
    const missing = local.filter((ref) => !rows.has(ref.id));
    const waits = items.length > refs.length ? this.waits.look(items, known.waits) : null;
    if (missing.length > 0 || (waits && waits.missing.length > 0)) return notFound([...missing, ...(waits?.missing ?? [])]);
    const settlements = refs.map((ref) => (local.includes(ref) ? settlementOf(rows.get(ref.id)!) : (known.get(keyOf(ref)) ?? null)));
    const waiting = settlements.filter((s) => s === null).length + (waits?.entries.filter((e) => e.outcome === null).length ?? 0);
    const seq = this.sql.exec<{ seq: number }>(D_INSERT, ...specValues(spec), now, waiting, BLOCKED_RUN_AT).toArray()[0]?.seq;
    if (seq === undefined) {
      known.found?.add(spec.id);
      return this.store.existing(spec);
    }
    known.wrote?.add(spec.id);
    const values = refs.map((ref, i) => {
      const s = settlements[i];
      return [items.indexOf(ref), ref.lane, ref.id, s?.outcome ?? null, s?.result ?? null, s?.error ?? null, s?.generation ?? null, s ? now : null];
    });
    if (values.length > 0) this.sql.exec(D.INSERT_DEPENDENCIES_SQL, seq, JSON.stringify(values));
    if (waits) this.waits.insert(seq, waits.entries, now);
    if (local.length > 0) this.registerLocal(local.map((ref) => rows.get(ref.id)!.seq), spec.id, now);
    let row = oneJobRow(this.sql.exec(Q.JOB_BY_ID_SQL, spec.id));
    keepUpkeep(this.sql, [{ old: null, new: row }], now);
    this.store.emit({ ...row, state: stateOf(row) }, null, null);
    // The first item in dependsOn order that did not complete fails it (policy fail).
    const failures = refs.flatMap((ref, i) => (settlements[i] && settlements[i]!.outcome !== "completed" ? [{ at: items.indexOf(ref), error: `dependency ${ref.lane}/${ref.id} ${settlements[i]!.outcome}` }] : []));
    for (const e of waits?.entries ?? []) if (e.outcome === "timedOut") failures.push({ at: e.position, error: timedOutError(e.ref) });
    const failedBy = spec.dependencyFailure === "fail" ? failures.sort((a, b) => a.at - b.at)[0] : undefined;
    if (failedBy) row = this.failDependent(row, failedBy.error, now);
    return ok({ status: "queued", at: now, job: toJob(row, this.store.lane) });
  }

  /** This lane's own jobs registered as dependencies of `dependent` (a job of this lane). */
  private registerLocal(seqs: readonly number[], dependent: string, now: number): void {
    // Written with its job, in one transaction: held for good (no enqueue withdraws it).
    this.sql.exec(D.REGISTER_SQL, JSON.stringify(seqs.map((seq) => [seq, this.host.objectName, dependent])), now, null);
    this.sql.exec(D.MARK_HAS_DEPENDENTS_SQL, JSON.stringify(seqs));
    this.registered = true;
  }

  // ---- the dependency's lane ----

  /**
   * Registrations of other lanes' dependents with jobs of this lane, in one transaction: each job
   * that exists keeps the registration (its settlement will tell the dependent) and answers how it
   * settled, if it has; one that does not exist answers `missing` and registers nothing. `token`: the
   * registering enqueue's, whose withdrawal takes back only what it holds (null: held for good).
   */
  register(registrations: readonly Registration[], token: string | null): RegistrationAnswer[] {
    const now = this.clock.now();
    return this.storage.transactionSync(() => {
      const rows = new Map<string, DependencyRow>();
      const ids = [...new Set(registrations.map((r) => r.id))];
      for (const row of this.sql.exec<DependencyRow>(D.DEPENDENCY_STATE_SQL, JSON.stringify(ids))) rows.set(row.id, { ...row });
      const kept = registrations.filter((r) => rows.has(r.id));
      if (kept.length > 0) {
        this.sql.exec(D.REGISTER_SQL, JSON.stringify(kept.map((r) => [rows.get(r.id)!.seq, r.dependent.lane, r.dependent.id])), now, token);
        this.sql.exec(D.MARK_HAS_DEPENDENTS_SQL, JSON.stringify([...new Set(kept.map((r) => rows.get(r.id)!.seq))]));
        this.registered = true;
      }
      return registrations.map((r): RegistrationAnswer => {
        const row = rows.get(r.id);
        if (!row) return { status: "missing" };
        const settled = settlementOf(row);
        return settled ? { status: "settled", ...settled } : { status: "waiting" };
      });
    });
  }

  /** The jobs registered to wait for job `id` of this lane, by lane then id (the first `MAX_DEPENDENTS_LISTED`). */
  dependents(id: string): Result<JobRef[]> {
    if (!this.store.row(id)) return fail("job_not_found", `no job ${id} in lane ${this.host.lane}`);
    // A dependent is kept by its object (`lane#i` on a sharded lane) and answered by its lane.
    return ok(this.sql.exec<{ lane: string; id: string }>(D.DEPENDENTS_OF_SQL, id, MAX_DEPENDENTS_LISTED).toArray().map((r) => ({ lane: parseShardObjectName(r.lane).lane, id: r.id })));
  }

  // ---- the dependent's lane, told ----

  /** Applies notices in one transaction, each at most once; answers what became of each. */
  apply(notices: readonly Notice[]): NoticeAnswer[] {
    const now = this.clock.now();
    return this.storage.transactionSync(() => notices.map((notice) => this.applyOne(notice, now)));
  }

  private applyOne(notice: Notice, now: number): NoticeAnswer {
    const row = this.store.row(notice.dependent);
    if (!row) return this.pending.has(notice.dependent) ? "pending" : "gone";
    const { lane, id } = notice.dependency;
    const told = this.sql.exec(D.TELL_DEPENDENCY_SQL, row.seq, lane, id, notice.outcome, notice.result, notice.error, notice.generation, now).toArray().length > 0;
    if (!told) return row.depends_on !== null && (JSON.parse(row.depends_on) as JobRef[]).some((r) => r.lane === lane && r.id === id) ? "repeat" : "gone";
    this.heard(row, notice.outcome === "completed" ? null : `dependency ${lane}/${id} ${notice.outcome}`, now);
    return "applied";
  }

  /**
   * A job heard of one of the things it waits for (a job's notice, or a waitpoint's settlement):
   * failed by it when `failure` names how it did not complete and its policy is `fail`; else one fewer
   * to wait for, queued at the last. Inside the caller's transaction.
   */
  heard(row: JobRow, failure: string | null, now: number): void {
    // Cancelled, expired or requeued meanwhile: nothing waits any more.
    if (row.state !== "queued" || row.blocked === 0) return;
    if (failure !== null && row.dependency_failure === "fail") {
      this.failDependent(row, failure, now);
      return;
    }
    const released = oneJobRow(this.sql.exec(D.RELEASE_ONE_SQL, row.seq, now));
    keepUpkeep(this.sql, [{ old: row, new: released }], now);
    if (released.blocked === 0) this.store.emit(released, "blocked", null);
  }

  /** A blocked job failed by a dependency that did not complete (policy fail), `error` naming it and how. */
  private failDependent(row: JobRow, error: string, now: number): JobRow {
    const to = this.store.endState();
    const failed = oneJobRow(this.sql.exec(D.FAIL_DEPENDENT_SQL, row.seq, to, error, to === "settled" ? now : null, now));
    keepUpkeep(this.sql, [{ old: row, new: failed }], now);
    this.store.emit(failed, stateOf(row), null);
    return failed;
  }

  // ---- what an attempt reads ----

  /** What each dependency of the job (of `seq`) settled as and returned, in the order it named them. */
  of(seq: number): DependencyOutcome[] {
    return this.outcomesOf([seq]).get(seq) ?? [];
  }

  /** Claimed jobs with their dependencies' outcomes (`[]` without any), in one query. */
  attach<J extends Job>(jobs: readonly J[], seqs: ReadonlyMap<string, number>): (J & { dependencies: DependencyOutcome[] })[] {
    // An attempt's waits come from an earlier attempt: a job's first claim (generation 1) has none,
    // and no job of a lane whose jobs never waited has any.
    const waited = jobs.some((job) => job.generation > 1) && mayHaveWaits(this.sql);
    const found = this.outcomesOf(jobs.filter((job) => job.dependsOn.length > 0 || (waited && job.generation > 1)).map((job) => seqs.get(job.id) ?? -1));
    return jobs.map((job) => ({ ...job, dependencies: found.get(seqs.get(job.id) ?? -1) ?? [] }));
  }

  /** The dependencies' outcomes of the jobs of `seqs`, by seq, in the order each job named them. */
  private outcomesOf(seqs: readonly number[]): Map<number, DependencyOutcome[]> {
    const byJob = new Map<number, DependencyOutcome[]>();
    if (seqs.length === 0) return byJob;
    type Row = { job_seq: number; lane: string; id: string | null; waitpoint: string | null; outcome: string | null; result: string | null; error: string | null };
    for (const r of this.sql.exec<Row>(D.DEPENDENCIES_OF_SQL, JSON.stringify(seqs))) {
      let list = byJob.get(r.job_seq);
      if (!list) byJob.set(r.job_seq, (list = []));
      if (r.waitpoint !== null) list.push({ lane: r.lane, waitpoint: r.waitpoint, outcome: r.outcome as "completed" | "timedOut" | null, result: r.result === null ? null : (JSON.parse(r.result) as Json) });
      else list.push({ lane: r.lane, id: r.id!, outcome: r.outcome as Outcome | null, ...dependencyResult(r.result), error: r.error }); // a big result: its reference
    }
    return byJob;
  }
}

/** The insert of a dependent job (job-statements.ts). */
const D_INSERT = Q.INSERT_DEPENDENT_SQL;

/** How a job settled, or null while it has not (completing counts as not yet: its outcome is not delivered). */
function settlementOf(row: DependencyRow): Settlement | null {
  if (row.state !== "settled" || row.outcome === null) return null;
  return { outcome: row.outcome, result: row.result, error: row.error, generation: row.generation };
}
