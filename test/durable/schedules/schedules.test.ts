/**
 * Schedules on the lane's one alarm, with the manual clock: fires at the right instants, `<name>@<T>`
 * ids, missed fires collapsed, repeated alarms answered as duplicates, daylight saving in a zone.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { SCHEDULE_FIRE_BATCH } from "../../../src/shared/defaults.js";
import type { Schedule } from "../../../src/shared/schedule.js";
import { T0, enqueue, evict, fireAlarm, refusal, rows, setup, sql, value, wake, type LaneFixture, type LaneStub } from "../../helpers/lane.js";

const MINUTE = 60_000;

async function put(stub: LaneStub, name: string, body: Record<string, unknown>): Promise<Schedule> {
  return value(await stub.putSchedule(name, { job: { kind: "tick" }, ...body })).schedule;
}

const schedule = async (stub: LaneStub, name: string) => value(await stub.getSchedule(name));

/** Moves the clock to the schedule's next fire and runs the alarm; answers the instant fired. */
async function fireNext(fixture: LaneFixture, name: string): Promise<number> {
  const { nextRunAt } = await schedule(fixture.stub, name);
  expect(nextRunAt).not.toBeNull();
  fixture.clock.set(nextRunAt!);
  expect(await fireAlarm(fixture.stub)).toBe(true);
  const fired = await schedule(fixture.stub, name);
  expect(fired.lastRunAt).toBe(nextRunAt);
  return fired.lastRunAt!;
}

/** Wall-clock time in Paris, to read the DST tests by. */
const paris = (at: number) => new Date(at).toLocaleString("sv-SE", { timeZone: "Europe/Paris" }).slice(0, 16);

describe("an interval schedule", () => {
  it("fires first at the PUT's time + everyMs, then every everyMs, as <name>@<T> with runAt T", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    const created = await put(stub, "tick", { everyMs: MINUTE, job: { kind: "report", payload: { n: 1 }, priority: 3 } });
    expect(created).toEqual({
      name: "tick", cron: null, everyMs: MINUTE, timezone: null, job: { kind: "report", payload: { n: 1 }, priority: 3 }, paused: false,
      nextRunAt: T0 + MINUTE, lastRunAt: null, lastJobId: null, createdAt: T0, updatedAt: T0,
    });
    // The next fire is the lane's wake, and the stored alarm.
    expect(await wake(stub)).toBe(T0 + MINUTE);

    clock.set(T0 + MINUTE - 1);
    await fireAlarm(stub); // early: nothing is due
    expect(await rows(stub)).toEqual([]);

    expect(await fireNext(fixture, "tick")).toBe(T0 + MINUTE);
    expect(await fireNext(fixture, "tick")).toBe(T0 + 2 * MINUTE);
    const jobs = await rows(stub);
    expect(jobs.map((j) => [j.id, j.run_at, j.kind, j.payload, j.priority])).toEqual([
      [`tick@${T0 + MINUTE}`, T0 + MINUTE, "report", '{"n":1}', 3],
      [`tick@${T0 + 2 * MINUTE}`, T0 + 2 * MINUTE, "report", '{"n":1}', 3],
    ]);
    expect(await schedule(stub, "tick")).toMatchObject({ lastRunAt: T0 + 2 * MINUTE, lastJobId: `tick@${T0 + 2 * MINUTE}`, nextRunAt: T0 + 3 * MINUTE, updatedAt: T0 });
    expect(await wake(stub)).toBe(T0 + 3 * MINUTE);
    // The job reads back under its reserved id.
    expect(value(await stub.getJob(`tick@${T0 + MINUTE}`)).runAt).toBe(T0 + MINUTE);
  });

  it("collapses missed fires after a long gap into one job, the latest, then goes on from now", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    await put(stub, "tick", { everyMs: MINUTE });
    clock.set(T0 + 10 * MINUTE + 5_000); // ten fires missed
    await fireAlarm(stub);
    expect((await rows(stub)).map((j) => [j.id, j.run_at])).toEqual([[`tick@${T0 + 10 * MINUTE}`, T0 + 10 * MINUTE]]);
    expect((await schedule(stub, "tick")).nextRunAt).toBe(T0 + 11 * MINUTE);
  });
});

