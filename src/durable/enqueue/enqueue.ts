/**
 * The enqueue, one path: validate (input.ts), build the spec at one reading of the clock (spec.ts),
 * one write of the store (start at once, insert one, or a batch in one transaction), then the wake.
 *
 * A due job of an in-process kind outside any queue may start in its enqueue's turn, when nothing
 * could pass it: inserted running with its first lease in one statement and started before the write
 * commits. The output gate holds back the enqueue's answer and whatever the executor sends until it does.
 */
import type { BatchAnswer } from "../../shared/answers.js";
import type { Clock, Entropy } from "../../shared/clock.js";
import { DISPATCH_LEASE_MS, MAX_PAYLOAD_BYTES } from "../../shared/defaults.js";
import { describeError } from "../../shared/describe-error.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { EnqueueRequest } from "../../shared/schemas.js";
import type { Json } from "../../shared/job.js";
import type { SwitchyardEnv } from "../env.js";
import type { Dispatcher } from "../attempts/dispatcher.js";
import { parseEnqueue, type TracedEnqueueRequest } from "../input.js";
import type { Inserted, JobSpec } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import type { Debouncer } from "../flow/debounce.js";
import { startsAtOnce } from "../flow/may-start.js";
import type { Dependencies, Known } from "../deps/dependencies.js";
import type { Wake } from "../wake/wake.js";
import type { EnqueueDone } from "./enqueue-text.js";
import { toSpec } from "../../shared/job-spec.js";
import type { ShardState } from "../shards/shard-state.js";
import { idOnShard } from "../../shared/shards.js";
import type { PayloadStore } from "../payloads/payload-store.js";
import { writeHeld } from "../payloads/held-enqueue.js";
import type { SingletonQueues } from "./singleton.js";
import type { KindChecks } from "../kinds/kind-checks.js";

export interface EnqueueHost {
  readonly store: JobStore;
  /** Replaces the queued job of a debounce key (flow/debounce.ts). */
  readonly debouncer: Debouncer;
  /** Registers and writes jobs with dependencies (deps/dependencies.ts). */
  readonly dependencies: Dependencies;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  readonly wake: Wake;
  /** Held claims waiting: a flush answers them when a job they may take arrives. */
  readonly waiters: { readonly size: number };
  /** The version of the code: what a lease taken at once records. */
  readonly version: string;
  /** This object's shard: a job whose routing key it does not own is refused (shards/shard-state.ts). */
  readonly shard: ShardState;
  /** The metrics report (metrics/reporter.ts), told of an enqueue that no flush follows. */
  readonly metrics: { noteQuietChange(): void };
  /** One job per queue (singleton.ts): read only by an enqueue that names `singleton`. */
  readonly singleton: SingletonQueues;
  /** The declared kinds' payload checks (kinds/kind-checks.ts), made before anything is written. */
  readonly kinds: KindChecks;
  /** Big payloads in R2 (payloads/payload-store.ts): a spec over 128 KiB is uploaded before its write. */
  readonly payloads: PayloadStore;
}

export class Enqueue {
  constructor(
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly host: EnqueueHost,
  ) {}

  /** The store the schedules' fires insert through. */
  get store(): JobStore {
    return this.host.store;
  }

  /**
   * One enqueue: its spec and what the insert did, or the refusal. In its own turn, unless the job
   * has dependencies in other lanes: those are registered first (`withDependencies`).
   */
  one(input: unknown, checked = false): Result<EnqueueDone> | Promise<Result<EnqueueDone>> {
    const request = parseEnqueue(input);
    if (!request.ok) return request;
    // One reading of the clock: a job due now has `runAt` = `createdAt`, and the RPC client rebuilds both from it (enqueue-text.ts).
    const now = this.clock.now();
    const spec = this.toSpec(request.value, now);
    if (!spec.ok) return spec;
    // The request's own refusals (400 `invalid_request`, 413) come before its payload's schema's
    // (`invalid_payload`). A schema that checks asynchronously: the enqueue goes on out of turn, once
    // it has passed (its spec made again then, at that reading of the clock).
    if (!checked) {
      const refused = this.host.kinds.payload(request.value.kind, request.value.payload);
      if (refused instanceof Promise) return refused.then((r) => r ?? this.one(input, true));
      if (refused) return refused;
    }
    if (spec.value.heldPayload) {
      // Over 128 KiB, kept in R2: uploaded first, then written (payloads/held-enqueue.ts); answered with the payload it was sent.
      const payload = (request.value.payload ?? null) as Json;
      const written = (held: JobSpec) => this.written(held, request.value, now);
      const owners = (done: Result<EnqueueDone>) => (done.ok && "job" in done.value.inserted && done.value.inserted.job ? [done.value.inserted.job.id] : []);
      return writeHeld(this.host.payloads, this.host.store, spec.value, payload, written, owners).then((done) => (done.ok ? ok({ ...done.value, payload }) : done));
    }
    return this.written(spec.value, request.value, now);
  }

