/**
 * What a lane answers about its schedules (schedules/schedules.ts): the bodies of lane.ts's methods.
 * Also `enqueueFire`, by which shard 0 of a sharded lane writes a fire on the shard that owns its job
 * (schedules/shard-fires.ts).
 */
import { z } from "zod";
import type { EnqueueAnswer } from "../../shared/answers.js";
import * as S from "../../shared/schemas.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import { serializeJson } from "../../shared/json.js";
import type { Schedule, SchedulePage, SchedulePut } from "../../shared/schedule.js";
import { MAX_SHARDS } from "../../shared/shards.js";
import type { Dispatcher } from "../attempts/dispatcher.js";
import { enqueueAnswer } from "../enqueue/enqueue-text.js";
import type { SwitchyardEnv } from "../env.js";
import { parse, parseScheduleName, ReservationNonce } from "../input.js";
import type { ScheduleStore } from "../schedules/schedules.js";
import type { ShardState } from "../shards/shard-state.js";
import type { Wake } from "../wake/wake.js";
import type { KindChecks } from "../kinds/kind-checks.js";

/** A schedule's fire as its job's shard takes it: the schedule's job, its id `<name>@<T>` and `runAt` T, routed by a count of 2 or more. */
const FireRequest = S.ScheduleJob.extend({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}@(0|[1-9][0-9]{0,15})$/, "must be a schedule's job id <schedule name>@<epoch ms>"),
  runAt: z.number().int().min(0),
  shards: z.number().int().min(2).max(MAX_SHARDS),
  // The nonce of the id's reservation on its own shard, when that is another (shards/shard-state.ts).
  reservation: ReservationNonce.optional(),
  // The nonce of its debounce key's reservation on the key's own shard, when that is another (shards/key-state.ts).
  keyReservation: ReservationNonce.optional(),
}).refine((fire) => fire.id.endsWith(`@${fire.runAt}`), { message: "a fire's runAt is the instant its id names", path: ["runAt"] });

/** The parts schedules' calls reach. */
export interface ScheduleParts {
  readonly lane: string;
  readonly shard: ShardState;
  readonly schedules: ScheduleStore;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  /** A fire flushes itself: shard 0 answers its own in place, not through the gate (rpc/gate.ts `flush.inBody`). */
  readonly wake: Wake;
  /** The declared kinds' payload checks (kinds/kind-checks.ts). */
  readonly kinds: KindChecks;
}

export class ScheduleRpc {
  constructor(private readonly parts: ScheduleParts) {}

  putSchedule(name: unknown, input: unknown): Result<SchedulePut> | Promise<Result<SchedulePut>> {
    const schedule = parseScheduleName(name);
    if (!schedule.ok) return schedule;
    const request = parse(S.ScheduleRequest, input);
    if (!request.ok) return request;
    // The job's payload, of a declared kind, is checked at the PUT (its fires enqueue it as it is); its
    // refusal comes after the request's own (400 `invalid_request`, then 413), as an enqueue's.
    const refused = this.parts.kinds.payload(request.value.job.kind, request.value.job.payload, ["job", "payload"]);
    const put = (r: Awaited<typeof refused>) => (r ? (this.refusedFirst(request.value) ?? r) : this.putChecked(schedule.value, request.value));
    return refused instanceof Promise ? refused.then(put) : put(refused);
  }

  private putChecked(schedule: string, request: S.ScheduleRequest): Result<SchedulePut> {
    return this.notShardZero() ?? this.parts.schedules.put(schedule, request);
  }

  /** What refuses the request before its payload's schema does (checked on that refusal only): a shard other than 0, a payload over its size. */
  private refusedFirst(request: S.ScheduleRequest): Result<never> | null {
    const payload = serializeJson(request.job.payload, "job.payload");
    return this.notShardZero() ?? (payload.ok ? null : payload);
  }

  private notShardZero(): Result<never> | null {
    // A sharded lane's schedules live on its shard 0, the object named after the lane (docs/concepts.md "Sharded lanes").
    if (this.parts.shard.index === 0) return null;
    return fail("invalid_request", `a sharded lane's schedules live on its shard 0 (the object ${this.parts.lane}), not on shard ${this.parts.shard.index}`, [{ path: ["lane"], message: "not shard 0" }]);
  }

  getSchedule(name: unknown): Result<Schedule> {
    const schedule = parseScheduleName(name);
    return schedule.ok ? this.parts.schedules.get(schedule.value) : schedule;
  }

  listSchedules(input?: unknown): Result<SchedulePage> {
    const query = parse(S.ScheduleListQuery, input ?? {});
    return query.ok ? ok(this.parts.schedules.list(query.value.cursor ?? null, query.value.limit)) : query;
  }

  deleteSchedule(name: unknown): Result<{ deleted: true }> {
    const schedule = parseScheduleName(name);
    if (!schedule.ok) return schedule;
    return this.parts.schedules.delete(schedule.value);
  }

  /**
   * A fire of this lane's shard 0 whose job belongs here: written as shard 0 writes its own (a
   * repeat is a duplicate), refused as any enqueue is (`wrong_shard` when routed by a stale count).
   */
  enqueueFire(input: unknown): Result<EnqueueAnswer> {
    const fire = parse(FireRequest, input);
    if (!fire.ok) return fire;
    const done = this.parts.schedules.insertFire(fire.value);
    if (!done.ok) return done;
    if (done.value.inserted.status !== "duplicate") this.parts.wake.afterChange(this.parts.dispatcher.kinds.includes(done.value.spec.kind));
    return ok(enqueueAnswer(done.value, this.parts.lane));
  }
}