describe("a cron schedule", () => {
  it("fires at the expression's instants (UTC by default), seconds field allowed", async () => {
    const fixture = await setup();
    const every5 = Math.ceil((T0 + 1) / (5 * MINUTE)) * 5 * MINUTE;
    const created = await put(fixture.stub, "five", { cron: "*/5 * * * *" });
    expect(created).toMatchObject({ cron: "*/5 * * * *", everyMs: null, timezone: "UTC", nextRunAt: every5 });
    expect(await fireNext(fixture, "five")).toBe(every5);
    expect(await fireNext(fixture, "five")).toBe(every5 + 5 * MINUTE);
    expect(new Date(every5).getUTCMinutes() % 5).toBe(0);

    await put(fixture.stub, "seconds", { cron: "*/10 * * * * *" });
    const first = await fireNext(fixture, "seconds");
    expect(first % 10_000).toBe(0);
    expect(await fireNext(fixture, "seconds")).toBe(first + 10_000);
  });

  it("collapses missed fires into the latest instant at or before now", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    await put(stub, "five", { cron: "*/5 * * * *" });
    const now = T0 + 3 * 60 * MINUTE + 7_000;
    clock.set(now);
    await fireAlarm(stub);
    const latest = Math.floor(now / (5 * MINUTE)) * 5 * MINUTE;
    expect((await rows(stub)).map((j) => j.id)).toEqual([`five@${latest}`]);
    expect((await schedule(stub, "five")).nextRunAt).toBe(latest + 5 * MINUTE);
  });

  // Our choice is croner's, Vixie cron's: a fixed-time job (one value in minute and hour) runs once
  // when its local time occurs twice (at the first occurrence) and, when its local time does not
  // exist, at the first valid time after the gap; a wildcard job (`0 * * * *`) runs at every real
  // hour, both occurrences of the repeated hour included, and the skipped hour is not there to run.
  it("runs a fixed-time job in Europe/Paris once across both daylight-saving changes", async () => {
    const fixture = await setup();
    fixture.clock.set(Date.parse("2096-10-26T12:00:00Z")); // fall back: Sunday 28 October 2096, 03:00 CEST → 02:00 CET
    await put(fixture.stub, "nightly", { cron: "30 2 * * *", timezone: "Europe/Paris" });
    const fired: number[] = [];
    for (let i = 0; i < 3; i++) fired.push(await fireNext(fixture, "nightly"));
    expect(fired.map((at) => new Date(at).toISOString())).toEqual(["2096-10-27T00:30:00.000Z", "2096-10-28T00:30:00.000Z", "2096-10-29T01:30:00.000Z"]);
    expect(fired.map(paris)).toEqual(["2096-10-27 02:30", "2096-10-28 02:30", "2096-10-29 02:30"]); // not again at 01:30Z on the 28th

    fixture.clock.set(Date.parse("2097-03-29T12:00:00Z")); // spring forward: Sunday 31 March 2097, 02:00 CET → 03:00 CEST
    await put(fixture.stub, "nightly", { cron: "30 2 * * *", timezone: "Europe/Paris", paused: false, job: { kind: "tick", payload: 2 } });
    const spring: number[] = [];
    for (let i = 0; i < 3; i++) spring.push(await fireNext(fixture, "nightly"));
    expect(spring.map((at) => new Date(at).toISOString())).toEqual(["2097-03-30T01:30:00.000Z", "2097-03-31T01:00:00.000Z", "2097-04-01T00:30:00.000Z"]);
    expect(spring.map(paris)).toEqual(["2097-03-30 02:30", "2097-03-31 03:00", "2097-04-01 02:30"]); // 02:30 did not exist: right after the gap
  });

  it("runs an hourly job at every real hour across both daylight-saving changes", async () => {
    const fixture = await setup();
    fixture.clock.set(Date.parse("2096-10-27T23:30:00Z"));
    await put(fixture.stub, "hourly", { cron: "0 * * * *", timezone: "Europe/Paris" });
    const fall: number[] = [];
    for (let i = 0; i < 4; i++) fall.push(await fireNext(fixture, "hourly"));
    expect(fall.map((at) => new Date(at).toISOString().slice(11, 16))).toEqual(["00:00", "01:00", "02:00", "03:00"]);
    expect(fall.map(paris)).toEqual(["2096-10-28 02:00", "2096-10-28 02:00", "2096-10-28 03:00", "2096-10-28 04:00"]); // 02:00 twice

    fixture.clock.set(Date.parse("2097-03-30T23:30:00Z"));
    await put(fixture.stub, "hourly", { cron: "0 * * * *", timezone: "Europe/Paris", job: { kind: "tock" } });
    const spring: number[] = [];
    for (let i = 0; i < 3; i++) spring.push(await fireNext(fixture, "hourly"));
    expect(spring.map((at) => new Date(at).toISOString().slice(11, 16))).toEqual(["00:00", "01:00", "02:00"]);
    expect(spring.map(paris)).toEqual(["2097-03-31 01:00", "2097-03-31 03:00", "2097-03-31 04:00"]); // no 02:00 that day
  });
});

