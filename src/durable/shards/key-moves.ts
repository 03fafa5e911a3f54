/**
 * The move of a debounce key's queued job from one shard to another (docs/concepts.md "Sharded
 * lanes"): a newer request of the key whose queue is on another shard replaces the job, as one object
 * would, and the job goes to that queue's shard. The sending shard S, in one transaction: replaces the
 * job in place (debounce.ts, counted there as debounced), takes it and its `dependents` rows out (its
 * `has_dependents` cleared first, so that no "deleted before it settled" notice is written), gives up
 * the key's old nonce, points its own reservations (of the id, when S is the id's own shard; of the key,
 * when S is the key's) at the receiver T, and keeps the move in `key_moves`. Then it delivers: T takes
 * the job once (by the move's nonce), with the same counts as one lane's debounce; the id's own shard
 * X (when a third) and the key's own shard H point at T. The move row goes only once all have
 * answered; the router delivers at once, the alarm (a wake term, a step of its own) after a crash.
 * While a move is owed, its job's id answers as an existing job on S, and a call on S about its key
 * finishes the move first.
 */
import type { Clock } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { log } from "../../shared/log.js";
import { backoffCeilingMs } from "../../shared/backoff.js";
import { OUTBOX_BACKOFF_BASE_MS, OUTBOX_BACKOFF_MAX_MS } from "../../shared/defaults.js";
import { shardObjectName, shardOf } from "../../shared/shards.js";
import type { Debouncer } from "../flow/debounce.js";
import { DEBOUNCE_TARGET_SQL } from "../flow/debounce-statements.js";
import { toSpec, type JobSpec } from "../../shared/job-spec.js";
import type { TracedEnqueueRequest } from "../input.js";
import { firstJobRow, toJob, type JobRow } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import { keepUpkeep, type Snap } from "../store/upkeep.js";
import type { ShardState } from "./shard-state.js";
import * as K from "./key-statements.js";
import * as R from "./reservation-statements.js";
import type { HandOver } from "../../routing/peer.js";

/** How long the router has to deliver a move it made before the alarm does (a delivery twice is harmless). */
export const KEY_MOVE_IN_FLIGHT_MS = 5_000;
/** How many owed moves one alarm delivers at most (the rest are due at once: the alarm comes back). */
const KEY_MOVE_BATCH = 16;

/** A move as `key_moves` keeps it. */
export type KeyMove = {
  nonce: string; key: string; job_id: string; to_shard: number; key_shard: number; old_nonce: string | null; id_shard: number;
  row: string; dependents: string; attempts: number;
};

/** A shard's answer to a hand-over of a key, declared where the router reads it (routing/peer.ts). */
export type { HandOver };

/** The calls a move makes on the other shards of its lane (lane.ts's RPC methods). */
export interface KeyPeer {
  acceptKeyMove(nonce: string, key: string, row: string, dependents: string, from: number): Promise<Result<Job | null>>;
  repointId(id: string, from: number, to: number): Promise<Result<null>>;
  advanceKey(key: string, from: string, to: number, nonce: string): Promise<Result<null>>;
}

export interface KeyMovesHost {
  readonly store: JobStore;
  readonly shard: ShardState;
  readonly debouncer: Debouncer;
  /** Shard `index` of this lane. */
  peer(index: number): KeyPeer;
  /** Rows changed (a job arrived, a move owed or done): flush. */
  changed(): void;
  /** A moved job brought its dependents' rows: its settlement here writes notices, so the outbox is a term. */
  dependentsArrived(): void;
}

