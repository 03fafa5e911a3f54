/**
 * The operator's RPC methods' bodies (cancel, requeue, sweep, fail the lane, queues): lane.ts delegates here.
 */
import * as S from "../../shared/schemas.js";
import type { CancelAnswer, FailLaneAnswer, PurgeAnswer, QueueInfo } from "../../shared/answers.js";
import { z } from "zod";
import { DEFAULT_SWEEP_LIMIT, FAIL_LANE_BATCH } from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { parse, parseId, parseJobCall, parseName } from "../input.js";
import type { LaneWiring } from "../wiring.js";

/**
 * What a lane's `failLane` takes: the route's request, and (from the shard router, which shares the
 * lane's 500 among its shards) at most how many to fail here.
 */
const FailShardRequest = S.FailLaneRequest.extend({ limit: z.number().int().min(1).max(FAIL_LANE_BATCH).optional() });

export class OperatorCalls {
  constructor(private readonly rooms: LaneWiring) {}

  cancel(id: unknown, input?: unknown): Result<CancelAnswer> {
    const call = parseJobCall(id, S.CancelRequest, input ?? {});
    if (!call.ok) return call;
    const { reason, onlyIfQueued } = call.value.request;
    const answer = this.rooms.cancels.cancel(call.value.id, reason ?? null, onlyIfQueued === true);
    if (answer.ok && answer.value.status === "cancelling") this.rooms.dispatcher.abort(call.value.id, "cancelled");
    this.rooms.wake.afterChange();
    return answer;
  }

  requeue(id: unknown): Result<{ job: Job }> {
    const name = parseId(id);
    if (!name.ok) return name;
    return this.rooms.jobChanged(this.rooms.store.requeue(name.value));
  }

  sweep(input: unknown): Result<{ removed: number }> {
    const request = parse(S.SweepRequest, input);
    if (!request.ok) return request;
    const removed = this.rooms.retention.sweep(request.value.settledBefore, request.value.limit ?? DEFAULT_SWEEP_LIMIT);
    this.rooms.wake.afterChange();
    return ok({ removed });
  }

  failLane(input: unknown): Result<FailLaneAnswer> {
    const request = parse(FailShardRequest, input);
    if (!request.ok) return request;
    const answer = this.rooms.failLane(request.value.reason, request.value.limit);
    this.rooms.wake.afterChange();
    return ok(answer);
  }

  queueInfo(queue: unknown): Result<QueueInfo> {
    const name = parseName(queue, "queue");
    return name.ok ? ok(this.rooms.queues.info(name.value)) : name;
  }

  putQueue(queue: unknown, input: unknown): Result<QueueInfo> {
    const name = parseName(queue, "queue");
    if (!name.ok) return name;
    const request = parse(S.QueuePut, input ?? {});
    if (!request.ok) return request;
    this.rooms.queues.configure(name.value, request.value);
    this.rooms.wake.afterChange(); // a wider queue may start a job now; a narrower one, none
    return ok(this.rooms.queues.info(name.value));
  }

  async purgeQueue(queue: unknown): Promise<Result<PurgeAnswer>> {
    const name = parseName(queue, "queue");
    if (!name.ok) return name;
    const purged = await this.rooms.queues.purge(name.value);
    this.rooms.wake.afterChange();
    return ok({ purged });
  }
}
