/**
 * The schedules' RPC methods' bodies (schedules.ts): lane.ts delegates here.
 */
import * as S from "../../shared/schemas.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Schedule, SchedulePage, SchedulePut } from "../../shared/schedule.js";
import { parse, parseScheduleName } from "../input.js";
import type { LaneWiring } from "../wiring.js";

export class ScheduleCalls {
  constructor(private readonly rooms: LaneWiring) {}

  putSchedule(name: unknown, input: unknown): Result<SchedulePut> {
    const schedule = parseScheduleName(name);
    if (!schedule.ok) return schedule;
    const request = parse(S.ScheduleRequest, input);
    if (!request.ok) return request;
    // A fire enqueues on this object: a sharded lane would need it routed (docs/concepts.md "Sharded lanes").
    if (this.rooms.shard.count() > 1 || this.rooms.shard.index > 0) return fail("invalid_request", "schedules are not supported on a sharded lane yet", [{ path: ["lane"], message: "a sharded lane" }]);
    const put = this.rooms.schedules.put(schedule.value, request.value);
    if (put.ok) this.rooms.wake.afterChange(false);
    return put;
  }

  getSchedule(name: unknown): Result<Schedule> {
    const schedule = parseScheduleName(name);
    return schedule.ok ? this.rooms.schedules.get(schedule.value) : schedule;
  }

  listSchedules(input?: unknown): Result<SchedulePage> {
    const query = parse(S.ScheduleListQuery, input ?? {});
    return query.ok ? ok(this.rooms.schedules.list(query.value.cursor ?? null, query.value.limit)) : query;
  }

  deleteSchedule(name: unknown): Result<{ deleted: true }> {
    const schedule = parseScheduleName(name);
    if (!schedule.ok) return schedule;
    const deleted = this.rooms.schedules.delete(schedule.value);
    if (deleted.ok) this.rooms.wake.afterChange(false);
    return deleted;
  }
}
