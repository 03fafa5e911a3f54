/**
 * Schedules on a sharded lane (docs/concepts.md "Sharded lanes"): they live on shard 0, every route
 * answers as one object's, and a fire enqueues `<name>@<T>` on the shard that owns its job (its id
 * reserved on its own shard first when that is another), advancing once that shard answered.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import type { Lane } from "../../src/durable/lane.js";
import { FIRE_IN_FLIGHT_MS, FIRE_RETRY_BASE_MS, ROUTED_FIRE_BATCH } from "../../src/durable/schedules/shard-fires.js";
import { SCHEMA_VERSION } from "../../src/durable/store/migrations.js";
import { shardOf } from "../../src/shared/shards.js";
import { call, expectError, get, PULL_KIND, T0 } from "../helpers/http.js";
import { inject, refusal, value } from "../helpers/lane.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

const MINUTE = 60_000;
/** Every schedule below is PUT at T0 every minute: its first fire is here. */
const T1 = T0 + MINUTE;

const put = (fixture: ShardedFixture, name: string, json: Record<string, unknown>) => call("PUT", `${fixture.base}/schedules/${name}`, { json: { everyMs: MINUTE, ...json } });

/** A schedule name whose fire at `at` has an id (`<name>@<at>`) whose own shard is `target` of `shards`. */
function nameFiringOn(target: number, shards: number, at: number, prefix: string): string {
  for (let n = 0; ; n++) if (shardOf(`${prefix}${n}@${at}`, shards) === target) return `${prefix}${n}`;
}

/** The ids of the jobs stored on shard i. */
async function idsOn(fixture: ShardedFixture, i: number): Promise<string[]> {
  return value(await fixture.shard(i).listShardPage({ limit: 500 }, 0)).jobs.map((job) => job.id);
}

async function everyShard(fixture: ShardedFixture): Promise<string[][]> {
  return Promise.all(Array.from({ length: fixture.shards }, (_, i) => idsOn(fixture, i)));
}

/** Moves the clock to `at` and runs shard 0's alarm (it waits for the fires sent to other shards). */
async function fireAt(fixture: ShardedFixture, at: number): Promise<void> {
  fixture.clock.set(at);
  expect(await runDurableObjectAlarm(fixture.shard(0))).toBe(true);
}

const schedule = async (fixture: ShardedFixture, name: string) => (await get(`${fixture.base}/schedules/${name}`)).body;

afterEach(() => vi.restoreAllMocks());