  /** `one`'s write of a spec, once checked and built. */
  private written(job: JobSpec, request: TracedEnqueueRequest, now: number): Result<EnqueueDone> | Promise<Result<EnqueueDone>> {
    const spec = { value: job };
    const { singleton } = request;
    if (spec.value.dependsOn !== null) {
      // An id that exists answers at once, as any enqueue's: nothing to register.
      if (this.host.store.row(job.id)) return this.answered(job, this.host.store.existing(job));
      // A queue held already: nothing to register either.
      if (singleton === "skip") {
        const holder = this.host.singleton.holder(job.queue!);
        if (holder) return ok({ spec: job, inserted: { status: "skipped", job: holder } });
      }
      const write = (known: Known) => () => this.host.dependencies.write(job, now, known);
      return this.withDependencies([job], (known) => (singleton === undefined ? write(known)() : this.host.singleton.apply(job, singleton, write(known))))
        .then((inserted) => this.answered(job, inserted));
    }
    if (singleton !== undefined) return this.singly(spec.value, singleton, request.id !== undefined, now);
    const started = this.startAtOnce(spec.value, now); // its wake is seen to
    const inserted = started ?? this.write(spec.value, request.id !== undefined, now);
    if (!inserted.ok) return inserted;
    if (!started) this.enqueued(spec.value, inserted.value.status, now);
    return ok({ spec: spec.value, inserted: inserted.value });
  }

  /**
   * The one write of an enqueue not started at once: a debounced request replaces the queued job of
   * its key, if any (unless its own id names a job that exists: that answers as any enqueue of the id);
   * else the job is inserted (queued, or a duplicate, or refused as a conflict). A schedule's fire
   * writes through it too (schedules.ts), so that it debounces as any enqueue does.
   */
  write(spec: JobSpec, idGiven: boolean, now: number): Result<Inserted> {
    if (spec.debounceKey !== null && !(idGiven && this.host.store.row(spec.id))) {
      const replaced = this.host.debouncer.replace(spec, now);
      if (replaced) return replaced;
    }
    return this.host.store.insertJob(spec, now);
  }

  /**
   * A schedule's fire of a job with `singleton`: as `singly` writes it, in the fire's transaction;
   * the attempts it asked to cancel are aborted once that transaction is over.
   */
  writeSingleton(spec: JobSpec, mode: NonNullable<EnqueueRequest["singleton"]>, now: number): Result<Inserted> {
    if (this.host.store.row(spec.id)) return this.write(spec, true, now);
    const done = this.host.singleton.apply(spec, mode, () => this.write(spec, true, now));
    if (done.ok && done.value.status === "queued" && done.value.cancelling) {
      const ids = done.value.cancelling;
      queueMicrotask(() => this.host.singleton.abortCancelled(ids));
    }
    return done;
  }

