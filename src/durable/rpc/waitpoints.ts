/**
 * What a lane answers about its waitpoints (docs/api.md "Waitpoints"; waitpoints/waitpoints.ts): the
 * bodies of lane.ts's methods. Each validates its input here: a lane trusts no caller. On a sharded
 * lane a waitpoint lives in the shard its id hashes to: a call about another shard's id is refused
 * `wrong_shard` (its router read an old shard count), so an id never lives in two shards.
 */
import { z } from "zod";
import { DEFAULT_SWEEP_LIMIT, MAX_SWEEP_LIMIT, MAX_DURATION_MS } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import { toIssues } from "../../shared/schemas.js";
import { serializeJson } from "../../shared/json.js";
import { WaitpointCompleteRequest, WaitpointCreateRequest, WaitpointId, type Waitpoint, type WaitpointCompleted, type WaitpointCreated } from "../../shared/waitpoint.js";
import { parse } from "../input.js";
import type { ShardState } from "../shards/shard-state.js";
import type { Waitpoints } from "../waitpoints/waitpoints.js";

/** A sweep of the waitpoints settled before `settledBefore`, at most `limit` (the lane's sweep's request). */
const WaitpointSweep = z.strictObject({ settledBefore: z.number().int().min(0).max(MAX_DURATION_MS), limit: z.number().int().min(1).max(MAX_SWEEP_LIMIT).optional() });

export class WaitpointRpc {
  constructor(private readonly parts: { readonly waitpoints: Waitpoints; readonly shard: ShardState }) {}

  createWaitpoint(input: unknown): Result<WaitpointCreated> {
    const request = parse(WaitpointCreateRequest, input ?? {});
    if (!request.ok) return request;
    const { id, timeoutMs } = request.value;
    const here = id === undefined ? ok(null) : this.owned(id);
    return here.ok ? ok(this.parts.waitpoints.create(id, timeoutMs)) : here;
  }

  getWaitpoint(id: unknown): Result<Waitpoint> {
    const name = this.ownedId(id);
    return name.ok ? this.parts.waitpoints.get(name.value) : name;
  }

  /** Completes a waitpoint: its waiters here are told in its transaction (those in other objects after it: lane.ts `completeWaitpoint`). */
  completeWaitpoint(id: unknown, input: unknown): Result<WaitpointCompleted> {
    const name = this.ownedId(id);
    if (!name.ok) return name;
    const request = parse(WaitpointCompleteRequest, input ?? {});
    if (!request.ok) return request;
    const result = serializeJson(request.value.result, "result");
    if (!result.ok) return result;
    return this.parts.waitpoints.complete(name.value, result.value);
  }

  sweepWaitpoints(input: unknown): Result<{ removed: number }> {
    const request = parse(WaitpointSweep, input);
    if (!request.ok) return request;
    return ok({ removed: this.parts.waitpoints.removeSettled(request.value.settledBefore, request.value.limit ?? DEFAULT_SWEEP_LIMIT) });
  }

  private ownedId(id: unknown): Result<string> {
    const name = parseWaitpointId(id);
    if (!name.ok) return name;
    const here = this.owned(name.value);
    return here.ok ? name : here;
  }

  /** Whether waitpoint `id` lives in this shard (a lane of one shard holds every id). */
  private owned(id: string): Result<null> {
    const { shard } = this.parts;
    const shards = shard.count();
    if (shards === 1 && shard.index === 0) return ok(null);
    return shard.owns(id) ? ok(null) : fail("wrong_shard", `shard ${shard.index} of lane ${shard.lane} does not hold waitpoint ${id} (${shards} shards)`, { shards });
  }
}

/** A waitpoint id, valid, or the refusal. */
export function parseWaitpointId(id: unknown): Result<string> {
  const name = WaitpointId.safeParse(id);
  return name.success ? ok(name.data) : fail("invalid_request", "invalid waitpoint id", toIssues(name.error, ["id"]));
}