describe("pause, replace, delete", () => {
  it("a paused schedule fires nothing and has no next fire; resuming starts from now", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    expect(await put(stub, "tick", { everyMs: MINUTE, paused: true })).toMatchObject({ paused: true, nextRunAt: null });
    expect(await wake(stub)).toBeNull();
    await enqueue(stub, { id: "later", runAt: T0 + 10 * MINUTE }); // an alarm for another reason
    clock.set(T0 + 10 * MINUTE);
    expect(await fireAlarm(stub)).toBe(true);
    expect((await rows(stub)).map((j) => j.id)).toEqual(["later"]);

    expect(await put(stub, "tick", { everyMs: MINUTE })).toMatchObject({ paused: false, nextRunAt: T0 + 11 * MINUTE });
    expect(await wake(stub)).toBe(T0 + 11 * MINUTE);
  });

  it("a replaced schedule recomputes its next fire from now and keeps its fires; an unchanged PUT changes nothing", async () => {
    const fixture = await setup();
    const { stub, clock } = fixture;
    await put(stub, "tick", { everyMs: MINUTE });
    await fireNext(fixture, "tick");
    clock.advance(30_000);
    const replaced = value(await stub.putSchedule("tick", { everyMs: 10_000, job: { kind: "other" } }));
    expect(replaced.created).toBe(false);
    expect(replaced.schedule).toMatchObject({
      everyMs: 10_000, job: { kind: "other" }, nextRunAt: T0 + MINUTE + 40_000, lastRunAt: T0 + MINUTE, createdAt: T0, updatedAt: T0 + MINUTE + 30_000,
    });
    expect(await wake(stub)).toBe(T0 + MINUTE + 40_000);

    // The same definition again (a Worker declaring its schedules at every start) does not push the fire back.
    clock.advance(5_000);
    const again = value(await stub.putSchedule("tick", { job: { kind: "other" }, everyMs: 10_000 }));
    expect(again).toEqual({ created: false, schedule: replaced.schedule });

    // A cron replacing an interval.
    const cron = await put(stub, "tick", { cron: "0 0 * * *", timezone: "Asia/Tokyo" });
    expect(cron).toMatchObject({ everyMs: null, cron: "0 0 * * *", timezone: "Asia/Tokyo" });
    expect(paris(cron.nextRunAt!)).toMatch(/ (16|17):00$/); // midnight in Tokyo
  });

  it("a deleted schedule is gone with its wake term; its jobs stay", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await put(stub, "tick", { everyMs: MINUTE });
    await fireNext(fixture, "tick");
    expect(value(await stub.deleteSchedule("tick"))).toEqual({ deleted: true });
    refusal(await stub.getSchedule("tick"), "schedule_not_found");
    refusal(await stub.deleteSchedule("tick"), "schedule_not_found");
    expect(value(await stub.listSchedules({})).schedules).toEqual([]);
    expect((await rows(stub)).map((j) => j.id)).toEqual([`tick@${T0 + MINUTE}`]);
    expect(await wake(stub)).toBeNull();
  });

  it("lists schedules by name, in pages when asked", async () => {
    const { stub } = await setup();
    for (const name of ["c", "a", "b"]) await put(stub, name, { everyMs: MINUTE });
    expect(value(await stub.listSchedules()).schedules.map((s) => s.name)).toEqual(["a", "b", "c"]);
    const first = value(await stub.listSchedules({ limit: 2 }));
    expect(first.schedules.map((s) => s.name)).toEqual(["a", "b"]);
    expect(first.cursor).toBe("b");
    expect(value(await stub.listSchedules({ limit: 2, cursor: first.cursor }))).toMatchObject({ schedules: [{ name: "c" }], cursor: null });
  });
});

