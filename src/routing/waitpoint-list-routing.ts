/**
 * A lane's waitpoints listed (shared/waitpoint-list.ts): every shard asked for its page after the
 * cursor's id, the pages merged by id, at most `limit` waitpoints and `MAX_PAGE_BYTES` of JSON in all
 * (never none while one is there), never beyond the last id of a shard that has more. A lane of one
 * shard is the same merge of one page. The cursor is the last id taken, so what a shard gave beyond it
 * is asked for again on the next page.
 */
import { MAX_PAGE_BYTES } from "../shared/defaults.js";
import { ok, type Result } from "../shared/errors.js";
import { utf8Length } from "../shared/json.js";
import { encodeWaitpointCursor, WaitpointListQuery, type WaitpointPage, type WaitpointShardPage } from "../shared/waitpoint-list.js";

/** What the listing calls on each shard of a lane. */
export interface WaitpointListPeer {
  listWaitpoints(query: object): Promise<Result<WaitpointShardPage>>;
}

/** What the listing needs of a router: every shard's answer (lane-wide-routing.ts `all`). */
export interface ShardFanOut<P> {
  all<T>(lane: string, call: (stub: P, shard: number, shards: number) => Promise<Result<T>>, fresh?: boolean): Promise<Result<T[]>>;
  stub(lane: string, index?: number): P;
}

export async function listWaitpoints<P extends WaitpointListPeer>(router: ShardFanOut<P>, lane: string, query: object): Promise<Result<WaitpointPage>> {
  const parsed = WaitpointListQuery.safeParse(query);
  // A query the lane refuses: shard 0 says why.
  if (!parsed.success) return router.stub(lane, 0).listWaitpoints(query) as Promise<Result<never>>;
  const pages = await router.all(lane, (stub) => stub.listWaitpoints(query), false);
  if (!pages.ok) return pages;
  const heads = pages.value;
  const taken = heads.map(() => 0);
  // A shard that cut its page (by count or bytes) has ids beyond its last one not yet seen: nothing above
  // the lowest such last id is taken, or the cursor would pass them. A cut page holds at least one.
  let bound: string | null = null;
  for (const head of heads) {
    const last = head.waitpoints.at(-1)?.id;
    if (head.more && last !== undefined && (bound === null || last < bound)) bound = last;
  }
  const waitpoints: WaitpointPage["waitpoints"] = [];
  let bytes = 0;
  for (;;) {
    let best = -1;
    for (let i = 0; i < heads.length; i++) {
      const next = heads[i]!.waitpoints[taken[i]!];
      if (next !== undefined && (best < 0 || next.id < heads[best]!.waitpoints[taken[best]!]!.id)) best = i;
    }
    if (best < 0 || waitpoints.length >= parsed.data.limit) break;
    if (bound !== null && heads[best]!.waitpoints[taken[best]!]!.id > bound) break;
    const next = heads[best]!.waitpoints[taken[best]!]!;
    bytes += utf8Length(JSON.stringify(next)) + 1;
    if (waitpoints.length > 0 && bytes > MAX_PAGE_BYTES) break;
    waitpoints.push(next);
    taken[best]!++;
  }
  const done = heads.every((head, i) => taken[i] === head.waitpoints.length && !head.more);
  return ok({ waitpoints, cursor: done || waitpoints.length === 0 ? null : encodeWaitpointCursor(waitpoints.at(-1)!.id) });
}