export class KeyMoves {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly host: KeyMovesHost,
  ) {
    this.sql = storage.sql;
  }

  /** The move owed of `key`'s job, if any. */
  pendingKey(key: string): KeyMove | undefined {
    return this.sql.exec<KeyMove>(K.KEY_MOVE_OF_SQL, key).toArray()[0];
  }

  /** Whether the job `id` is being moved from here (it exists, on its way). */
  pendingId(id: string): boolean {
    return this.sql.exec(K.JOB_MOVING_SQL, id).toArray().length > 0;
  }

  /** Whether this shard holds `key`'s queued, not yet started job. */
  holds(key: string): boolean {
    return firstJobRow(this.sql.exec(DEBOUNCE_TARGET_SQL, key)) !== undefined;
  }

  /**
   * On the shard a key's reservation names (`nonce`; null: the key's own shard, no row there): its
   * queued job replaced by `request` and moved to `target`, all in one transaction; or, holding none,
   * `nonce` given up. A move owed of the key is finished first (`retry`: the caller asks its key's own shard again);
   * `target` this shard itself only finishes that move.
   */
  async handOver(key: string, nonce: string | null, target: number, request: TracedEnqueueRequest): Promise<Result<HandOver>> {
    const owed = this.pendingKey(key);
    if (owed) {
      const done = await this.deliver(owed);
      return done.ok ? ok({ status: "retry" }) : done;
    }
    const { shard } = this.host;
    // A job of the key being written here (checked before its dependencies were registered): its nonce
    // is not given up under it; asked again, the job is here to move.
    if (shard.keys.isWriting(key)) return ok({ status: "retry" });
    // To this shard itself: a caller refused here while a move was owed had it finished (above); nothing to hand over.
    if (target === shard.index) return ok({ status: "retry" });
    const move = this.host.store.transactionSync(() => this.take(key, nonce, target, request));
    if (!move.ok) return move;
    if (move.value === null) return ok({ status: "refused" });
    this.host.changed();
    const done = await this.deliver(move.value);
    return done.ok ? ok({ status: "moved", id: move.value.job_id, job: done.value }) : done;
  }

  /** The job a hand-over's `request` makes at `now`: its own refusals (400 `invalid_request`, 413), before anything else is checked. */
  spec(request: TracedEnqueueRequest, now = this.clock.now()): Result<JobSpec> {
    return toSpec(request, now, () => crypto.randomUUID(), this.host.store.lane);
  }

  /** The transaction of a hand-over: the move made and kept, or null (no queued job: `nonce` given up). */
  take(key: string, nonce: string | null, target: number, request: TracedEnqueueRequest): Result<KeyMove | null> {
    const { shard, debouncer } = this.host;
    const now = this.clock.now();
    const shards = shard.count();
    // Bad input changes nothing: the request's spec first.
    const spec = this.spec(request, now);
    if (!spec.ok) return spec;
    const held = firstJobRow(this.sql.exec(DEBOUNCE_TARGET_SQL, key));
    if (!held) {
      if (nonce !== null) shard.keys.refuse(key, nonce);
      return ok(null);
    }
    // A debounced job has no dependencies of its own (a request cannot have both): never blocked.
    if (held.blocked > 0) return fail("internal", `the queued job ${held.id} of debounce key ${key} is blocked: it cannot move`);
    const replaced = debouncer.replace(spec.value, now);
    if (!replaced?.ok) return fail("internal", `the queued job ${held.id} of debounce key ${key} could not be replaced`);
    const row = this.sql.exec<Record<string, SqlStorageValue>>(K.JOB_ROW_SQL, held.seq).one();
    const dependents = this.sql.exec(K.DEPENDENT_ROWS_SQL, held.seq).toArray();
    // Its dependents go with it: no notice of a deletion is owed to them.
    this.sql.exec(K.CLEAR_HAS_DEPENDENTS_SQL, held.seq);
    this.sql.exec(K.DROP_DEPENDENTS_SQL, held.seq);
    this.sql.exec(K.DROP_JOB_SQL, held.seq);
    keepUpkeep(this.sql, [{ old: row as unknown as Snap, new: null }], null);
    const idShard = shardOf(held.id, shards);
    const keyShard = shardOf(key, shards);
    const moved = crypto.randomUUID();
    if (idShard === shard.index) this.sql.exec(R.RESERVE_SQL, held.id, target, spec.value.queue, crypto.randomUUID());
    if (keyShard === shard.index) shard.keys.point(key, target, moved);
    const move: KeyMove = { nonce: moved, key, job_id: held.id, to_shard: target, key_shard: keyShard, old_nonce: nonce, id_shard: idShard, row: JSON.stringify(row), dependents: JSON.stringify(dependents), attempts: 0 };
    this.sql.exec(
      K.OWE_KEY_MOVE_SQL,
      move.nonce, key, held.id, target, keyShard, nonce, idShard, move.row, move.dependents, now + KEY_MOVE_IN_FLIGHT_MS, now,
    );
    return ok(move);
  }

  /**
   * Delivers a move, each step idempotent: the receiver takes the job (before the key's own shard
   * points at it, so that no write of the key reaches it first), the id's own shard (a third one)
   * points at it, the key's own shard points at it, then the row goes. The job as taken (null: taken before).
   */
  async deliver(move: KeyMove): Promise<Result<Job | null>> {
    const { shard } = this.host;
    const from = shard.index;
    const accepted = await this.host.peer(move.to_shard).acceptKeyMove(move.nonce, move.key, move.row, move.dependents, from);
    if (!accepted.ok) return accepted;
    if (move.id_shard !== from && move.id_shard !== move.to_shard) {
      const repointed = await this.host.peer(move.id_shard).repointId(move.job_id, from, move.to_shard);
      if (!repointed.ok) return repointed;
    }
    if (move.key_shard !== from && move.old_nonce !== null) {
      const advanced = await this.host.peer(move.key_shard).advanceKey(move.key, move.old_nonce, move.to_shard, move.nonce);
      if (!advanced.ok) return advanced;
    }
    // The old nonce is given up only now: before, a write refused under it would have the key's own
    // shard take the key over while that shard still points here, and the moving job be forgotten.
    this.host.store.transactionSync(() => {
      if (move.old_nonce !== null) shard.keys.refuse(move.key, move.old_nonce);
      this.sql.exec(K.DROP_KEY_MOVE_SQL, move.nonce);
    });
    this.host.changed();
    return accepted;
  }

  /**
   * On the receiving shard: the moved job inserted once (by the move's nonce), with its dependents'
   * rows; counted as one lane counts a debounce (its first enqueue counted by the sender, so not
   * again here). A reservation of its id here for the sender (this being its id's own shard) goes.
   */
  accept(nonce: string, key: string, rowText: string, dependentsText: string, from: number): Result<Job | null> {
    const { store, shard } = this.host;
    const row = JSON.parse(rowText) as Record<string, unknown>;
    if (row.debounce_key !== key || typeof row.id !== "string") return fail("invalid_request", `invalid request: the moved job is not of debounce key ${key}`);
    const id = row.id;
    const job = store.transactionSync(() => {
      if (this.sql.exec(K.KEY_ARRIVED_SQL, nonce).toArray().length > 0) return null;
      // A queued job of the key written here without its reservation (a sharded batch's) keeps its
      // place as a job of its own, no longer of the key: the one the key's requests were answered with arrives.
      this.sql.exec(K.UNKEY_QUEUED_SQL, key);
      const { seq: _seq, ...columns } = row;
      const names = Object.keys(columns);
      const seq = this.sql.exec<{ seq: number }>(K.insertMovedJobSql(names), ...(names.map((n) => columns[n]) as SqlStorageValue[])).one().seq;
      const dependents = JSON.parse(dependentsText) as Record<string, SqlStorageValue>[];
      if (dependents.length > 0) this.host.dependentsArrived();
      for (const dependent of dependents) {
        const fields = Object.keys(dependent);
        const values = fields.map((f) => (f === "dep_seq" ? seq : dependent[f]!));
        this.sql.exec(K.insertMovedDependentSql(fields), ...values);
      }
      const arrived = this.sql.exec<JobRow>(K.JOB_ROW_SQL, seq).one();
      keepUpkeep(this.sql, [{ old: null, new: arrived }], this.clock.now());
      this.sql.exec(K.UNCOUNT_ARRIVAL_SQL);
      this.sql.exec(K.KEY_ARRIVAL_SQL, nonce);
      shard.repoint(id, from, shard.index);
      return toJob(arrived, store.lane);
    });
    if (job !== null) this.host.changed();
    return ok(job);
  }

  /** When the next owed move is due (null: none); a wake term. */
  nextAt(): number | null {
    return this.sql.exec<{ at: number | null }>(K.NEXT_KEY_MOVE_AT_SQL).one().at;
  }

  /** The alarm's step: the owed moves due, delivered; one that fails is due again after a backoff. */
  async deliverDue(): Promise<void> {
    const now = this.clock.now();
    const due = this.sql.exec<KeyMove>(K.DUE_KEY_MOVES_SQL, now, KEY_MOVE_BATCH).toArray();
    for (const move of due) this.sql.exec(K.KEY_MOVE_ATTEMPTED_SQL, move.nonce, now + KEY_MOVE_IN_FLIGHT_MS);
    await Promise.all(due.map(async (move) => {
      const done = await this.deliver(move).catch((error: unknown) => fail("internal", describeError(error)));
      if (done.ok) return;
      const backoff = backoffCeilingMs(move.attempts + 1, OUTBOX_BACKOFF_BASE_MS, OUTBOX_BACKOFF_MAX_MS);
      this.sql.exec(K.KEY_MOVE_BACKOFF_SQL, move.nonce, this.clock.now() + backoff);
      log({ event: "lane.key_move_failed", lane: shardObjectName(this.host.store.lane, this.host.shard.index), key: move.key, jobId: move.job_id, to: move.to_shard, message: done.error.message });
    }));
    if (due.length > 0) this.host.changed();
  }
}