describe("fires repeated", () => {
  it("an alarm run again at the same instant enqueues nothing more", async () => {
    const fixture = await setup();
    await put(fixture.stub, "tick", { everyMs: MINUTE });
    await fireNext(fixture, "tick");
    await fireAlarm(fixture.stub);
    await fireAlarm(fixture.stub);
    expect((await rows(fixture.stub)).map((j) => j.id)).toEqual([`tick@${T0 + MINUTE}`]);
  });

  it("a fire repeated (its advance lost) is a duplicate, never a second job", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await put(stub, "tick", { everyMs: MINUTE });
    const at = await fireNext(fixture, "tick");
    const before = await rows(stub);
    // As if the fire's advance had never been written before a crash: the row waits for the same fire again.
    await sql(stub, `UPDATE schedules SET next_run_at = ?, last_run_at = NULL, last_job_id = NULL WHERE name = 'tick'`, at);
    await evict(fixture);
    expect(await wake(stub)).toBe(at);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await rows(stub)).toEqual(before); // the same one job, untouched
    expect(await schedule(stub, "tick")).toMatchObject({ lastRunAt: at, lastJobId: `tick@${at}`, nextRunAt: at + MINUTE });
  });

  it("a fire whose id a job of another spec holds is refused alone; the other fires and the schedules go on", async () => {
    const { stub, clock } = await setup();
    await put(stub, "a", { everyMs: MINUTE });
    await put(stub, "b", { everyMs: MINUTE });
    const taken = `a@${T0 + MINUTE}`;
    await runInDurableObject(stub, (lane: Lane) => {
      const spec = { id: taken, kind: "other", payload: "null", queue: null, priority: 0, runAt: T0, maxAttempts: 1, backoffBaseMs: 1_000, backoffMaxMs: 1_000, timeoutMs: 1_000, maxRecoveries: 0, recoveryWindowMs: 1_000, ttlMs: null, expiresAt: null, debounce: null, debounceKey: null, debounceDeadline: null, dependsOn: null, dependencyFailure: null, traceparent: null };
      value(lane.store.insertJob(spec, T0));
    });
    clock.set(T0 + MINUTE);
    await fireAlarm(stub);
    expect((await rows(stub)).map((j) => [j.id, j.kind])).toEqual([[taken, "other"], [`b@${T0 + MINUTE}`, "tick"]]);
    for (const name of ["a", "b"]) expect((await schedule(stub, name)).nextRunAt).toBe(T0 + 2 * MINUTE);
  });

  it("fires more due schedules than one alarm takes over alarms that come back at once", async () => {
    const { stub, clock } = await setup();
    const n = SCHEDULE_FIRE_BATCH + 3;
    // All but one in the object itself (an RPC each would take seconds here); the last one through RPC sets the alarm.
    await runInDurableObject(stub, (lane: Lane) => {
      for (let i = 1; i < n; i++) value(lane.schedules.put(`s${i}`, { everyMs: MINUTE, job: { kind: "tick" } }));
    });
    await put(stub, "s0", { everyMs: MINUTE });
    clock.set(T0 + MINUTE);
    await fireAlarm(stub);
    expect((await rows(stub)).length).toBe(SCHEDULE_FIRE_BATCH);
    expect(await wake(stub)).toBe(T0 + MINUTE); // the rest are due: the alarm comes back now
    await fireAlarm(stub);
    expect((await rows(stub)).length).toBe(n);
    expect(await wake(stub)).toBe(T0 + 2 * MINUTE);
  });
});

