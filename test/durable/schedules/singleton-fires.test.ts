/**
 * A schedule's job with `singleton` (docs/api.md "Schedules"): a fire that skip skips still counts as
 * the fire (lastRunAt T, lastJobId the job that holds the queue); a cancel-running fire asks the
 * queue's running job to cancel and queues its own.
 */
import { describe, expect, it } from "vitest";
import { T0, claimOne, fireAlarm, refusal, rows, setup, value, type LaneFixture } from "../../helpers/lane.js";

const MINUTE = 60_000;

async function fireAt(fixture: LaneFixture, at: number): Promise<void> {
  fixture.clock.set(at);
  expect(await fireAlarm(fixture.stub)).toBe(true);
}

describe("a schedule's singleton job", () => {
  it("skip: a fire while the queue holds a job enqueues nothing and records that job as the fire's", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    value(await stub.putSchedule("sync", { everyMs: MINUTE, job: { kind: "k", queue: "q", singleton: "skip" } }));
    await fireAt(fixture, T0 + MINUTE);
    expect(value(await stub.getSchedule("sync"))).toMatchObject({ lastRunAt: T0 + MINUTE, lastJobId: `sync@${T0 + MINUTE}` });
    await fireAt(fixture, T0 + 2 * MINUTE);
    expect(value(await stub.getSchedule("sync"))).toMatchObject({ lastRunAt: T0 + 2 * MINUTE, lastJobId: `sync@${T0 + MINUTE}`, nextRunAt: T0 + 3 * MINUTE });
    expect((await rows(stub)).map((r) => r.id)).toEqual([`sync@${T0 + MINUTE}`]);
    expect(value(await stub.info()).stats.enqueued).toBe(1);
    // Once the queue's job has settled, the next fire takes its own.
    const { lease } = await claimOne(stub);
    value(await stub.complete(`sync@${T0 + MINUTE}`, { token: lease.token }));
    await fireAt(fixture, T0 + 3 * MINUTE);
    expect(value(await stub.getSchedule("sync")).lastJobId).toBe(`sync@${T0 + 3 * MINUTE}`);
  });

  it("cancel-running: a fire asks the queue's running job to cancel and queues its own behind it", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    value(await stub.putSchedule("sync", { everyMs: MINUTE, job: { kind: "k", queue: "q", singleton: "cancel-running" } }));
    await fireAt(fixture, T0 + MINUTE);
    await claimOne(stub, { leaseMs: 5 * MINUTE });
    await fireAt(fixture, T0 + 2 * MINUTE);
    expect(value(await stub.getJob(`sync@${T0 + MINUTE}`))).toMatchObject({ state: "running", cancelRequested: true });
    expect(value(await stub.getJob(`sync@${T0 + 2 * MINUTE}`)).state).toBe("queued");
    expect(value(await stub.getSchedule("sync")).lastJobId).toBe(`sync@${T0 + 2 * MINUTE}`);
  });

  it("refuses singleton without a queue, or with debounce, naming job.singleton; nothing stored", async () => {
    const { stub } = await setup();
    for (const job of [{ kind: "k", singleton: "skip" }, { kind: "k", queue: "q", singleton: "skip", debounce: { key: "d", delayMs: 1 } }]) {
      const refused = refusal(await stub.putSchedule("s", { everyMs: MINUTE, job }), "invalid_request");
      expect(JSON.stringify(refused.details)).toContain("singleton");
    }
    refusal(await stub.getSchedule("s"), "schedule_not_found");
  });
});
