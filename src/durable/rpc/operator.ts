/**
 * What a lane answers its operator (cancel, requeue, sweep, fail the lane, queues): the bodies of
 * lane.ts's methods.
 */
import * as S from "../../shared/schemas.js";
import type { CancelAnswer, FailLaneAnswer, PurgeAnswer, QueueInfo } from "../../shared/answers.js";
import { z } from "zod";
import { DEFAULT_SWEEP_LIMIT, FAIL_LANE_BATCH } from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import type { Cancels } from "../attempts/cancel.js";
import type { Dispatcher } from "../attempts/dispatcher.js";
import type { SwitchyardEnv } from "../env.js";
import { parse, parseId, parseJobCall, parseName } from "../input.js";
import type { QueueStore } from "../operator/queues.js";
import type { RetentionStore } from "../operator/retention.js";
import type { JobStore } from "../store/job-store.js";
import { jobAnswer } from "./pull-consumers.js";

/**
 * What a lane's `failLane` takes: the route's request, and (from the shard router, which shares the
 * lane's 500 among its shards) at most how many to fail here.
 */
const FailShardRequest = S.FailLaneRequest.extend({ limit: z.number().int().min(1).max(FAIL_LANE_BATCH).optional() });

/** The parts the operator's calls reach. */
export interface OperatorParts {
  readonly cancels: Cancels;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  readonly store: JobStore;
  readonly retention: RetentionStore;
  readonly queues: QueueStore;
}

/** The lane's failing (lane-lifecycle.ts). */
export interface LaneFailing {
  failLane(reason: string, limit?: number): FailLaneAnswer;
}

export class OperatorRpc {
  constructor(
    private readonly parts: OperatorParts,
    private readonly life: LaneFailing,
  ) {}

  cancel(id: unknown, input?: unknown): Result<CancelAnswer> {
    const call = parseJobCall(id, S.CancelRequest, input ?? {});
    if (!call.ok) return call;
    const { reason, onlyIfQueued } = call.value.request;
    const answer = this.parts.cancels.cancel(call.value.id, reason ?? null, onlyIfQueued === true);
    if (answer.ok && answer.value.status === "cancelling") this.parts.dispatcher.abort(call.value.id, "cancelled");
    return answer;
  }

  requeue(id: unknown): Result<{ job: Job }> {
    const name = parseId(id);
    if (!name.ok) return name;
    return jobAnswer(this.parts.store.requeue(name.value));
  }

  sweep(input: unknown): Result<{ removed: number }> {
    const request = parse(S.SweepRequest, input);
    if (!request.ok) return request;
    return ok({ removed: this.parts.retention.sweep(request.value.settledBefore, request.value.limit ?? DEFAULT_SWEEP_LIMIT) });
  }

  failLane(input: unknown): Result<FailLaneAnswer> {
    const request = parse(FailShardRequest, input);
    if (!request.ok) return request;
    return ok(this.life.failLane(request.value.reason, request.value.limit));
  }

  queueInfo(queue: unknown): Result<QueueInfo> {
    const name = parseName(queue, "queue");
    return name.ok ? ok(this.parts.queues.info(name.value)) : name;
  }

  putQueue(queue: unknown, input: unknown): Result<QueueInfo> {
    const name = parseName(queue, "queue");
    if (!name.ok) return name;
    const request = parse(S.QueuePut, input ?? {});
    if (!request.ok) return request;
    this.parts.queues.configure(name.value, request.value); // a wider queue may start a job now: the flush looks
    return ok(this.parts.queues.info(name.value));
  }

  async purgeQueue(queue: unknown): Promise<Result<PurgeAnswer>> {
    const name = parseName(queue, "queue");
    if (!name.ok) return name;
    return ok({ purged: await this.parts.queues.purge(name.value) });
  }
}
