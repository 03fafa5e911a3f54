import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { unwrap } from "../../../src/shared/errors.js";
import { transitions, waitForTransition } from "../../helpers/executors.js";
import { deliveriesOf, heldDeliveries } from "../../helpers/outcomes.js";
import { inject, T0 } from "../../helpers/lane.js";

const START = T0;

async function setup() {
  const name = `hook-${crypto.randomUUID()}`;
  const lane = env.HOOK_LANE.getByName(name);
  const clock = new ManualClock(START);
  await inject(lane, clock);
  const settled = (stub: typeof lane, id: string) =>
    runInDurableObject(stub, () => waitForTransition(id, (e) => e.to === "settled"));
  return { name, lane, clock, settled };
}

describe("two-phase outcomes (onOutcome)", () => {
  it("records the outcome as completing, hands it to the hook, then settles it", async () => {
    const { lane, settled } = await setup();
    const job = unwrap(await lane.enqueue({ kind: "demo.echo", payload: { n: 1 } })).job;
    await settled(lane, job.id);
    const path = transitions(job.id).map((e) => `${e.from}>${e.to}`);
    expect(path).toEqual(["null>queued", "queued>running", "running>completing", "completing>settled"]);
    const delivered = deliveriesOf(job.id);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ state: "completing", outcome: "completed", result: { n: 1 } });
    expect(unwrap(await lane.getJob(job.id))).toMatchObject({ state: "settled", outcome: "completed" });
  });

  it("delivers failures and cancellations too", async () => {
    const { lane, settled } = await setup();
    const failed = unwrap(await lane.enqueue({ kind: "test.fatal" })).job;
    const sleeping = unwrap(await lane.enqueue({ kind: "demo.sleep", payload: { ms: 60_000 } })).job;
    await lane.cancel(sleeping.id);
    await settled(lane, failed.id);
    await settled(lane, sleeping.id);
    expect(deliveriesOf(failed.id).map((j) => j.outcome)).toEqual(["failed"]);
    expect(deliveriesOf(sleeping.id).map((j) => j.outcome)).toEqual(["cancelled"]);
  });

  it("settles the job and keeps working when the hook throws", async () => {
    const { lane, settled } = await setup();
    const bad = unwrap(await lane.enqueue({ kind: "demo.echo", payload: { hook: "throw" } })).job;
    const good = unwrap(await lane.enqueue({ kind: "demo.echo", payload: { n: 2 } })).job;
    await settled(lane, bad.id);
    await settled(lane, good.id);
    expect(unwrap(await lane.getJob(bad.id)).state).toBe("settled");
    expect(unwrap(await lane.info()).counts.completed).toBe(2);
  });

  it("delivers again after a crash between recording and delivery (at least once)", async () => {
    const { name, lane, clock } = await setup();
    // The restart delivers on the platform clock, far behind the test's: retention would take the job at once.
    unwrap(await lane.configure({ retention: { completedMs: null } }));
    const job = unwrap(await lane.enqueue({ kind: "demo.echo", payload: { hook: "hang-once" } })).job;
    await runInDurableObject(lane, () => waitForTransition(job.id, (e) => e.to === "completing"));
    expect(unwrap(await lane.getJob(job.id)).state).toBe("completing");
    await expect(runInDurableObject(lane, (_l, state) => state.abort("simulated crash"))).rejects.toThrow();
    const after = env.HOOK_LANE.getByName(name);
    await inject(after, clock);
    await runDurableObjectAlarm(after);
    await runInDurableObject(after, () => waitForTransition(job.id, (e) => e.to === "settled"));
    expect(deliveriesOf(job.id)).toHaveLength(2);
    expect(unwrap(await after.getJob(job.id))).toMatchObject({ state: "settled", outcome: "completed" });
    expect(await after.storedAlarm()).toBeNull();
  });

  it("does not spin the alarm while a delivery is in progress", async () => {
    const { lane } = await setup();
    const job = unwrap(await lane.enqueue({ kind: "demo.echo", payload: { hook: "hang-once" } })).job;
    await runInDurableObject(lane, () => waitForTransition(job.id, (e) => e.to === "completing"));
    // The delivery in hand asks for no wake "now": what is stored (the claim's lease expiry, left
    // there as harmless) is in the future, and the computed wake is null.
    const stored = await lane.storedAlarm();
    expect(stored === null || stored > START).toBe(true);
    expect(unwrap(await lane.info()).nextWakeAt).toBeNull();
  });

  it("takes every waiting outcome in hand, more than a page of them, and asks no alarm while their slow deliveries run", async () => {
    const { lane, clock } = await setup();
    heldDeliveries.reset();
    const n = 250; // more than a page (COMPLETING_BATCH) of completing jobs
    unwrap(await lane.configure({ concurrency: 50 }));
    const ids = Array.from({ length: n }, (_, i) => `held-${i}`);
    unwrap(await lane.enqueueBatch({ jobs: ids.map((id) => ({ id, kind: "demo.echo", payload: { hook: "held" } })) }));
    await runInDurableObject(lane, () => Promise.all(ids.map((id) => waitForTransition(id, (e) => e.to === "completing"))));
    await runInDurableObject(lane, () => new Promise((resolve) => setTimeout(resolve, 0))); // the flush after the last one
    expect(unwrap(await lane.info()).counts.completing).toBe(n);
    // Every one of them is in the hook: none left for an alarm to pick up, so no wake asks for now.
    expect(heldDeliveries.waiting).toBe(n);
    expect(unwrap(await lane.info()).nextWakeAt).toBeNull();
    const stored = await lane.storedAlarm();
    expect(stored === null || stored > clock.now()).toBe(true);
    // An alarm that runs anyway (say, the lease's) finds nothing to do now and asks for no other now.
    let alarms = 0;
    while (alarms < 5 && (await runDurableObjectAlarm(lane))) {
      alarms++;
      const again = await lane.storedAlarm();
      if (again === null || again > clock.now()) break;
    }
    expect(alarms).toBeLessThanOrEqual(1);
    heldDeliveries.open();
    await runInDurableObject(lane, () => Promise.all(ids.map((id) => waitForTransition(id, (e) => e.to === "settled"))));
    expect(unwrap(await lane.info()).counts).toMatchObject({ completing: 0, completed: n });
    for (const id of ids) expect(deliveriesOf(id)).toHaveLength(1);
  });

  it("refuses a cancel onlyIfQueued of a completing job with job_running, changing nothing", async () => {
    const { lane } = await setup();
    heldDeliveries.reset();
    const job = unwrap(await lane.enqueue({ kind: "demo.echo", payload: { hook: "held" } })).job;
    await runInDurableObject(lane, () => waitForTransition(job.id, (e) => e.to === "completing"));
    const result = await lane.cancel(job.id, { onlyIfQueued: true });
    expect(result.ok ? "ok" : result.error.code).toBe("job_running");
    expect(unwrap(await lane.getJob(job.id))).toMatchObject({ state: "completing", outcome: "completed", cancelRequested: false });
    heldDeliveries.open();
    await runInDurableObject(lane, () => waitForTransition(job.id, (e) => e.to === "settled"));
  });
});
