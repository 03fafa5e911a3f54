/**
 * The debounce keys of a sharded lane's batch (docs/concepts.md "Sharded lanes"): each job's key is
 * reserved on the key's own shard for the job's shard before any shard checks its part, as a single
 * enqueue's is (enqueue-routing.ts); a job whose key's queued job is on another shard is handed over
 * there once every part is checked (that job replaced by it and moved to its shard, answered
 * `debounced`), and written by no shard. A key named by two jobs of one batch, or a job whose id names
 * a job already, is not reserved: its job is written on its own shard, which debounces it alone.
 */
import { ok, type Result } from "../shared/errors.js";
import type { EnqueueRequest } from "../shared/schemas.js";
import { shardOf } from "../shared/shards.js";
import type { EnqueueRouting } from "./enqueue-routing.js";
import type { EnqueuePeer } from "./peer.js";

/**
 * What a job whose key was reserved for the key's own shard carries as its key's nonce (that shard
 * keeps no nonce for itself): so that the shard checks the key at the write, as it checks a single
 * enqueue's, and refuses it if the key was pointed at another shard since.
 */
const KEY_ON_OWN_SHARD = "own";

export type RoutedJob = { job: EnqueueRequest & { id: string }; target: number };

/** The keys' nonces by job, and the jobs whose key's job is on another shard (to hand over). */
export type BatchKeys = { nonces: Map<number, string>; handOver: number[] };

export async function reserveBatchKeys(routes: EnqueueRouting<EnqueuePeer>, lane: string, routed: readonly RoutedJob[], given: readonly EnqueueRequest[], shards: number): Promise<Result<BatchKeys>> {
  const byKey = new Map<string, number[]>();
  for (const [i, { job }] of routed.entries()) {
    if (job.debounce === undefined) continue;
    const at = byKey.get(job.debounce.key);
    if (at) at.push(i);
    else byKey.set(job.debounce.key, [i]);
  }
  const keys: BatchKeys = { nonces: new Map(), handOver: [] };
  for (const [key, at] of byKey) {
    if (at.length > 1) continue;
    const i = at[0]!;
    const { job, target } = routed[i]!;
    if (given[i]!.id !== undefined) {
      const exists = await routes.jobExists(lane, job.id, shards);
      if (!exists.ok) return exists;
      if (exists.value) continue;
    }
    const reserved = await routes.stub(lane, shardOf(key, shards)).reserveKey(key, target, null);
    if (!reserved.ok) return reserved;
    if (reserved.value.status === "other") keys.handOver.push(i);
    else keys.nonces.set(i, reserved.value.nonce ?? KEY_ON_OWN_SHARD);
  }
  return ok(keys);
}

/** The hand-overs, once every part is checked: each job's answer (`debounced`), or its key's nonce where its key's job was gone meanwhile. */
export async function handOverBatchKeys(routes: EnqueueRouting<EnqueuePeer>, lane: string, routed: readonly RoutedJob[], keys: BatchKeys, shards: number): Promise<Result<Map<number, { id: string; status: "debounced" }>>> {
  const handed = new Map<number, { id: string; status: "debounced" }>();
  for (const i of keys.handOver) {
    const { job, target } = routed[i]!;
    const settled = await routes.reserveKey(lane, job.debounce!.key, target, { ...job, shards } as EnqueueRequest, false, shards, null);
    if (!settled.ok) return settled;
    if ("answer" in settled.value) handed.set(i, { id: settled.value.answer.job.id, status: "debounced" });
    else keys.nonces.set(i, settled.value.nonce ?? KEY_ON_OWN_SHARD);
  }
  return ok(handed);
}
