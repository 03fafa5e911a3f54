/**
 * Each step of the alarm stands alone: a step that throws (here the schedules' fires, over a row
 * whose job no longer parses) is logged and tried again after a backoff of its own, while every
 * other step of the same alarm still runs, and the alarm comes back for it without spinning.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { ALARM_STEP_BACKOFF_BASE_MS } from "../../../src/shared/defaults.js";
import { T0, alarmAt, claimOne, enqueue, fireAlarm, row, setup, sql, value } from "../../helpers/lane.js";

const MINUTE = 60_000;
let lines: string[] = [];

beforeEach(() => {
  lines = [];
  // A failure's line goes to stderr.
  vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
});
afterEach(() => vi.restoreAllMocks());

const stepFailures = () => lines.filter((l) => l.includes('"lane.alarm_step_failed"')).map((l) => JSON.parse(l));

it("a step that throws is logged and retried with backoff; the rest of the alarm still runs", async () => {
  const { stub, clock } = await setup();
  value(await stub.putSchedule("tick", { everyMs: MINUTE, job: { kind: "k" } }));
  await enqueue(stub, { id: "a" });
  await claimOne(stub, { leaseMs: 1_000 });
  await sql(stub, `UPDATE schedules SET job = '{"kind": ' WHERE name = 'tick'`);

  clock.set(T0 + MINUTE);
  expect(await fireAlarm(stub)).toBe(true);
  // The lease expired long ago: recovery ran though the fires threw before it.
  expect(await row(stub, "a")).toMatchObject({ state: "queued", generation: 1 });
  expect(stepFailures()).toEqual([expect.objectContaining({ step: "fires", failures: 1, retryAt: T0 + MINUTE + ALARM_STEP_BACKOFF_BASE_MS })]);
  // The missed fire is due, but the alarm comes back at the step's retry, not at once again and again.
  expect(await alarmAt(stub)).toBe(T0 + MINUTE + ALARM_STEP_BACKOFF_BASE_MS);

  clock.set(T0 + MINUTE + ALARM_STEP_BACKOFF_BASE_MS);
  expect(await fireAlarm(stub)).toBe(true);
  expect(stepFailures().at(-1)).toMatchObject({ step: "fires", failures: 2, retryAt: clock.now() + 2 * ALARM_STEP_BACKOFF_BASE_MS });
  expect(await alarmAt(stub)).toBe(clock.now() + 2 * ALARM_STEP_BACKOFF_BASE_MS);

  // Mended, the step runs at its retry: the missed fire is enqueued and the schedule moves on.
  await sql(stub, `UPDATE schedules SET job = '{"kind": "k"}' WHERE name = 'tick'`);
  clock.advance(2 * ALARM_STEP_BACKOFF_BASE_MS);
  expect(await fireAlarm(stub)).toBe(true);
  expect(await row(stub, `tick@${T0 + MINUTE}`)).toMatchObject({ state: "queued" });
  expect(await alarmAt(stub)).toBe(T0 + 2 * MINUTE);
  expect(stepFailures()).toHaveLength(2);
});

it("a step waiting out its backoff is not run by an alarm that comes earlier for other work", async () => {
  const { stub, clock } = await setup();
  value(await stub.putSchedule("tick", { everyMs: MINUTE, job: { kind: "k" } }));
  await sql(stub, `UPDATE schedules SET job = 'not json' WHERE name = 'tick'`);
  clock.set(T0 + MINUTE);
  await fireAlarm(stub);
  expect(stepFailures()).toHaveLength(1);
  // A lease that expires before the retry brings the alarm back first: recovery runs, the fires wait.
  await enqueue(stub, { id: "a" });
  await claimOne(stub, { leaseMs: 100 });
  expect(await alarmAt(stub)).toBe(clock.now() + 100);
  clock.advance(100);
  await fireAlarm(stub);
  expect(await row(stub, "a")).toMatchObject({ state: "queued" });
  expect(stepFailures()).toHaveLength(1);
  expect(await alarmAt(stub)).toBe(T0 + MINUTE + ALARM_STEP_BACKOFF_BASE_MS);
});
