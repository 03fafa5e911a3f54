/**
 * A page of a lane's waitpoints (shared/waitpoint-list.ts): the body of lane.ts's `listWaitpoints`.
 * One shard's page: its waitpoints after the cursor's id, in id order, at most `limit` and at most
 * `MAX_PAGE_BYTES` of JSON (never none while one is there); the router merges shards' pages
 * (routing/waitpoint-list-routing.ts). Each one is answered as its own read answers it.
 */
import { MAX_PAGE_BYTES } from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import type { Waitpoint } from "../../shared/waitpoint.js";
import { decodeWaitpointCursor, prefixEnd, WaitpointListQuery, type WaitpointShardPage } from "../../shared/waitpoint-list.js";
import { parse } from "../input.js";
import { LIST_WAITPOINTS_AFTER_SQL, LIST_WAITPOINTS_FROM_SQL } from "../waitpoints/list-statements.js";

/** A bound on a waitpoint's JSON beyond its result: its id, lane, state, times and keys. */
const WAITPOINT_JSON_OVERHEAD = 1_024;

/** The parts the listing reaches. */
export interface WaitpointListParts {
  readonly ctx: DurableObjectState;
  readonly waitpoints: { get(id: string): Result<Waitpoint> };
}

export class WaitpointListRpc {
  constructor(private readonly parts: WaitpointListParts) {}

  listWaitpoints(input: unknown): Result<WaitpointShardPage> {
    const query = parse(WaitpointListQuery, input ?? {});
    if (!query.ok) return query;
    const { state, prefix, limit, cursor } = query.value;
    const from = prefix ?? "";
    const after = cursor === undefined ? null : decodeWaitpointCursor(cursor)!;
    // A cursor before the prefix's ids (another listing's) starts at the prefix.
    const [statement, bound] = after === null || after < from ? [LIST_WAITPOINTS_FROM_SQL, from] : [LIST_WAITPOINTS_AFTER_SQL, after];
    // One more than asked tells whether more follow; results are measured, not read, until taken.
    const rows = this.parts.ctx.storage.sql.exec<{ id: string; bytes: number }>(statement, bound, prefixEnd(from), state ?? null, limit + 1);
    const ids: string[] = [];
    let bytes = 0;
    let more = false;
    for (const row of rows) {
      bytes += row.bytes + WAITPOINT_JSON_OVERHEAD;
      if (ids.length === limit || (ids.length > 0 && bytes > MAX_PAGE_BYTES)) {
        more = true;
        break;
      }
      ids.push(row.id);
    }
    const waitpoints: Waitpoint[] = [];
    for (const id of ids) {
      const read = this.parts.waitpoints.get(id);
      if (read.ok) waitpoints.push(read.value);
    }
    return ok({ waitpoints, more });
  }
}
