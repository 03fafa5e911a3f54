/**
 * A sharded lane's batch whose jobs wait for jobs (docs/concepts.md "Sharded lanes"): its parts are
 * written in waves, each job after the jobs of other shards it waits for, so that they exist when it
 * registers; and its dependencies outside it are looked up first, a bounded number of calls (one per
 * lane and shard asked), so that a missing one refuses the batch before any shard writes.
 */
import { fail, ok, type Result } from "../shared/errors.js";
import type { JobRef } from "../shared/job.js";
import type { EnqueueRequest } from "../shared/schemas.js";
import { shardOf } from "../shared/shards.js";
import type { ShardPeer } from "./peer.js";

/** The most waves a sharded batch is written in: a deeper chain of dependencies between shards is refused (400). */
export const MAX_BATCH_WAVES = 32;

/** One wave: each shard's part (the batch's indexes, in batch order). */
export type Wave = { shard: number; at: number[] }[];

type Routed = { job: EnqueueRequest; target: number };

/**
 * The batch's job (before job `i`) that `dep` names, when it will exist once written (a debounced
 * job may replace another instead: it counts as outside the batch).
 */
function earlierJob(lane: string, dep: { lane?: string; id: string }, i: number, position: ReadonlyMap<string, number>): number | undefined {
  const j = (dep.lane ?? lane) === lane ? position.get(dep.id) : undefined;
  return j !== undefined && j < i ? j : undefined;
}

/** Where each batch id that another job of the batch may wait for is first written. */
function positions(routed: readonly Routed[]): Map<string, number> {
  const position = new Map<string, number>();
  routed.forEach(({ job }, i) => {
    if (job.id !== undefined && job.debounce === undefined && !position.has(job.id)) position.set(job.id, i);
  });
  return position;
}

/**
 * The waves of a batch (null: none has dependencies, one wave as ever). A job's wave is after every
 * earlier job of another shard it waits for, and never before an earlier job of its own shard (so a
 * queue's jobs keep their batch order). A chain deeper than `MAX_BATCH_WAVES` is a 400.
 */
export function dependencyWaves(lane: string, routed: readonly Routed[]): Result<Wave[] | null> {
  if (routed.every(({ job }) => (job.dependsOn ?? []).length === 0)) return ok(null);
  const position = positions(routed);
  const wave: number[] = [];
  const lastOf = new Map<number, number>();
  for (const [i, { job, target }] of routed.entries()) {
    let w = lastOf.get(target) ?? 0;
    for (const dep of job.dependsOn ?? []) {
      if (!("id" in dep)) continue; // a waitpoint: no job of the batch
      const j = earlierJob(lane, dep, i, position);
      if (j !== undefined) w = Math.max(w, wave[j]! + (routed[j]!.target !== target ? 1 : 0));
    }
    if (w >= MAX_BATCH_WAVES) {
      return fail("invalid_request", `jobs[${i}]: on a sharded lane, a batch's jobs may wait for one another across shards at most ${MAX_BATCH_WAVES} deep`, [{ path: ["jobs", i, "dependsOn"], message: `a chain across shards deeper than ${MAX_BATCH_WAVES}` }]);
    }
    wave.push(w);
    lastOf.set(target, w);
  }
  const waves: Wave[] = [];
  routed.forEach(({ target }, i) => {
    const parts = (waves[wave[i]!] ??= []);
    let part = parts.find((p) => p.shard === target);
    if (!part) parts.push((part = { shard: target, at: [] }));
    part.at.push(i);
  });
  return ok(waves.filter((w) => w !== undefined));
}

/** How the look-up reaches lanes: a lane's shard count (`fresh`: read again) and its shards' stubs. */
export interface LaneReach {
  shards(lane: string, fresh?: boolean): Promise<Result<number>>;
  stub(lane: string, index?: number): Pick<ShardPeer, "knownIds">;
}

