/**
 * This object's place in its lane (docs/concepts.md "Sharded lanes"): its index (from its object
 * name), the lane's shard count as stored here, whether it owns a routing key, and the reservations of
 * ids whose jobs live on other shards. A lane of one shard (every lane unless resharded) pays one
 * comparison per enqueue and never touches the reservations.
 */
import { fail, ok, type Result } from "../../shared/errors.js";
import { shardOf } from "../../shared/shards.js";

/** What a reservation answers: `new` or `same` (go on to the target), `conflict` (the id is a job here), or `other` (reserved for another shard). */
export type Reservation = { status: "new" | "same" | "conflict" } | { status: "other"; shard: number };

/** Where an id's job is, as its id's shard knows: here (this index), another shard (its reservation), or nowhere (null). */
export type Located = { shard: number | null };

export class ShardState {
  private readonly sql: SqlStorage;
  private cachedCount: number | null = null;

  constructor(
    storage: DurableObjectStorage,
    readonly lane: string,
    readonly index: number,
  ) {
    this.sql = storage.sql;
  }

  /** The lane's shard count as this object stores it (1 until told otherwise). */
  count(): number {
    this.cachedCount ??= this.sql.exec<{ shards: number }>(`SELECT shards FROM lane WHERE id = 1`).one().shards;
    return this.cachedCount;
  }

  setCount(shards: number): void {
    this.sql.exec(`UPDATE lane SET shards = ?1 WHERE id = 1`, shards);
    this.sql.exec(`DELETE FROM reservations`);
    this.cachedCount = shards;
  }

  /** Whether this shard owns a routing key under its own count (an unconfigured `lane#i` owns none). */
  owns(key: string): boolean {
    return shardOf(key, this.count()) === this.index;
  }

  /**
   * Refuses (typed `wrong_shard`) a job whose routing key is not this shard's, or whose id is reserved
   * here for another shard (the caller checks that shard, and drops a reservation whose job is gone).
   */
  check(key: string, id: string): Result<null> {
    const shards = this.count();
    if (shards === 1 && this.index === 0) return ok(null);
    if (!this.owns(key)) return fail("wrong_shard", `shard ${this.index} of lane ${this.lane} does not own ${key} (${shards} shards)`, { shards });
    const reserved = this.reservedFor(id);
    if (reserved !== null && reserved !== this.index) {
      return fail("wrong_shard", `job id ${id} is reserved for shard ${reserved} of lane ${this.lane}`, { shards, reservedFor: reserved });
    }
    return ok(null);
  }

  reservedFor(id: string): number | null {
    return this.sql.exec<{ shard: number }>(`SELECT shard FROM reservations WHERE id = ?1`, id).toArray()[0]?.shard ?? null;
  }

  /**
   * Reserves `id` for the job's shard `target` (this is the id's own shard). `replacing`: the shard of a
   * reservation the caller found without a job, overwritten only if it still says so.
   */
  reserve(id: string, target: number, queue: string | null, jobHere: boolean, replacing: number | null): Reservation {
    if (jobHere) return { status: "conflict" };
    const reserved = this.reservedFor(id);
    if (reserved === target) return { status: "same" };
    if (reserved !== null && reserved !== replacing) return { status: "other", shard: reserved };
    this.sql.exec(`INSERT INTO reservations (id, shard, queue) VALUES (?1, ?2, ?3) ON CONFLICT (id) DO UPDATE SET shard = ?2, queue = ?3`, id, target, queue);
    return { status: "new" };
  }

  /** Drops the reservation of `id` if it still names `shard` (its job is gone). */
  drop(id: string, shard: number): void {
    this.sql.exec(`DELETE FROM reservations WHERE id = ?1 AND shard = ?2`, id, shard);
  }
}
