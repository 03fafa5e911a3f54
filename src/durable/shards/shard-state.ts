/**
 * This object's place in its lane (docs/concepts.md "Sharded lanes"): its index (from its object
 * name), the lane's shard count as stored here, whether it owns a routing key, and the reservations of
 * ids whose jobs live on other shards. A lane of one shard (every lane unless resharded) pays one
 * comparison per enqueue and never touches the reservations.
 */
import { fail, ok, type Result } from "../../shared/errors.js";
import { shardOf } from "../../shared/shards.js";
import { KeyState } from "./key-state.js";
import * as R from "./reservation-statements.js";
import type { Located, Refusal, Reservation } from "../../routing/peer.js";

/** A shard's answers to the router about ids, declared where the router reads them (routing/peer.ts). */
export type { Located, Refusal, Reservation };

export class ShardState {
  private readonly sql: SqlStorage;
  private cachedCount: number | null = null;
  /** The debounce keys this shard reserves or gave up (key-state.ts). */
  readonly keys: KeyState;

  constructor(
    storage: DurableObjectStorage,
    readonly lane: string,
    readonly index: number,
  ) {
    this.sql = storage.sql;
    this.keys = new KeyState(storage);
  }

  /** The lane's shard count as this object stores it (1 until told otherwise). */
  count(): number {
    this.cachedCount ??= this.sql.exec<{ shards: number }>(R.SHARD_COUNT_SQL).one().shards;
    return this.cachedCount;
  }

  setCount(shards: number): void {
    this.sql.exec(R.SET_SHARD_COUNT_SQL, shards);
    this.sql.exec(R.CLEAR_RESERVATIONS_SQL);
    this.sql.exec(R.CLEAR_REFUSED_RESERVATIONS_SQL);
    this.keys.clear();
    this.cachedCount = shards;
  }

  /** Whether this shard owns a routing key under its own count (an unconfigured `lane#i` owns none). */
  owns(key: string): boolean {
    return shardOf(key, this.count()) === this.index;
  }

  /**
   * Refuses (typed `wrong_shard`) a job whose routing key is not this shard's; on the id's own shard,
   * one whose id is reserved here for another shard (the caller has that shard refuse the reservation,
   * then drops it); on any other shard, one that carries no reservation, or one this shard has refused
   * (the caller reserves the id again).
   */
  check(key: string, id: string, reservation?: string): Result<null> {
    const shards = this.count();
    if (shards === 1 && this.index === 0) return ok(null);
    if (!this.owns(key)) return fail("wrong_shard", `shard ${this.index} of lane ${this.lane} does not own ${key} (${shards} shards)`, { shards });
    if (shardOf(id, shards) !== this.index) {
      if (reservation === undefined) return fail("wrong_shard", `job id ${id} is not reserved on its own shard for shard ${this.index} of lane ${this.lane}`, { shards });
      if (this.refused(id, reservation)) return fail("wrong_shard", `the reservation of job id ${id} for shard ${this.index} of lane ${this.lane} was taken over`, { shards });
      return ok(null);
    }
    const reserved = this.reservedFor(id);
    if (reserved !== null && reserved !== this.index) {
      return fail("wrong_shard", `job id ${id} is reserved for shard ${reserved} of lane ${this.lane}`, { shards, reservedFor: reserved });
    }
    return ok(null);
  }

  /** A write of debounce key `key` on a sharded lane: refused unless the key's reservation sends it here (key-state.ts). */
  checkKey(key: string, nonce: string | undefined): Result<null> {
    const shards = this.count();
    return shards === 1 && this.index === 0 ? ok(null) : this.keys.check(key, nonce, this.index, shards);
  }

  /** The reservation of `id` for shard `from` now for `to` (its job moved there); any other left as it is. */
  repoint(id: string, from: number, to: number): void {
    if (to === this.index) this.sql.exec(R.DROP_RESERVATION_FOR_SQL, id, from);
    else this.sql.exec(R.REPOINT_RESERVATION_SQL, id, from, to);
  }

  reservedFor(id: string): number | null {
    return this.sql.exec<{ shard: number }>(R.RESERVED_SHARD_SQL, id).toArray()[0]?.shard ?? null;
  }

  /**
   * Reserves `id` for the job's shard `target` (this is the id's own shard). `replacing`: the nonce of
   * a reservation its shard has refused (it holds no job of the id and will write none under it), taken
   * over only if it is still the one here (even for the same shard: a new nonce, since writes under the
   * old one are refused there). A reservation for this shard itself is no row: taking one over drops it.
   * `writing`: the id's job is being written here now (its dependencies registered elsewhere first):
   * `busy`, ask again, for another shard (it may be a job here in a moment; handed away now, it would
   * be written on both).
   */
  reserve(id: string, target: number, queue: string | null, jobHere: boolean, replacing: string | null, writing = false): Reservation {
    if (jobHere) return { status: "conflict" };
    if (writing && target !== this.index) return { status: "busy" };
    const row = this.sql.exec<{ shard: number; nonce: string }>(R.RESERVATION_SQL, id).toArray()[0];
    const refused = row !== undefined && row.nonce === replacing;
    if (row && !refused && row.shard === target) return { status: "same", nonce: row.nonce };
    if (row && !refused) return { status: "other", shard: row.shard, nonce: row.nonce };
    if (target === this.index) {
      this.sql.exec(R.DROP_RESERVATION_SQL, id);
      return { status: "new", nonce: null };
    }
    const nonce = crypto.randomUUID();
    this.sql.exec(R.RESERVE_SQL, id, target, queue, nonce);
    return { status: "new", nonce };
  }

  /**
   * On a shard a reservation names: its job is here, or it is refused for good, in one turn, so that
   * a write carrying it that comes later is refused and the id's own shard may hand the id to another.
   * `writing`: the id's job is being written here now (its dependencies registered elsewhere first).
   */
  refuse(id: string, nonce: string, jobHere: boolean, writing: boolean): Refusal {
    if (jobHere) return { status: "job" };
    if (writing) return { status: "busy" };
    this.sql.exec(R.REFUSE_RESERVATION_SQL, id, nonce);
    return { status: "refused" };
  }

  private refused(id: string, nonce: string): boolean {
    return this.sql.exec(R.RESERVATION_REFUSED_SQL, id, nonce).toArray().length > 0;
  }
}