describe("a fire with a debounce", () => {
  const debounced = { everyMs: MINUTE, job: { kind: "tick", payload: { n: 1 }, debounce: { key: "d", delayMs: 1_000 } } };

  it("replaces the queued job of its key, answers debounced and advances: lastJobId is the surviving job", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    await put(stub, "tick", debounced);
    const first = await fireNext(fixture, "tick");
    const second = await fireNext(fixture, "tick"); // the key's job is still queued
    expect((await rows(stub)).map((j) => [j.id, j.run_at, j.state, j.debounce_key])).toEqual([[`tick@${first}`, second, "queued", "d"]]);
    expect(await schedule(stub, "tick")).toMatchObject({ lastRunAt: second, lastJobId: `tick@${first}`, nextRunAt: second + MINUTE });
    expect(value(await stub.info()).stats).toMatchObject({ debounced: 1 });
    expect(await wake(stub)).toBe(second + MINUTE);

    // Once the job has started, the next fire makes a new job under its own id.
    const [claimed] = value(await stub.claim({ kinds: ["tick"], max: 1, leaseMs: 10 * MINUTE })).jobs;
    expect(claimed!.id).toBe(`tick@${first}`);
    const third = await fireNext(fixture, "tick");
    expect((await rows(stub)).map((j) => [j.id, j.state])).toEqual([[`tick@${first}`, "running"], [`tick@${third}`, "queued"]]);
    expect(await schedule(stub, "tick")).toMatchObject({ lastRunAt: third, lastJobId: `tick@${third}` });
  });

  it("two schedules of one key due in one alarm make one job; both advance, naming it", async () => {
    const { stub, clock } = await setup();
    await put(stub, "a", debounced);
    await put(stub, "b", { ...debounced, job: { ...debounced.job, payload: { n: 2 } } });
    await put(stub, "plain", { everyMs: MINUTE });
    const at = T0 + MINUTE;
    clock.set(at);
    expect(await fireAlarm(stub)).toBe(true);
    const jobs = await rows(stub);
    expect(jobs.map((j) => j.id).sort()).toEqual([`a@${at}`, `plain@${at}`]);
    expect(jobs.find((j) => j.id === `a@${at}`)!.payload).toBe('{"n":2}'); // b's fire replaced a's job
    for (const name of ["a", "b"]) expect(await schedule(stub, name)).toMatchObject({ lastRunAt: at, lastJobId: `a@${at}`, nextRunAt: at + MINUTE });
    expect(await schedule(stub, "plain")).toMatchObject({ lastRunAt: at, lastJobId: `plain@${at}` });
  });
});

describe("a schedule's definition", () => {
  it.each([
    ["a bad cron expression", { cron: "61 * * * *" }, "cron"],
    ["a cron of four fields", { cron: "* * * *" }, "cron"],
    ["a nickname, not a cron expression", { cron: "@daily" }, "cron"],
    ["a date that never comes", { cron: "0 0 31 2 *" }, "cron"],
    ["an unknown time zone", { cron: "* * * * *", timezone: "Mars/Olympus" }, "timezone"],
    ["a time zone on an interval", { everyMs: MINUTE, timezone: "UTC" }, "timezone"],
    ["an interval under a second", { everyMs: 999 }, "everyMs"],
    ["both cron and everyMs", { cron: "* * * * *", everyMs: MINUTE }, "everyMs"],
    ["neither cron nor everyMs", {}, "cron"],
  ])("refuses %s, naming the field", async (_what, body, field) => {
    const { stub } = await setup();
    const error = refusal(await stub.putSchedule("tick", { job: { kind: "k" }, ...body }), "invalid_request");
    expect(error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: [field] })]));
    expect(value(await stub.listSchedules()).schedules).toEqual([]);
  });

  it("refuses a job that chooses its own id or runAt, and a bad schedule name", async () => {
    const { stub } = await setup();
    const id = refusal(await stub.putSchedule("tick", { everyMs: MINUTE, job: { kind: "k", id: "x" } }), "invalid_request");
    expect(id.details).toEqual([{ path: ["job", "id"], message: 'unknown field "id"' }]);
    refusal(await stub.putSchedule("tick", { everyMs: MINUTE, job: { kind: "k", runAt: T0 } }), "invalid_request");
    const name = refusal(await stub.putSchedule("a@1", { everyMs: MINUTE, job: { kind: "k" } }), "invalid_request");
    expect(name.details).toEqual([expect.objectContaining({ path: ["name"] })]);
    refusal(await stub.putSchedule("x".repeat(101), { everyMs: MINUTE, job: { kind: "k" } }), "invalid_request");
    expect(value(await stub.listSchedules()).schedules).toEqual([]);
  });
});