/**
 * The batch's dependencies outside it that are no job, as the lane would refuse them (the first
 * job's missing ones), or null. Each lane is asked once per shard that is some id's own shard (which
 * holds the id's job, or knows the shard it is reserved for), then once per shard named by such a
 * reservation. A lane believed to have one shard whose ids are missing is asked again if it has more now.
 */
export async function missingDependencies(reach: LaneReach, lane: string, routed: readonly Routed[]): Promise<Result<never> | null> {
  const position = positions(routed);
  const asks: { at: number; ref: JobRef }[] = [];
  routed.forEach(({ job }, at) => {
    for (const dep of job.dependsOn ?? []) if ("id" in dep && earlierJob(lane, dep, at, position) === undefined) asks.push({ at, ref: { lane: dep.lane ?? lane, id: dep.id } });
  });
  const byLane = new Map<string, Set<string>>();
  for (const { ref } of asks) byLane.set(ref.lane, (byLane.get(ref.lane) ?? new Set()).add(ref.id));
  const known = new Set<string>();
  const key = (ref: JobRef) => `${ref.lane}\u0000${ref.id}`;
  const refusals = await Promise.all(
    [...byLane].map(async ([name, ids]) => {
      const found = await knownIn(reach, name, [...ids], false);
      if (!found.ok) return found;
      for (const id of found.value) known.add(key({ lane: name, id }));
      return null;
    }),
  );
  const refused = refusals.find((r) => r !== null);
  if (refused) return refused as Result<never>;
  const first = asks.find((a) => !known.has(key(a.ref)));
  if (first === undefined) return null;
  const missing = asks.filter((a) => a.at === first.at && !known.has(key(a.ref))).map((a) => a.ref);
  return fail("dependency_not_found", `no such dependency: ${missing.map((d) => `${d.lane}/${d.id}`).join(", ")}`, { dependencies: missing }) as never;
}

/** `ids` grouped by a shard of each. */
function byShard(ids: readonly string[], shardOfId: (id: string) => number): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  for (const id of ids) {
    const shard = shardOfId(id);
    const list = groups.get(shard);
    if (list) list.push(id);
    else groups.set(shard, [id]);
  }
  return groups;
}

/**
 * The ids of `ids` that are jobs of lane `name`: asked of each id's own shard (one call per such
 * shard), then, for an id reserved there for another shard, of that shard (a reservation alone,
 * made by this very batch or left by a deleted job, is no job).
 */
async function knownIn(reach: LaneReach, name: string, ids: readonly string[], fresh: boolean): Promise<Result<string[]>> {
  const count = await reach.shards(name, fresh);
  if (!count.ok) return count;
  const found: string[] = [];
  const reserved = new Map<string, number>();
  const asked = async (groups: Map<number, string[]>, take: (id: string, shard: number, said: number | null) => void): Promise<Result<null>> => {
    const answers = await Promise.all([...groups].map(async ([shard, some]) => ({ shard, some, answer: await reach.stub(name, shard).knownIds(some) })));
    for (const { shard, some, answer } of answers) {
      if (!answer.ok) return answer;
      some.forEach((id, k) => take(id, shard, answer.value[k] ?? null));
    }
    return ok(null);
  };
  const first = await asked(byShard(ids, (id) => shardOf(id, count.value)), (id, shard, said) => {
    if (said === shard) found.push(id);
    else if (said !== null) reserved.set(id, said);
  });
  if (!first.ok) return first;
  const second = await asked(byShard([...reserved.keys()], (id) => reserved.get(id)!), (id, shard, said) => {
    if (said === shard) found.push(id);
  });
  if (!second.ok) return second;
  // Not all there: unless the lane was resharded since its count was read.
  if (!fresh && count.value === 1 && found.length < ids.length) {
    const again = await reach.shards(name, true);
    if (again.ok && again.value > 1) return knownIn(reach, name, ids, true);
  }
  return ok(found);
}
