/**
 * Sharded lanes (docs/concepts.md "Sharded lanes"): a lane of N shards is N objects behind one name.
 * Shard 0 is the object named after the lane; shard i (1..N-1) is the object `lane#i` (`#` is never
 * in a lane name). A job lives on the shard its routing key maps to: one function, used by the front
 * worker, the RPC client and the lanes themselves, so that every party computes the same shard.
 */

/** The most shards a lane may have. */
export const MAX_SHARDS = 64;

/** Between a lane's name and a shard's index in the shard's object name. */
export const SHARD_SEPARATOR = "#";

/** FNV-1a (32 bits) of a string's UTF-16 code units: fast, stable across runtimes, evenly spread. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The shard (0..shards-1) of a routing key. With one shard, always 0 (no hashing). */
export function shardOf(key: string, shards: number): number {
  return shards <= 1 ? 0 : fnv1a32(key) % shards;
}

/**
 * A job's routing key: its queue, else its debounce key (a key's replacements meet in one shard),
 * else its id. Every promise that concerns a queue or a key is kept by the one shard that owns it.
 */
export function routingKey(job: { queue?: string | null | undefined; debounce?: { key: string } | null | undefined; id?: string | null | undefined }): string | null {
  return job.queue ?? job.debounce?.key ?? job.id ?? null;
}

/** A new id (from `makeId`) whose own shard is `shard` of `shards` (about `shards` tries): a by-id route finds its job without a reservation. */
export function idOnShard(shard: number, shards: number, makeId: () => string): string {
  for (;;) {
    const id = makeId();
    if (shardOf(id, shards) === shard) return id;
  }
}

/** The object name of shard `index` of `lane`. */
export function shardObjectName(lane: string, index: number): string {
  return index === 0 ? lane : `${lane}${SHARD_SEPARATOR}${index}`;
}

/** The lane and shard index of an object name (`lane` → shard 0; `lane#i` → shard i). */
export function parseShardObjectName(name: string): { lane: string; index: number } {
  const at = name.lastIndexOf(SHARD_SEPARATOR);
  if (at < 0) return { lane: name, index: 0 };
  const index = Number(name.slice(at + 1));
  return Number.isInteger(index) && index > 0 ? { lane: name.slice(0, at), index } : { lane: name, index: 0 };
}

/** A lease token minted by shard i ≥ 1 of a sharded lane carries its shard: `s<i>.`. */
export function tokenPrefix(index: number): string {
  return index === 0 ? "" : `s${index}.`;
}

/** The shard a lease token was minted by: its prefix's; none (or a malformed one): shard 0. */
export function shardOfToken(token: string, shards: number): number {
  const match = /^s([1-9][0-9]?)\./.exec(token);
  if (!match) return 0;
  const index = Number(match[1]);
  return index < shards ? index : 0;
}

/** An even division of a lane-wide amount among shards: the remainder to the first shards, at least 1 each. */
export function divideAmong(total: number, shards: number, index: number): number {
  return Math.max(1, Math.floor(total / shards) + (index < total % shards ? 1 : 0));
}