  /**
   * Group commit's write (client/group-commit.ts): the single enqueues of many callers, each answered
   * as `one` would answer it, in one transaction. Jobs outside any debounce are inserted by one
   * statement (`insertEach`); with a debounced job among them, each goes through the one-job write in
   * order. A job with dependencies is left out (null): it registers with other lanes first, so the
   * caller sends it through `one` on its own, after the others.
   */
  group(inputs: readonly unknown[]): (Result<EnqueueDone> | null)[] {
    const now = this.clock.now();
    const answers: (Result<EnqueueDone> | null)[] = [];
    const specs: { spec: JobSpec; idGiven: boolean; at: number }[] = [];
    for (const input of inputs) {
      const request = parseEnqueue(input);
      const made = request.ok ? this.toSpec(request.value, now) : request;
      // Its payload's schema after the request's own refusals, as `one` checks them.
      const checked = request.ok && made.ok ? this.host.kinds.payload(request.value.kind, request.value.payload) : null;
      if (checked instanceof Promise) {
        // A schema that checks asynchronously: the job goes alone after the group (`one` checks it again).
        checked.catch(() => undefined);
        answers.push(null);
        continue;
      }
      const spec = checked ?? made;
      if (!spec.ok) answers.push(spec);
      // A singleton decides on what its queue holds: alone, after the group's commit, in the group's order.
      else if ((request as { value: EnqueueRequest }).value.singleton !== undefined) answers.push(null);
      else if (spec.value.dependsOn !== null || spec.value.heldPayload) answers.push(null); // alone, after the group's commit
      else {
        specs.push({ spec: spec.value, idGiven: (request as { value: EnqueueRequest }).value.id !== undefined, at: answers.length });
        answers.push(null);
      }
    }
    if (specs.length === 0) return answers;
    const debounced = specs.some(({ spec }) => spec.debounceKey !== null);
    const inserted = this.host.store.transactionSync(() =>
      debounced ? specs.map(({ spec, idGiven }) => this.write(spec, idGiven, now)) : this.host.store.insertEach(specs.map((s) => s.spec), now),
    );
    let inProcess = false;
    specs.forEach(({ spec, at }, i) => {
      const done = inserted[i]!;
      answers[at] = done.ok ? ok({ spec, inserted: done.value }) : done;
      if (done.ok && done.value.status !== "duplicate" && this.host.dispatcher.kinds.includes(spec.kind)) inProcess = true;
    });
    this.host.wake.afterChange(inProcess);
    return answers;
  }

  /**
   * A job of a group that `group` left out (it has dependencies), written on its own after the
   * group's commit: answered as `one` answers it, and whatever it throws is its own answer (500
   * `internal`, nothing of it written), never its group's, whose jobs are written and whose callers
   * must hear so (one without an id who heard a 500 would enqueue again).
   */
  async groupAlone(input: unknown): Promise<Result<EnqueueDone>> {
    try {
      return await this.one(input);
    } catch (error) {
      return fail("internal", `enqueue failed after its group's commit: ${describeError(error)}`);
    }
  }

  /** What an enqueue with dependencies wrote: its answer, and the flush it calls for. */
  private answered(spec: JobSpec, inserted: Result<Inserted>): Result<EnqueueDone> {
    if (!inserted.ok) return inserted;
    if (inserted.value.status === "queued" && inserted.value.cancelling) this.host.singleton.abortCancelled(inserted.value.cancelling);
    if (inserted.value.status !== "duplicate" && inserted.value.status !== "skipped") this.host.wake.afterChange(this.host.dispatcher.kinds.includes(spec.kind));
    return ok({ spec, inserted: inserted.value });
  }

  /**
   * An enqueue that names `singleton` (never started at once: it has a queue). An id that names a job
   * answers as without it (a duplicate, or a conflict); a skipped one changes nothing and counts in no stat.
   */
  private singly(spec: JobSpec, mode: NonNullable<EnqueueRequest["singleton"]>, idGiven: boolean, now: number): Result<EnqueueDone> {
    const inserted = this.host.store.row(spec.id) ? this.write(spec, idGiven, now) : this.host.singleton.apply(spec, mode, () => this.write(spec, idGiven, now));
    if (!inserted.ok) return inserted;
    if (inserted.value.status === "queued" && inserted.value.cancelling) this.host.singleton.abortCancelled(inserted.value.cancelling);
    if (inserted.value.status !== "skipped") this.enqueued(spec, inserted.value.status, now);
    return ok({ spec, inserted: inserted.value });
  }

  /**
   * Registers the remote dependencies of `specs` with their lanes, then writes (`write`, in one
   * transaction, all or nothing) with what they answered. Every spec's id and debounce key is pending
   * meanwhile, as checked before the wait and written after it with no second check: a notice for one of
   * its ids is asked to come again, and on a sharded lane a call that would give one up here (another
   * shard's refusal of an id's reservation, a hand-over of a key) is asked again, not answered as if
   * nothing were coming.
   */
  private async withDependencies<T>(specs: readonly JobSpec[], write: (known: Known) => Result<T>): Promise<Result<T>> {
    const { dependencies, store, shard } = this.host;
    const ids = specs.map((spec) => spec.id);
    const keys = specs.flatMap((spec) => (spec.debounceKey === null ? [] : [spec.debounceKey]));
    dependencies.hold(ids);
    shard.keys.hold(keys);
    try {
      const remote = await dependencies.registerRemote(specs);
      if (!remote.ok) return remote;
      const written = store.allOrNothing(() => write(remote.value.known));
      // Nothing written (refused), or a job there already (a duplicate): what this enqueue registered for it goes again.
      const surplus = dependencies.surplus(remote.value, written.ok);
      if (surplus) await dependencies.withdraw(surplus);
      return written;
    } finally {
      dependencies.done(ids);
      shard.keys.done(keys);
    }
  }

