/**
 * A lane's waitpoints across its shards (docs/api.md "Waitpoints"): a waitpoint lives in the shard its
 * id hashes to, by the hash of job ids (`shardOf`), so every call about one id goes to one object, and
 * a sweep asks every shard. A create without an id is given one here, so that it has a shard. A
 * shard that does not hold an id refuses it (`wrong_shard`: this router read an old count): the count
 * is read again and the call goes once more.
 */
import { fail, type Result } from "../shared/errors.js";
import { shardOf } from "../shared/shards.js";
import type { WaitpointCreated } from "../shared/waitpoint.js";
import type { Answer, WaitpointPeer } from "./peer.js";

/** The router's count cache and stubs (routing/enqueue-routing.ts), as the waitpoints' routing uses them. */
export interface WaitpointRouter<P extends WaitpointPeer> {
  shards(lane: string, fresh?: boolean): Promise<Result<number>>;
  stub(lane: string, index?: number): P;
}

/** The shard of a lane of `shards` that holds waitpoint `id`. */
export function waitpointShard(id: string, shards: number): number {
  return shardOf(id, shards);
}

/** Calls `call` on the shard that holds waitpoint `id`; once more with the count read again when that shard says it does not. */
export async function onWaitpoint<P extends WaitpointPeer, T>(router: WaitpointRouter<P>, lane: string, id: string, call: (stub: P) => Answer<T>): Promise<Result<T>> {
  let answer: Result<T> | null = null;
  for (const fresh of [false, true]) {
    const count = await router.shards(lane, fresh);
    if (!count.ok) return count;
    answer = await call(router.stub(lane, waitpointShard(id, count.value)));
    if (answer.ok || answer.error.code !== "wrong_shard") return answer;
  }
  return answer ?? fail("internal", "unreachable");
}

/** Creates a waitpoint; on a sharded lane an id is made first when none is given (a UUID, as the lane would). */
export async function createWaitpoint<P extends WaitpointPeer>(router: WaitpointRouter<P>, lane: string, request: { id?: string; timeoutMs?: number }): Promise<Result<WaitpointCreated>> {
  if (request.id === undefined) {
    const count = await router.shards(lane);
    if (!count.ok) return count;
    if (count.value === 1) return router.stub(lane, 0).createWaitpoint(request);
  }
  const id = request.id ?? crypto.randomUUID();
  return onWaitpoint(router, lane, id, (stub) => stub.createWaitpoint({ ...request, id }));
}

/** Sweeps every shard's settled waitpoints, at most `limit` in all. */
export async function sweepWaitpoints<P extends WaitpointPeer>(router: WaitpointRouter<P>, lane: string, settledBefore: number, limit: number): Promise<Result<{ removed: number }>> {
  const count = await router.shards(lane, true);
  if (!count.ok) return count;
  let removed = 0;
  for (let i = 0; i < count.value && removed < limit; i++) {
    const answer = await router.stub(lane, i).sweepWaitpoints({ settledBefore, limit: limit - removed });
    if (!answer.ok) return answer;
    removed += answer.value.removed;
  }
  return { ok: true, value: { removed } };
}
