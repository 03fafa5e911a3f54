/**
 * A lane's schedules (docs/api.md "Schedules", docs/concepts.md "What grows on the lane"): rows with
 * `next_run_at` on an index, fired by the lane's one alarm. A fire due at T enqueues `<name>@<T>`
 * with `runAt` T through the normal enqueue and advances `next_run_at` in the same transaction, so a
 * fire repeated (a retried alarm, a restart between the two) is a duplicate, never a second job.
 * Missed fires collapse: the alarm enqueues only the latest instant at or before now, then the
 * schedule goes on from now. On a sharded lane (its shard 0 holds the schedules) a fire whose job
 * belongs on another shard goes there first and advances once answered (shard-fires.ts).
 */
import type { Clock } from "../../shared/clock.js";
import { latestCronFire, nextCronFire } from "../../shared/cron.js";
import { DEFAULT_SCHEDULE_TIMEZONE, MAX_PAGE_BYTES, SCHEDULE_FIRE_BATCH } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Json } from "../../shared/job.js";
import { canonicalJson, serializeJson, utf8Length } from "../../shared/json.js";
import { log } from "../../shared/log.js";
import type { Schedule, ScheduledJob, SchedulePage, SchedulePut } from "../../shared/schedule.js";
import type { EnqueueRequest, ScheduleJob, ScheduleRequest } from "../../shared/schemas.js";
import type { TracedEnqueueRequest } from "../input.js";
import type { EnqueueDone } from "../enqueue/enqueue-text.js";
import type { Inserted, JobSpec } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import * as Q from "./schedule-statements.js";
import type { ScheduleRow } from "./schedule-statements.js";
import { ShardFires, type Fire, type FireRouting } from "./shard-fires.js";

/**
 * The normal enqueue, as fires use it: the lane's `toSpec` and `toSpecs` (defaults, payload), its
 * one-job write (a debounced fire replaces the queued job of its key) and the store's batch insert.
 */
export interface FireEnqueue {
  toSpec(request: TracedEnqueueRequest, now: number): Result<JobSpec>;
  toSpecs(requests: readonly TracedEnqueueRequest[], now: number): Result<JobSpec[]>;
  write(spec: JobSpec, idGiven: boolean, now: number): Result<Inserted>;
  /** A fire of a job with `singleton` (enqueue/singleton.ts). */
  writeSingleton(spec: JobSpec, mode: NonNullable<TracedEnqueueRequest["singleton"]>, now: number): Result<Inserted>;
  readonly store: Pick<JobStore, "insertJobs">;
}

/** The job that holds a fire once written: its own, or (debounced) the queued job of its key it replaced. */
function firedJobId({ spec, inserted }: EnqueueDone): string {
  return inserted.status === "queued" ? spec.id : inserted.job.id;
}

/** A bound on the JSON of one schedule beyond its job: names, numbers, keys. */
const SCHEDULE_JSON_OVERHEAD = 1_024;

/** What defines a schedule; two PUTs with equal definitions are the same schedule. */
type Definition = Pick<ScheduleRow, "cron" | "timezone" | "every_ms" | "job" | "paused">;

/** The first fire of a definition strictly after `afterMs` (null: none, or paused). */
function firstFireAfter(def: Definition, afterMs: number): number | null {
  if (def.paused === 1) return null;
  if (def.every_ms !== null) return afterMs + def.every_ms;
  return nextCronFire(def.cron!, def.timezone!, afterMs);
}

/** The latest fire at or before `now` of a schedule due at `due` (≤ now): where missed fires collapse. */
function latestFire(row: ScheduleRow, due: number, now: number): number {
  if (row.every_ms !== null) return due + Math.floor((now - due) / row.every_ms) * row.every_ms;
  return Math.max(due, latestCronFire(row.cron!, row.timezone!, now) ?? due);
}