describe("schedules on a sharded lane: the routes", () => {
  it("PUT, GET, list and DELETE answer as on one object; the schedules live on shard 0 alone", async () => {
    const fixture = await setupSharded(4);
    const created = await put(fixture, "report", { job: { kind: PULL_KIND, queue: "q" } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.schedule).toMatchObject({ name: "report", everyMs: MINUTE, nextRunAt: T1, lastRunAt: null, lastJobId: null, job: { kind: PULL_KIND, queue: "q" } });
    expect((await put(fixture, "report", { job: { kind: PULL_KIND, queue: "q" } })).status).toBe(200);
    expect((await put(fixture, "alpha", { paused: true, job: { kind: PULL_KIND } })).status).toBe(201);
    expect((await get(`${fixture.base}/schedules/report`)).body).toEqual(created.body.schedule);
    expect((await get(`${fixture.base}/schedules`)).body.schedules.map((s: { name: string }) => s.name)).toEqual(["alpha", "report"]);
    // The lane's wake is shard 0's next fire.
    expect((await get(fixture.base)).body.nextWakeAt).toBe(T1);
    expectError(await put(fixture, "bad", { cron: "61 * * * *", everyMs: undefined, job: { kind: PULL_KIND } }), 400, "invalid_request");

    expect(value(await fixture.shard(0).listSchedules()).schedules).toHaveLength(2);
    for (let i = 1; i < 4; i++) {
      expect(value(await fixture.shard(i).listSchedules()).schedules).toEqual([]);
      // A shard i >= 1 never holds a schedule, whoever calls it.
      refusal(await fixture.shard(i).putSchedule("direct", { everyMs: MINUTE, job: { kind: PULL_KIND } }), "invalid_request");
    }

    expect(await call("DELETE", `${fixture.base}/schedules/report`)).toMatchObject({ status: 200, body: { deleted: true } });
    expectError(await call("DELETE", `${fixture.base}/schedules/report`), 404, "schedule_not_found");
    expectError(await get(`${fixture.base}/schedules/report`), 404, "schedule_not_found");
  });

  it("answers the RPC client as the routes do, and its fired job reads back by id", async () => {
    const fixture = await setupSharded(4);
    const lane = createLaneClient(env.LANE).lane(fixture.lane);
    const name = nameFiringOn(3, 4, T1, "rpc");
    expect((await lane.putSchedule(name, { everyMs: MINUTE, job: { kind: PULL_KIND } })).schedule).toMatchObject({ name, nextRunAt: T1 });
    expect(await lane.listSchedules()).toMatchObject({ schedules: [{ name }], cursor: null });
    await fireAt(fixture, T1);
    expect(await lane.getSchedule(name)).toMatchObject({ lastRunAt: T1, lastJobId: `${name}@${T1}` });
    expect(await lane.get(`${name}@${T1}`)).toMatchObject({ id: `${name}@${T1}`, runAt: T1 });
    expect(await idsOn(fixture, 3)).toEqual([`${name}@${T1}`]);
    expect(await lane.deleteSchedule(name)).toEqual({ deleted: true });
  });

  it("lets a lane that holds schedules (and no job) change its shard count; a job still refuses it", async () => {
    const fixture = await setupSharded(1);
    expect((await put(fixture, "tick", { job: { kind: PULL_KIND } })).status).toBe(201);
    const set = await call("PATCH", fixture.base, { json: { shards: 4 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.shards).toBe(4);
    const sharded = { ...fixture, shards: 4 };
    expect((await schedule(sharded, "tick")).nextRunAt).toBe(T1);
    // Its fire goes by the new count.
    await fireAt(sharded, T1);
    const id = `tick@${T1}`;
    expect(await idsOn(sharded, shardOf(id, 4))).toEqual([id]);

    expectError(await call("PATCH", fixture.base, { json: { shards: 2 } }), 409, "lane_not_empty");
  });
});

describe("schedules on a sharded lane: the fires", () => {
  it("enqueue each fire on the shard that owns its job, the id reserved on its own shard, and advance the schedule", async () => {
    const fixture = await setupSharded(4);
    const plans = [
      // [name, queue, the job's shard, the id's own shard]
      { name: nameFiringOn(2, 4, T1, "plain"), queue: undefined, shard: 2, home: 2 },
      { name: nameFiringOn(0, 4, T1, "here"), queue: undefined, shard: 0, home: 0 },
      { name: nameFiringOn(1, 4, T1, "away"), queue: keyOn(3, 4, "q"), shard: 3, home: 1 },
      { name: nameFiringOn(2, 4, T1, "back"), queue: keyOn(0, 4, "q"), shard: 0, home: 2 },
      { name: nameFiringOn(0, 4, T1, "out"), queue: keyOn(1, 4, "q"), shard: 1, home: 0 },
    ];
    for (const { name, queue } of plans) expect((await put(fixture, name, { job: { kind: PULL_KIND, payload: { name }, ...(queue ? { queue } : {}) } })).status).toBe(201);

    await fireAt(fixture, T1);
    const stored = await everyShard(fixture);
    for (const { name, queue, shard, home } of plans) {
      const id = `${name}@${T1}`;
      expect(stored[shard], name).toContain(id);
      expect(stored.flat().filter((x) => x === id), name).toHaveLength(1);
      // Found through the router, by id, as any job of the lane.
      const job = (await get(`${fixture.base}/jobs/${id}`)).body;
      expect(job).toMatchObject({ id, kind: PULL_KIND, runAt: T1, state: "queued", payload: { name }, queue: queue ?? null });
      // The id's own shard knows where its job is.
      expect(value(await fixture.shard(home).locate(id)).shard, name).toBe(shard);
      expect(await schedule(fixture, name)).toMatchObject({ lastRunAt: T1, lastJobId: id, nextRunAt: T1 + MINUTE });
    }
    expect((await get(fixture.base)).body.counts.queued).toBe(plans.length);
    // Pull-only jobs due ask for no alarm: the lane's wake is its schedules' next fires.
    expect((await get(fixture.base)).body.nextWakeAt).toBe(T1 + MINUTE);
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T1 + MINUTE);
  });

  it("answer a repeated alarm, and a fire repeated after a crash before its advance, with the same one job", async () => {
    const fixture = await setupSharded(4);
    const name = nameFiringOn(1, 4, T1, "tick");
    const queue = keyOn(3, 4, "q");
    await put(fixture, name, { job: { kind: PULL_KIND, queue } });
    await fireAt(fixture, T1);
    const id = `${name}@${T1}`;
    const job = (await get(`${fixture.base}/jobs/${id}`)).body;
    expect(job.id).toBe(id);
    expect(await runDurableObjectAlarm(fixture.shard(0))).toBe(true); // at the same instant: nothing due
    expect(await everyShard(fixture)).toEqual([[], [], [], [id]]);

    // As if shard 0 had crashed after the job's shard took the fire and before the advance was written.
    await runInDurableObject(fixture.shard(0), (_lane: Lane, state) =>
      state.storage.sql.exec(`UPDATE schedules SET next_run_at = ?, last_run_at = NULL, last_job_id = NULL WHERE name = ?`, T1, name),
    );
    await evictDurableObject(fixture.shard(0));
    await inject(fixture.shard(0), fixture.clock);
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T1);
    expect(await runDurableObjectAlarm(fixture.shard(0))).toBe(true);
    expect(await everyShard(fixture)).toEqual([[], [], [], [id]]);
    expect((await get(`${fixture.base}/jobs/${id}`)).body).toEqual(job); // a duplicate: untouched
    expect(await schedule(fixture, name)).toMatchObject({ lastRunAt: T1, lastJobId: id, nextRunAt: T1 + MINUTE });
  });

  it("collapse missed fires into the latest instant, on its job's shard", async () => {
    const fixture = await setupSharded(4);
    const queue = keyOn(2, 4, "q");
    await put(fixture, "tick", { job: { kind: PULL_KIND, queue } });
    const latest = T0 + 10 * MINUTE;
    await fireAt(fixture, latest + 5_000); // ten fires missed
    expect(await everyShard(fixture)).toEqual([[], [], [`tick@${latest}`], []]);
    expect(await schedule(fixture, "tick")).toMatchObject({ lastRunAt: latest, lastJobId: `tick@${latest}`, nextRunAt: latest + MINUTE });
  });

  it("log a fire its shard refuses for the job's own sake (its id taken by another spec), and the schedule goes on", async () => {
    const fixture = await setupSharded(4);
    const name = nameFiringOn(3, 4, T1, "taken");
    const id = `${name}@${T1}`;
    await runInDurableObject(fixture.shard(3), (lane: Lane) => {
      const spec = { id, kind: "other", payload: "null", queue: null, priority: 0, runAt: T0, maxAttempts: 1, backoffBaseMs: 1_000, backoffMaxMs: 1_000, timeoutMs: 1_000, maxRecoveries: 0, recoveryWindowMs: 1_000, ttlMs: null, expiresAt: null, debounce: null, debounceKey: null, debounceDeadline: null, dependsOn: null, dependencyFailure: null, traceparent: null };
      value(lane.store.insertJob(spec, T0));
    });
    await put(fixture, name, { job: { kind: PULL_KIND } });
    const errors = vi.spyOn(console, "error");
    await fireAt(fixture, T1);
    const logged = errors.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>).filter((e) => e.event === "schedule.fire_failed");
    expect(logged).toEqual([expect.objectContaining({ schedule: name, jobId: id, code: "job_conflict" })]);
    expect((await get(`${fixture.base}/jobs/${id}`)).body.kind).toBe("other");
    expect(await schedule(fixture, name)).toMatchObject({ lastRunAt: T1, lastJobId: id, nextRunAt: T1 + MINUTE });
    await fireAt(fixture, T1 + MINUTE);
    expect(await idsOn(fixture, shardOf(`${name}@${T1 + MINUTE}`, 4))).toContain(`${name}@${T1 + MINUTE}`);
  });

  it("debounce a fire on its key's shard as one object would: the queued job replaced, the schedule advanced", async () => {
    const fixture = await setupSharded(4);
    const key = keyOn(2, 4, "d");
    // The fires' ids live on shard 1 (reserved there for shard 2, their key's).
    const name = nameFiringOn(1, 4, T1, "deb");
    await put(fixture, name, { job: { kind: PULL_KIND, payload: { n: 1 }, debounce: { key, delayMs: 1_000 } } });
    const T2 = T1 + MINUTE;
    await fireAt(fixture, T1);
    await fireAt(fixture, T2); // the key's job is still queued
    expect(await everyShard(fixture)).toEqual([[], [], [`${name}@${T1}`], []]);
    expect((await get(`${fixture.base}/jobs/${name}@${T1}`)).body).toMatchObject({ state: "queued", runAt: T2 });
    expectError(await get(`${fixture.base}/jobs/${name}@${T2}`), 404, "job_not_found");
    expect(await schedule(fixture, name)).toMatchObject({ lastRunAt: T2, lastJobId: `${name}@${T1}`, nextRunAt: T2 + MINUTE });
    expect((await get(fixture.base)).body.stats.debounced).toBe(1);
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T2 + MINUTE);
  });

  it("put off a fire whose shard cannot take it, with a backoff (no busy loop), and send it once the shard can", async () => {
    const fixture = await setupSharded(4);
    const queue = keyOn(3, 4, "q");
    await put(fixture, "tick", { job: { kind: PULL_KIND, queue } });
    // Shard 3 refuses every call: its database was written by a newer version.
    const newer = (sql: string) => runInDurableObject(fixture.shard(3), (_lane: Lane, state) => state.storage.sql.exec(sql, SCHEMA_VERSION + 1));
    await newer(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)`);
    await evictDurableObject(fixture.shard(3));

    const logs = vi.spyOn(console, "log");
    await fireAt(fixture, T1);
    const deferred = logs.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>).filter((e) => e.event === "schedule.fire_deferred");
    expect(deferred).toEqual([expect.objectContaining({ schedule: "tick", jobId: `tick@${T1}`, tries: 1, retryInMs: FIRE_RETRY_BASE_MS })]);
    expect(await schedule(fixture, "tick")).toMatchObject({ lastRunAt: null, lastJobId: null, nextRunAt: T1 });
    // Not due again at once: the wake is the retry's, and the stored alarm with it.
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T1 + FIRE_RETRY_BASE_MS);
    expect(await fixture.shard(0).storedAlarm()).toBe(T1 + FIRE_RETRY_BASE_MS);
    // Still refused: the backoff doubles.
    await fireAt(fixture, T1 + FIRE_RETRY_BASE_MS);
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T1 + 3 * FIRE_RETRY_BASE_MS);

    await newer(`DELETE FROM schema_migrations WHERE version = ?`);
    await evictDurableObject(fixture.shard(3));
    await inject(fixture.shard(3), fixture.clock);
    await fireAt(fixture, T1 + 3 * FIRE_RETRY_BASE_MS);
    expect(await idsOn(fixture, 3)).toEqual([`tick@${T1}`]);
    expect(await schedule(fixture, "tick")).toMatchObject({ lastRunAt: T1, lastJobId: `tick@${T1}`, nextRunAt: T1 + MINUTE });
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T1 + MINUTE);
  });

  it("send more fires than one alarm sends over alarms that come back at once", async () => {
    const fixture = await setupSharded(4);
    const n = ROUTED_FIRE_BATCH + 3;
    const queue = keyOn(1, 4, "q");
    // All but one in the object itself; the last one through the route sets the alarm.
    await runInDurableObject(fixture.shard(0), (lane: Lane) => {
      for (let i = 1; i < n; i++) value(lane.schedules.put(`s${i}`, { everyMs: MINUTE, job: { kind: PULL_KIND, queue } }));
    });
    await put(fixture, "s0", { job: { kind: PULL_KIND, queue } });
    await fireAt(fixture, T1);
    expect(await idsOn(fixture, 1)).toHaveLength(ROUTED_FIRE_BATCH);
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T1); // the rest are due: the alarm comes back now
    await fireAt(fixture, T1);
    expect(await idsOn(fixture, 1)).toHaveLength(n);
    expect(value(await fixture.shard(0).info()).nextWakeAt).toBe(T1 + MINUTE);
  });

  it("a shard takes by enqueueFire only a fire of its own, routed by the lane's count; anything else changes nothing", async () => {
    const fixture = await setupSharded(4);
    const name = nameFiringOn(2, 4, T1, "f");
    const fire = { kind: PULL_KIND, id: `${name}@${T1}`, runAt: T1, shards: 4 };
    for (const bad of [
      { ...fire, id: name }, // not a fire's id
      { ...fire, runAt: T1 + 1 }, // not the instant its id names
      { ...fire, shards: 1 },
      { ...fire, dependsOn: [{ id: "x" }] }, // not a schedule's job
      { ...fire, kind: undefined },
      "text",
    ]) refusal(await fixture.shard(2).enqueueFire(bad), "invalid_request");
    refusal(await fixture.shard(1).enqueueFire(fire), "wrong_shard"); // not this shard's
    refusal(await fixture.shard(2).enqueueFire({ ...fire, shards: 3 }), "wrong_shard"); // a stale count
    const unsharded = await setupSharded(1);
    refusal(await unsharded.shard(0).enqueueFire(fire), "wrong_shard");
    expect(await everyShard(fixture)).toEqual([[], [], [], []]);
    expect(await idsOn(unsharded, 0)).toEqual([]);
    expect(value(await fixture.shard(2).enqueueFire(fire)).status).toBe("queued");
    expect(value(await fixture.shard(2).enqueueFire(fire)).status).toBe("duplicate");
    expect(await idsOn(fixture, 2)).toEqual([fire.id]);
  });

  it("fire again, in place, a fire whose lane was resharded to one shard while it was in flight", async () => {
    const fixture = await setupSharded(4);
    await put(fixture, "tick", { job: { kind: PULL_KIND, queue: keyOn(2, 4, "q") } });
    // The lane goes to one shard (it holds no job) while the fire is on its way: shards 1..3 first, as the router tells them.
    for (let i = 1; i < 4; i++) value(await fixture.shard(i).configure({ shards: 1 }));
    fixture.clock.set(T1);
    await runInDurableObject(fixture.shard(0), async (lane: Lane) => {
      expect(lane.schedules.fireDue()).toBe(1);
      value(await lane.configure({ shards: 1 })); // shard 0 last, the fire in flight
      await lane.schedules.sent();
    });
    expect(await schedule(fixture, "tick")).toMatchObject({ lastRunAt: null, nextRunAt: T1 });
    await fireAt(fixture, T1 + FIRE_RETRY_BASE_MS);
    expect(await idsOn(fixture, 0)).toEqual([`tick@${T1}`]);
    expect(await schedule(fixture, "tick")).toMatchObject({ lastRunAt: T1, lastJobId: `tick@${T1}`, nextRunAt: T1 + MINUTE });
  });

  it("never send a schedule's fire twice at once: a fire in flight holds its schedule", async () => {
    const fixture = await setupSharded(4);
    await put(fixture, "tick", { job: { kind: PULL_KIND, queue: keyOn(2, 4, "q") } });
    fixture.clock.set(T1);
    const seen = await runInDurableObject(fixture.shard(0), async (lane: Lane) => {
      const first = lane.schedules.fireDue();
      const second = lane.schedules.fireDue(); // while the first is in flight
      const wake = lane.schedules.nextFire();
      await lane.schedules.sent();
      return { first, second, wake, after: lane.schedules.nextFire() };
    });
    expect(seen).toEqual({ first: 1, second: 0, wake: T1 + FIRE_IN_FLIGHT_MS, after: T1 + MINUTE });
    expect(await everyShard(fixture)).toEqual([[], [], [`tick@${T1}`], []]);
  });
});
