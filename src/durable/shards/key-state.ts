/**
 * A debounce key on a sharded lane (docs/concepts.md "Sharded lanes"): one queued job per key on the
 * whole lane, whatever the queues of its requests, as in one object. The key's own shard H (its hash)
 * knows where that job may be: no row, on H itself (or nowhere); a row, on the shard it names, whose
 * writes of the key carry the row's nonce. A shard gives a nonce up (refused, for good) when it has no
 * queued job of the key to keep, or when it moves that job to the shard of a newer request's queue
 * (key-moves.ts), so that a write under a nonce given up, late or left by a crash, is refused. The
 * same pattern as the reservations of ids (shard-state.ts).
 */
import { fail, ok, type Result } from "../../shared/errors.js";
import { shardOf } from "../../shared/shards.js";
import * as K from "./key-statements.js";
import type { KeyReservation } from "../../routing/peer.js";

/** A key's own shard's answer to the router, declared where the router reads it (routing/peer.ts). */
export type { KeyReservation };

/** Details of a write of a key refused for its reservation: the key's job is on another shard (`keyReservedFor`: perhaps on its way there from this shard, which the caller then asks to deliver it), or the nonce carried was given up. */
export type KeyRefusal = { shards: number; key: true; keyReservedFor?: number };

export class KeyState {
  private readonly sql: SqlStorage;
  /** Keys whose jobs are being written here after their reservations were checked (their dependencies registered elsewhere first), by how many writes. */
  private readonly writing = new Map<string, number>();

  constructor(storage: DurableObjectStorage) {
    this.sql = storage.sql;
  }

  /**
   * On the key's own shard `index`: where a write of `key` for shard `target` goes. `replacing`: a
   * nonce its shard gave up (taken over only if still the one here). `heldHere`: this shard holds the
   * key's queued job (then there is no row).
   */
  reserve(key: string, target: number, index: number, replacing: string | null, heldHere: boolean): KeyReservation {
    const row = this.row(key);
    if (row && row.nonce !== replacing) return row.shard === target ? { status: "same", nonce: row.nonce } : { status: "other", shard: row.shard, nonce: row.nonce };
    if (!row && heldHere) return target === index ? { status: "same", nonce: null } : { status: "other", shard: index, nonce: null };
    if (target === index) {
      this.sql.exec(K.DROP_KEY_RESERVATION_SQL, key);
      return { status: "new", nonce: null };
    }
    const nonce = crypto.randomUUID();
    this.point(key, target, nonce);
    return { status: "new", nonce };
  }

  /**
   * Refuses (`wrong_shard`) a write of `key` here: while this shard moves the key's job to another
   * (key-moves.ts; the key's own shard may not point there yet); on its own shard, one whose job is
   * reserved elsewhere; elsewhere, one without a nonce or under one given up.
   */
  check(key: string, nonce: string | undefined, index: number, shards: number): Result<null> {
    const moving = this.sql.exec<{ to_shard: number }>(K.KEY_MOVING_TO_SQL, key).toArray()[0];
    if (moving) return fail("wrong_shard", `debounce key ${key}'s job is moving to shard ${moving.to_shard}`, { shards, key: true, keyReservedFor: moving.to_shard } satisfies KeyRefusal);
    if (shardOf(key, shards) === index) {
      const row = this.row(key);
      if (row === undefined || row.shard === index) return ok(null);
      return fail("wrong_shard", `debounce key ${key} is held by shard ${row.shard}`, { shards, key: true, keyReservedFor: row.shard } satisfies KeyRefusal);
    }
    if (nonce === undefined) return fail("wrong_shard", `debounce key ${key} is not reserved on its own shard for shard ${index}`, { shards, key: true } satisfies KeyRefusal);
    if (this.refused(key, nonce)) return fail("wrong_shard", `the reservation of debounce key ${key} for shard ${index} was given up`, { shards, key: true } satisfies KeyRefusal);
    return ok(null);
  }

  /** Gives `nonce` up for good (this shard keeps no queued job of `key` under it). */
  refuse(key: string, nonce: string): void {
    this.sql.exec(K.REFUSE_KEY_SQL, key, nonce);
  }

  /** On the key's own shard `index`: the key's job now on `to` under `nonce`, if the row still has `from` (a move delivered again changes nothing). */
  advance(key: string, from: string, to: number, nonce: string, index: number): void {
    if (to === index) this.sql.exec(K.DROP_KEY_RESERVATION_UNDER_SQL, key, from);
    else this.sql.exec(K.ADVANCE_KEY_RESERVATION_SQL, key, to, nonce, from);
  }

  /** The key's job is on `shard` under `nonce` (on its own shard). */
  point(key: string, shard: number, nonce: string): void {
    this.sql.exec(K.POINT_KEY_SQL, key, shard, nonce);
  }

  /** Holds keys as being written here until `done`: meanwhile this shard keeps them (a hand-over is asked again). */
  hold(keys: readonly string[]): void {
    for (const key of keys) this.writing.set(key, (this.writing.get(key) ?? 0) + 1);
  }

  done(keys: readonly string[]): void {
    for (const key of keys) {
      const n = (this.writing.get(key) ?? 1) - 1;
      if (n === 0) this.writing.delete(key);
      else this.writing.set(key, n);
    }
  }

  /** Whether a job of `key` is being written here now (`hold`). */
  isWriting(key: string): boolean {
    return this.writing.has(key);
  }

  clear(): void {
    this.sql.exec(K.CLEAR_KEY_RESERVATIONS_SQL);
    this.sql.exec(K.CLEAR_REFUSED_KEYS_SQL);
  }

  private row(key: string): { shard: number; nonce: string } | undefined {
    return this.sql.exec<{ shard: number; nonce: string }>(K.KEY_RESERVATION_SQL, key).toArray()[0];
  }

  private refused(key: string, nonce: string): boolean {
    return this.sql.exec(K.KEY_REFUSED_SQL, key, nonce).toArray().length > 0;
  }
}