export function toSchedule(row: ScheduleRow): Schedule {
  return {
    name: row.name,
    cron: row.cron,
    everyMs: row.every_ms,
    timezone: row.timezone,
    job: JSON.parse(row.job) as ScheduledJob,
    paused: row.paused === 1,
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at,
    lastJobId: row.last_job_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export class ScheduleStore {
  private readonly sql: SqlStorage;
  /** The earliest next fire as last read (undefined: read it again). This store is the table's only writer. */
  private earliest: number | null | undefined = undefined;
  /** A sharded lane's fires to other shards, in flight or put off (shard-fires.ts). */
  private readonly routed: ShardFires;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly lane: string,
    private readonly enqueue: FireEnqueue,
    routing: FireRouting,
  ) {
    this.sql = storage.sql;
    this.routed = new ShardFires(clock, {
      lane, shard: routing.shard, lanes: () => routing.lanes(), self: () => routing.self(),
      advance: (fires, jobIds) => this.advance(fires, jobIds),
      changed: () => {
        this.earliest = undefined;
        routing.changed();
      },
    });
  }

  /**
   * Creates or replaces a schedule. A new or changed definition fires first at its first instant
   * after now; a PUT of the very definition stored changes nothing (so a Worker may declare its
   * schedules at every start without pushing their next fire back).
   */
  put(name: string, request: ScheduleRequest): Result<SchedulePut> {
    const payload = serializeJson(request.job.payload, "job.payload");
    if (!payload.ok) return payload;
    const now = this.clock.now();
    const def: Definition = {
      cron: request.cron ?? null,
      timezone: request.cron === undefined ? null : (request.timezone ?? DEFAULT_SCHEDULE_TIMEZONE),
      every_ms: request.everyMs ?? null,
      job: JSON.stringify(request.job),
      paused: request.paused ? 1 : 0,
    };
    const existing = this.row(name);
    if (existing && sameDefinition(existing, def)) return ok({ created: false, schedule: toSchedule(existing) });
    const values = [name, def.cron, def.timezone, def.every_ms, def.job, def.paused, firstFireAfter(def, now), now] as const;
    this.sql.exec(existing ? Q.REPLACE_SCHEDULE_SQL : Q.INSERT_SCHEDULE_SQL, ...values);
    this.routed.forget(name);
    this.earliest = undefined;
    return ok({ created: !existing, schedule: toSchedule(this.row(name)!) });
  }

  get(name: string): Result<Schedule> {
    const row = this.row(name);
    return row ? ok(toSchedule(row)) : this.notFound(name);
  }

  /** A page by name, after `after`: at most `limit` schedules and 4 MiB of JSON (never none while one is there). */
  list(after: string | null, limit: number): SchedulePage {
    const rows = this.sql.exec<ScheduleRow>(Q.SCHEDULE_PAGE_SQL, after ?? "", limit + 1).toArray();
    const schedules: Schedule[] = [];
    let bytes = 0;
    for (const row of rows.slice(0, limit)) {
      bytes += utf8Length(row.job) + SCHEDULE_JSON_OVERHEAD;
      if (schedules.length > 0 && bytes > MAX_PAGE_BYTES) break;
      schedules.push(toSchedule(row));
    }
    const more = schedules.length < rows.length;
    return { schedules, cursor: more ? schedules.at(-1)!.name : null };
  }

  /** Deletes a schedule; the jobs it enqueued stay. */
  delete(name: string): Result<{ deleted: true }> {
    const deleted = this.sql.exec(Q.DELETE_SCHEDULE_SQL, name).toArray().length > 0;
    this.routed.forget(name);
    this.earliest = undefined;
    return deleted ? ok({ deleted: true }) : this.notFound(name);
  }

  /**
   * The earliest next fire of an unpaused schedule, or of a sharded lane's fire in hand (put off, or
   * in flight: shard-fires.ts): the wake's schedule term (wake.ts).
   */
  nextFire(): number | null {
    if (this.earliest === undefined) {
      const now = this.clock.now();
      const row = this.sql.exec<{ next_run_at: number }>(Q.EARLIEST_FIRE_SQL, JSON.stringify(this.routed.held(now))).toArray()[0]?.next_run_at ?? null;
      const held = this.routed.nextAt(now);
      this.earliest = row === null ? held : held === null ? row : Math.min(row, held);
    }
    return this.earliest;
  }

  /**
   * Fires the schedules due now (at most a batch; the wake asks for the alarm again at once when more
   * are due): the jobs of this object enqueued as one batch, their advances as one statement, in one
   * transaction; on a sharded lane, the others sent to their shards (`sent` resolves once answered).
   * Answers how many fired or went.
   */
  fireDue(): number {
    const now = this.clock.now();
    // The remembered earliest fire: an alarm that came for other work costs no query here.
    if ((this.nextFire() ?? Infinity) > now) return 0;
    const shards = this.routed.routedBy();
    const due = this.sql.exec<ScheduleRow>(Q.DUE_SCHEDULES_SQL, now, SCHEDULE_FIRE_BATCH, JSON.stringify(this.routed.held(now))).toArray();
    const all: Fire[] = due.map((row) => {
      const at = latestFire(row, row.next_run_at!, now);
      const next = row.every_ms !== null ? at + row.every_ms : firstFireAfter(row, now);
      const request: EnqueueRequest = { ...(JSON.parse(row.job) as ScheduleJob), id: `${row.name}@${at}`, runAt: at };
      return { name: row.name, due: row.next_run_at!, at, next, request };
    });
    this.earliest = undefined;
    if (shards === null) {
      if (all.length > 0) this.fireInPlace(all, now);
      return all.length;
    }
    // A sharded lane: the fires whose jobs are this shard's in place (stating the count, as the router
    // does), the others sent to their shards.
    const inPlace = all.filter((f) => ShardFires.inPlace(f.request, shards)).map((f) => ({ ...f, request: { ...f.request, shards } }));
    const sent = inPlace.length === all.length ? 0 : this.routed.send(all.filter((f) => !ShardFires.inPlace(f.request, shards)), shards);
    if (inPlace.length > 0) this.fireInPlace(inPlace, now);
    return inPlace.length + sent;
  }

  /** Resolves once the fires sent to other shards are answered (the alarm waits for them). */
  sent(): Promise<void> {
    return this.routed.settled();
  }

  /** A fire sent here by shard 0 of this sharded lane (lane-schedules.ts `enqueueFire`): written as `fireInPlace` writes one. */
  insertFire(request: TracedEnqueueRequest): Result<EnqueueDone> {
    return this.insertAt(request, this.clock.now());
  }

  /** One fire's job, written at `now` as an enqueue of its id writes it (in the caller's transaction, if any). */
  private insertAt(request: TracedEnqueueRequest, now: number): Result<EnqueueDone> {
    const spec = this.enqueue.toSpec(request, now);
    if (!spec.ok) return spec;
    // A fire that singleton skips still counts as the fire: its job is the one that holds the queue.
    const inserted = request.singleton === undefined ? this.enqueue.write(spec.value, true, now) : this.enqueue.writeSingleton(spec.value, request.singleton, now);
    return inserted.ok ? ok({ spec: spec.value, inserted: inserted.value }) : inserted;
  }

  /** The fires whose jobs are this object's: enqueued and advanced in one transaction. */
  private fireInPlace(fires: readonly (Fire & { request: TracedEnqueueRequest })[], now: number): void {
    this.storage.transactionSync(() => {
      // A batch is all or nothing: one id taken by a job of another spec refuses it all. Then each
      // fire alone, the refused one logged; the schedule goes on all the same.
      let jobIds = this.enqueueAll(fires.map((f) => f.request), now);
      if (jobIds === null) {
        jobIds = fires.map(({ name, request }) => {
          const one = this.insertAt(request, now);
          if (one.ok) return firedJobId(one.value);
          log({ event: "schedule.fire_failed", lane: this.lane, schedule: name, jobId: request.id!, code: one.error.code, message: one.error.message });
          return request.id!;
        });
      }
      this.advance(fires, jobIds);
    });
  }

  /**
   * Fires recorded (`lastRunAt`, `lastJobId`) and their next ones set, each only while its row still
   * waits for it. `jobIds`: the job that holds each fire (default: its own id).
   */
  private advance(fires: readonly Fire[], jobIds?: readonly string[]): void {
    this.sql.exec(Q.ADVANCE_SCHEDULES_SQL, JSON.stringify(fires.map((f, i) => [f.name, f.due, f.next, f.at, jobIds?.[i] ?? f.request.id])));
    this.earliest = undefined;
  }

  /**
   * The fires' jobs as one batch enqueue: their ids, or null when it refused (nothing was enqueued
   * then). Fires with a debounce or singleton are never batched: each may replace (or be held by) a job of its key or queue.
   */
  private enqueueAll(requests: TracedEnqueueRequest[], now: number): string[] | null {
    const specs = this.enqueue.toSpecs(requests, now);
    if (!specs.ok || specs.value.some((spec, i) => spec.debounceKey !== null || requests[i]!.singleton !== undefined)) return null;
    return this.enqueue.store.insertJobs(specs.value, now).ok ? specs.value.map((spec) => spec.id) : null;
  }

  private row(name: string): ScheduleRow | undefined {
    return this.sql.exec<ScheduleRow>(Q.SCHEDULE_BY_NAME_SQL, name).toArray()[0];
  }

  private notFound(name: string) {
    return fail("schedule_not_found", `no schedule ${name} in lane ${this.lane}`);
  }
}

function sameDefinition(row: ScheduleRow, def: Definition): boolean {
  return (
    row.cron === def.cron &&
    row.timezone === def.timezone &&
    row.every_ms === def.every_ms &&
    row.paused === def.paused &&
    canonicalJson(JSON.parse(row.job) as Json) === canonicalJson(JSON.parse(def.job) as Json)
  );
}
