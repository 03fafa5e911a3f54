/**
 * Shard 0 of a sharded lane as its own schedule fires' routing calls it (schedules/shard-fires.ts):
 * answered in place by the same bodies as its RPC methods, not through a call to itself.
 */
import type { Clock } from "../../shared/clock.js";
import type { SelfShard } from "../schedules/shard-fires.js";
import { DebounceKeyRpc, type DebounceKeyParts } from "./debounce-keys.js";
import { ReaderRpc, type ReaderParts } from "./readers.js";
import { ScheduleRpc, type ScheduleParts } from "./schedules.js";
import { ShardRpc, type LaneInfoSource, type ShardParts } from "./shards.js";

export function selfShard(parts: ShardParts & ScheduleParts & DebounceKeyParts & ReaderParts, life: LaneInfoSource, clock: Clock): SelfShard {
  const shards = new ShardRpc(parts, life, clock);
  const schedules = new ScheduleRpc(parts);
  const keys = new DebounceKeyRpc(parts);
  const readers = new ReaderRpc(parts);
  return {
    shardState: () => shards.shardState(),
    reserve: (id, target, queue, replacing) => shards.reserve(id, target, queue, replacing),
    refuseReservation: (id, nonce) => shards.refuseReservation(id, nonce),
    enqueueFire: (input) => schedules.enqueueFire(input),
    hasJob: (id) => shards.hasJob(id),
    locate: (id) => shards.locate(id),
    reserveKey: (key, target, replacing) => keys.reserveKey(key, target, replacing),
    handOverKey: (key, nonce, target, request) => keys.handOverKey(key, nonce, target, request),
    getJob: (id) => readers.getJob(id),
  };
}
