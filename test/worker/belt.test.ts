/**
 * The cron's check of lost alarms (src/worker/alarm-check.ts, "the belt" in docs/guarantees.md): the
 * front worker's `scheduled` handler asks the registry which lanes have work for their alarm and has
 * each check its wake. Lanes tell the registry once when work comes; the check unwatches the idle ones.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import { REGISTRY_NAME } from "../../src/durable/registry.js";
import { ALARM_OVERDUE_GRACE_MS } from "../../src/shared/defaults.js";
import { checkAlarms } from "../../src/worker/alarm-check.js";
import { call, PULL_KIND, setup, T0, type LaneFixture } from "../helpers/http.js";
import type { TestableLane } from "../helpers/test-worker.js";
import worker from "../helpers/test-worker.js";

const MINUTE = 60_000;
const registry = () => env.REGISTRY.getByName(REGISTRY_NAME);

/** The registry's watch entry of a lane (its seq), or undefined when it does not watch it. */
async function watchSeq(lane: string): Promise<number | undefined> {
  const all: { lane: string; seq: number }[] = [];
  for (let after = 0, more = true; more; ) {
    const page = await registry().watched(after, 500);
    all.push(...page.lanes);
    more = page.more;
    after = page.lanes.at(-1)?.seq ?? after;
  }
  return all.find((w) => w.lane === lane)?.seq;
}

/** Waits for the lane's call to the registry, if one is under way. */
const told = (fixture: LaneFixture) => runInDurableObject(fixture.stub, (lane: Lane) => (lane as TestableLane).alarmWatchSettled());

const storedAlarm = (fixture: LaneFixture) => runInDurableObject(fixture.stub, (_lane, state) => state.storage.getAlarm());

/** The Worker's scheduled handler, run as the platform's cron trigger would, to its end. */
async function cronTick(): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function scheduled(fixture: LaneFixture): Promise<void> {
  const answer = await call("PUT", `${fixture.base}/schedules/tick`, { json: { everyMs: MINUTE, job: { kind: PULL_KIND } } });
  expect(answer.status).toBe(201);
  await told(fixture);
}

describe("the belt", () => {
  it("sets an alarm deleted behind the lane's back again", async () => {
    const fixture = await setup();
    await scheduled(fixture);
    expect(await storedAlarm(fixture)).toBe(T0 + MINUTE);
    await runInDurableObject(fixture.stub, (_lane, state) => state.storage.deleteAlarm());
    expect(await storedAlarm(fixture)).toBeNull();

    await cronTick();
    expect(await storedAlarm(fixture)).toBe(T0 + MINUTE);
    expect(await watchSeq(fixture.lane)).toBeDefined();
  });

  it("brings an alarm later than the wake forward, and leaves a right one alone", async () => {
    const fixture = await setup();
    await scheduled(fixture);
    await runInDurableObject(fixture.stub, (_lane, state) => state.storage.setAlarm(T0 + 60 * MINUTE));
    const first = await checkAlarms(env);
    expect(first.rearmed).toBeGreaterThanOrEqual(1);
    expect(await storedAlarm(fixture)).toBe(T0 + MINUTE);
    expect(await fixture.stub.checkWake()).toEqual({ ok: true, value: { wakeAt: T0 + MINUTE, alarmWas: T0 + MINUTE, rearmed: false, watch: true } });
  });

  it("writes again an alarm stored at a past instant that never ran (lost), and tells so", async () => {
    const fixture = await setup();
    await scheduled(fixture);
    fixture.clock.set(T0 + MINUTE + ALARM_OVERDUE_GRACE_MS + 1);
    const check = await fixture.stub.checkWake();
    expect(check).toEqual({ ok: true, value: { wakeAt: T0 + MINUTE, alarmWas: T0 + MINUTE, rearmed: true, watch: true } });
    // Within the grace, an alarm about to run is left alone.
    const fresh = await setup();
    await scheduled(fresh);
    fresh.clock.set(T0 + MINUTE + ALARM_OVERDUE_GRACE_MS);
    expect(await fresh.stub.checkWake()).toEqual({ ok: true, value: { wakeAt: T0 + MINUTE, alarmWas: T0 + MINUTE, rearmed: false, watch: true } });
  });

  it("watches a lane with pending jobs too, not only schedules", async () => {
    const fixture = await setup();
    expect((await call("POST", `${fixture.base}/jobs`, { json: { kind: PULL_KIND, delayMs: 5 * MINUTE } })).status).toBe(201);
    await told(fixture);
    expect(await watchSeq(fixture.lane)).toBeDefined();
    await runInDurableObject(fixture.stub, (_lane, state) => state.storage.deleteAlarm());
    await cronTick();
    expect(await storedAlarm(fixture)).toBe(T0 + 5 * MINUTE);
  });

  it("hears from a lane once while it has work, unwatches it once idle, and hears again when work comes back", async () => {
    const fixture = await setup();
    // A lane that keeps its settled jobs: else their retention horizon is work ahead, and it is never idle.
    expect((await call("PATCH", fixture.base, { json: { retention: { completedMs: null, failedMs: null } } })).status).toBe(200);
    const enqueue = async (id: string) => {
      expect((await call("POST", `${fixture.base}/jobs`, { json: { id, kind: PULL_KIND, delayMs: MINUTE } })).status).toBe(201);
      await told(fixture);
    };
    await enqueue("a");
    const seq = await watchSeq(fixture.lane);
    expect(seq).toBeDefined();
    await enqueue("b"); // already watched: the lane does not call the registry again
    expect(await watchSeq(fixture.lane)).toBe(seq);

    for (const id of ["a", "b"]) expect((await call("POST", `${fixture.base}/jobs/${id}/cancel`)).status).toBe(200);
    expect(await watchSeq(fixture.lane)).toBe(seq); // idle, but only the belt unwatches (lazily)
    expect((await checkAlarms(env)).unwatched).toBeGreaterThanOrEqual(1);
    expect(await watchSeq(fixture.lane)).toBeUndefined();

    await enqueue("c");
    const again = await watchSeq(fixture.lane);
    expect(again).toBeGreaterThan(seq!);
  });

  it("does not unwatch a lane that said it has work since the belt found it idle", async () => {
    const lane = `belt-${crypto.randomUUID()}`;
    await registry().watch(lane);
    const seq = (await watchSeq(lane))!;
    await registry().watch(lane); // work came back after the check
    expect(await registry().unwatch(lane, seq)).toBe(false);
    expect(await watchSeq(lane)).toBeGreaterThan(seq);
    expect(await registry().unwatch(lane, (await watchSeq(lane))!)).toBe(true);
    expect(await watchSeq(lane)).toBeUndefined();
  });
});
