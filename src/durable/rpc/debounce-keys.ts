/**
 * What a shard of a sharded lane answers about debounce keys (shards/key-state.ts, shards/key-moves.ts):
 * the bodies of lane.ts's methods. A call about a key whose move this shard owes finishes it first.
 */
import { z } from "zod";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { shardOf } from "../../shared/shards.js";
import { Name } from "../../shared/schemas.js";
import { parse, parseEnqueue, parseId, ReservationNonce as Nonce, ShardIndex } from "../input.js";
import type { HandOver, KeyMoves } from "../shards/key-moves.js";
import type { KeyReservation } from "../shards/key-state.js";
import type { ShardState } from "../shards/shard-state.js";
import type { KindChecks } from "../kinds/kind-checks.js";

const Key = Name;
/** A moved job's row and its dependents' rows, as JSON text (its sender's own `SELECT *`). */
const RowText = z.string().min(2).max(4 * 1024 * 1024);

/** The parts debounce keys' calls reach. */
export interface DebounceKeyParts {
  readonly shard: ShardState;
  readonly keyMoves: KeyMoves;
  /** The declared kinds' payload checks (kinds/kind-checks.ts). */
  readonly kinds: KindChecks;
}

export class DebounceKeyRpc {
  constructor(private readonly parts: DebounceKeyParts) {}

  /** On the key's own shard: where a write of `key` for shard `target` goes (`replacing`: a nonce its shard gave up). */
  async reserveKey(key: unknown, target: unknown, replacing?: unknown): Promise<Result<KeyReservation>> {
    const name = parse(Key, key);
    if (!name.ok) return name;
    const shard = parse(ShardIndex, target);
    if (!shard.ok) return shard;
    const replaced = replacing === undefined || replacing === null ? ok(null) : parse(Nonce, replacing);
    if (!replaced.ok) return replaced;
    const { shard: state, keyMoves } = this.parts;
    const shards = state.count();
    if (shardOf(name.value, shards) !== state.index) return fail("wrong_shard", `shard ${state.index} of lane ${state.lane} is not debounce key ${name.value}'s own (${shards} shards)`, { shards });
    const owed = keyMoves.pendingKey(name.value);
    if (owed) {
      const done = await keyMoves.deliver(owed);
      if (!done.ok) return done;
    }
    // A job of the key being written here counts as held: a write for another shard hands it over (asked again until it is written).
    return ok(state.keys.reserve(name.value, shard.value, state.index, replaced.value, keyMoves.holds(name.value) || state.keys.isWriting(name.value)));
  }

  /** On the shard a key's reservation names: its queued job replaced by `request` and moved to `target`, or `nonce` given up. */
  async handOverKey(key: unknown, nonce: unknown, target: unknown, request: unknown): Promise<Result<HandOver>> {
    const name = parse(Key, key);
    if (!name.ok) return name;
    const given = nonce === null ? ok(null) : parse(Nonce, nonce);
    if (!given.ok) return given;
    const shard = parse(ShardIndex, target);
    if (!shard.ok) return shard;
    // The job handed over keeps its own id: the request's (a schedule's fire's `<name>@<T>`, say) is none of its spec.
    const { id: _id, ...spec } = (typeof request === "object" && request !== null ? request : {}) as Record<string, unknown>;
    const parsed = parseEnqueue(spec);
    if (!parsed.ok) return parsed;
    if (parsed.value.debounce?.key !== name.value) return fail("invalid_request", `invalid request: the request is not of debounce key ${name.value}`);
    // It replaces the key's job here without passing an enqueue: a declared kind's payload is checked
    // here, after the request's own refusals (400 `invalid_request`, 413), as an enqueue orders them.
    const made = this.parts.keyMoves.spec(parsed.value);
    if (!made.ok) return made;
    const refused = await this.parts.kinds.payload(parsed.value.kind, parsed.value.payload);
    if (refused) return refused;
    return this.parts.keyMoves.handOver(name.value, given.value, shard.value, parsed.value);
  }

  /** On the receiving shard: a moved job taken once. */
  acceptKeyMove(nonce: unknown, key: unknown, row: unknown, dependents: unknown, from: unknown): Result<Job | null> {
    const moved = parse(Nonce, nonce);
    if (!moved.ok) return moved;
    const name = parse(Key, key);
    if (!name.ok) return name;
    const rowText = parse(RowText, row);
    if (!rowText.ok) return rowText;
    const dependentsText = parse(RowText, dependents);
    if (!dependentsText.ok) return dependentsText;
    const sender = parse(ShardIndex, from);
    if (!sender.ok) return sender;
    return this.parts.keyMoves.accept(moved.value, name.value, rowText.value, dependentsText.value, sender.value);
  }

  /** On the key's own shard: its job now on `to` under `nonce`, if its reservation is still `from`. */
  advanceKey(key: unknown, from: unknown, to: unknown, nonce: unknown): Result<null> {
    const name = parse(Key, key);
    if (!name.ok) return name;
    const old = parse(Nonce, from);
    if (!old.ok) return old;
    const shard = parse(ShardIndex, to);
    if (!shard.ok) return shard;
    const moved = parse(Nonce, nonce);
    if (!moved.ok) return moved;
    this.parts.shard.keys.advance(name.value, old.value, shard.value, moved.value, this.parts.shard.index);
    return ok(null);
  }

  /** On a job id's own shard: its reservation for `from` now for `to` (its job moved there). */
  repointId(id: unknown, from: unknown, to: unknown): Result<null> {
    const name = parseId(id);
    if (!name.ok) return name;
    const sender = parse(ShardIndex, from);
    if (!sender.ok) return sender;
    const shard = parse(ShardIndex, to);
    if (!shard.ok) return shard;
    this.parts.shard.repoint(name.value, sender.value, shard.value);
    return ok(null);
  }
}