  /**
   * A batch (1..1000 jobs, all or nothing): the specs at one reading of the clock, one insert, one
   * flush. With dependencies among them, their remote ones are registered first (out of turn).
   * `traceparent` (valid, as stored): the trace context of every job of it.
   */
  batch(requests: readonly EnqueueRequest[], traceparent?: string, shards?: number, checked = false): Result<BatchAnswer["results"]> | Promise<Result<BatchAnswer["results"]>> {
    const now = this.clock.now();
    const specs = this.toSpecs(traceparent === undefined && shards === undefined ? requests : requests.map((request) => ({ ...request, traceparent, shards })), now);
    if (!specs.ok) return specs;
    // A batch's body is 1 MiB at most: a payload kept in R2 is enqueued on its own (its upload before its write).
    const held = specs.value.findIndex((spec) => spec.heldPayload);
    if (held >= 0) return fail("payload_too_large", `jobs[${held}]: a batch item's payload is at most ${MAX_PAYLOAD_BYTES} bytes serialized; enqueue a bigger one on its own`, { index: held });
    // Every item's payload, all or nothing, after the request's own refusals (as `one`); a schema that
    // checks asynchronously: out of turn, once they have passed.
    if (!checked) {
      const refused = this.host.kinds.batch(requests);
      if (refused instanceof Promise) return refused.then((r) => r ?? this.batch(requests, traceparent, shards, true));
      if (refused) return refused;
    }
    // The running jobs singleton items asked to cancel: their attempts are aborted once the batch commits.
    const cancelling: string[] = [];
    const flushed = (inserted: Result<BatchAnswer["results"]>) => {
      if (inserted.ok) {
        this.host.singleton.abortCancelled(cancelling);
        this.host.wake.afterChange(specs.value.some((spec) => this.host.dispatcher.kinds.includes(spec.kind)));
      }
      return inserted;
    };
    // With a debounced or singleton job or dependencies among them, each goes through the one-job
    // write in order (a singleton item sees the items before it), in one transaction, all or nothing;
    // without, all in one statement.
    const one = (known: Known) => {
      const results: BatchAnswer["results"] = [];
      for (const [i, spec] of specs.value.entries()) {
        const write = () => (spec.dependsOn !== null ? this.host.dependencies.write(spec, now, known) : this.write(spec, requests[i]!.id !== undefined, now));
        const singleton = requests[i]!.singleton;
        const done = singleton === undefined || this.host.store.row(spec.id) ? write() : this.host.singleton.apply(spec, singleton, write);
        if (!done.ok) return done;
        if (done.value.status === "queued" && done.value.cancelling) cancelling.push(...done.value.cancelling);
        results.push({ id: done.value.status === "queued" ? spec.id : done.value.job.id, status: done.value.status });
      }
      return ok(results);
    };
    if (specs.value.some((spec) => spec.dependsOn !== null)) return this.withDependencies(specs.value, one).then(flushed);
    const oneByOne = specs.value.some((spec, i) => spec.debounceKey !== null || requests[i]!.singleton !== undefined);
    return flushed(oneByOne ? this.host.store.allOrNothing(() => one(new Map())) : this.host.store.insertJobs(specs.value, now));
  }

  /**
   * `now`: the enqueue's one reading of the clock, which its insert writes as `createdAt` too.
   * `keys`: a debounce key's reservation is checked (a sharded batch's job whose key the router did
   * not reserve is not: it debounces on its own shard alone).
   */
  toSpec(request: TracedEnqueueRequest, now: number, keys = true): Result<JobSpec> {
    const { shard } = this.host;
    const shards = shard.count();
    if (shard.index === 0 && shards === 1 && (request.shards ?? 1) === 1) return toSpec(request, now, () => this.entropy.id(), this.host.store.lane, this.host.payloads.heldLimit); // one shard: one comparison
    // A sharded lane's router states the count it routed by: one from a stale count is refused, so
    // that it reads the count again (and reserves the id, if it must, before it comes back).
    if ((request.shards ?? 1) !== shards) return fail("wrong_shard", `lane ${shard.lane} has ${shards} shards; this job was routed for ${request.shards ?? 1}`, { shards });
    // An id made here hashes to this shard, so that a by-id route finds its job without a reservation.
    const spec = toSpec(request, now, () => idOnShard(shard.index, shards, () => this.entropy.id()), this.host.store.lane, this.host.payloads.heldLimit);
    if (!spec.ok) return spec;
    const owned = shard.check(spec.value.queue ?? spec.value.debounceKey ?? spec.value.id, spec.value.id, request.reservation);
    if (!owned.ok) return owned;
    // A debounce key is one queued job on the whole lane: written only where its own shard says (a
    // request whose id names a job here answers as any enqueue of the id, and debounces nothing).
    const key = spec.value.debounceKey;
    if (keys && key !== null && !(request.id !== undefined && this.host.store.row(request.id))) {
      const keyed = shard.checkKey(key, request.keyReservation);
      if (!keyed.ok) return keyed;
    }
    return spec;
  }

  /**
   * The specs of many requests at one reading of the clock, or the first refusal, its place said
   * (`jobs[i]: …`). `keys`: the debounce keys' reservations that jobs carry are checked (a sharded
   * batch's router reserves each key it can; a job without one debounces on its own shard alone).
   */
  toSpecs(requests: readonly TracedEnqueueRequest[], now: number, keys = true): Result<JobSpec[]> {
    const specs: JobSpec[] = [];
    for (const [index, request] of requests.entries()) {
      const spec = this.toSpec(request, now, keys && request.keyReservation !== undefined);
      if (!spec.ok && spec.error.code === "wrong_shard") return spec; // for the router: its details say why
      if (!spec.ok) return fail(spec.error.code, `jobs[${index}]: ${spec.error.message}`, { index });
      specs.push(spec.value);
    }
    return ok(specs);
  }

  /**
   * Starts a new job in its enqueue's turn when nothing can pass it: a due job of an in-process kind
   * outside any queue, its TTL not passed, the lane not paused, a slot free, the dispatcher caught up
   * (no due job waits) and no queued job due since its last look (the last computed wake, never later
   * than the earliest future head while a slot is free, is still ahead). Null: enqueue it queued.
   */
  private startAtOnce(spec: JobSpec, now: number): Result<Inserted> | null {
    const { store, dispatcher, wake } = this.host;
    if (spec.queue !== null || spec.debounceKey !== null || spec.dependsOn !== null || !dispatcher.caughtUp || !dispatcher.startsAlone(spec.kind)) return null;
    const lastWake = wake.lastComputed;
    if (spec.runAt > now || lastWake === undefined || (lastWake !== null && lastWake <= now)) return null;
    const settings = store.settings.read();
    // A full lane, or a TTL already passed: the insert's own condition refuses it (flow/may-start.ts, `newJobMayStart`).
    if (!startsAtOnce(settings)) return null;
    const started = store.insertStarted(spec, DISPATCH_LEASE_MS, dispatcher.heldSlots(), settings.concurrency, this.host.version, now);
    if (!started) return null;
    dispatcher.start(started.job, started.seq);
    wake.leaseTaken(started.job.lease.expiresAt);
    this.host.metrics.noteQuietChange(); // the lease may move no term: the report hears of it all the same
    return ok({ status: "queued", at: started.at });
  }

  /** A job enqueued queued (not started at once): the flush it calls for, if any. */
  private enqueued(job: JobSpec, status: Inserted["status"], now: number): void {
    if (status === "duplicate") return; // a duplicate changes nothing
    if (status === "debounced") {
      if (this.host.payloads.mayHold) this.host.payloads.sweep.soon(); // a replaced payload held in R2 is owed a deletion (migration 30's trigger)
      return this.host.wake.afterChange(this.host.dispatcher.kinds.includes(job.kind)); // its runAt moved
    }
    const inProcess = this.host.dispatcher.kinds.includes(job.kind);
    // A due job of a pull-only kind outside any queue changes no wake term (none counts due pull jobs,
    // and it heads no queue): the alarm stays as it is, unless held claims wait for it (the flush answers them).
    // The metrics report alone hears of it (a flag, while a report waits already).
    const quiet = job.queue === null && job.runAt <= now && !inProcess && this.host.waiters.size === 0;
    if (quiet && this.host.wake.storedAlarm !== undefined) this.host.metrics.noteQuietChange();
    else this.host.wake.afterChange(inProcess);
  }
}
