/**
 * The claim and the wake agree on what may start now. Under round-robin a queue of concurrency above
 * 16 with 16 or more jobs ahead that may not start now (not yet due, blocked, of a kind only a pull
 * consumer takes) still starts its due job: the wake names it, so the claim must take it, or the
 * alarm fires at "now" again and again and the job never runs.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/shared/errors.js";
import { setup as inProcess, START } from "../../helpers/dispatch.js";
import { claim, setup, value, wake, type LaneStub } from "../../helpers/lane.js";

type Ahead = "not yet due" | "pull kind" | "blocked";

/** What a job ahead of the due one is, by what holds it back. */
function aheadJob(what: Ahead, i: number): Record<string, unknown> {
  const base = { id: `ahead${i}`, queue: "big" };
  if (what === "not yet due") return { ...base, kind: "demo.echo", delayMs: 60_000 };
  if (what === "pull kind") return { ...base, kind: "pulled.elsewhere" };
  return { ...base, kind: "demo.echo", dependsOn: [{ id: "dependency" }] };
}

/** A round-robin pull lane whose queue "big" of `concurrency` holds `others` jobs of kind "other", then "mine" of kind "mine". */
async function pullLane(concurrency: number, others: number): Promise<LaneStub> {
  const { stub } = await setup();
  value(await stub.configure({ fairness: "round-robin" }));
  value(await stub.putQueue("big", { concurrency }));
  value(await stub.enqueueBatch({ jobs: Array.from({ length: others }, (_, i) => ({ id: `other${i}`, kind: "other", queue: "big" })) }));
  value(await stub.enqueue({ id: "mine", kind: "mine", queue: "big" }));
  return stub;
}

describe("round-robin: a due job behind 16 or more jobs that may not start now", () => {
  it.each(["not yet due", "pull kind", "blocked"] as Ahead[])("starts behind %s jobs in a queue of concurrency 20, and the alarm does not fire at now again", async (what) => {
    const { lane, clock, settled } = await inProcess({ concurrency: 50 });
    const stub = lane as unknown as LaneStub;
    unwrap(await lane.configure({ fairness: "round-robin" }));
    unwrap(await lane.putQueue("big", { concurrency: 20 }));
    // The dependency of the blocked ones is a pull job outside the queue: it stays queued.
    if (what === "blocked") unwrap(await lane.enqueue({ id: "dependency", kind: "pulled.elsewhere" }));
    unwrap(await lane.enqueueBatch({ jobs: Array.from({ length: 17 }, (_, i) => aheadJob(what, i)) }));
    unwrap(await lane.enqueue({ id: "due", kind: "demo.echo", queue: "big" }));
    // A few alarms at the same instant: the computed wake must not say "now" while the job stays queued.
    const seen: (number | null)[] = [];
    for (let i = 0; i < 3; i++) {
      seen.push(unwrap(await lane.info()).nextWakeAt);
      await runDurableObjectAlarm(lane);
    }
    const nows = seen.filter((at) => at === clock.now()).length;
    expect(unwrap(await lane.getJob("due")).state, `still queued; the wake said "now" ${nows} of 3 times`).not.toBe("queued");
    expect((await settled("due")).outcome).toBe("completed");
    // Nothing left that may start now: the wake is later (the delayed jobs' runAt) or none.
    const next = await wake(stub);
    expect(next === null || next > START, `the wake is ${next === null ? "none" : next - START} ms from now`).toBe(true);
  });

  it("leaves a due job beyond its queue's room queued, and the wake does not ask for now", async () => {
    const { lane, clock } = await inProcess({ concurrency: 50 });
    unwrap(await lane.configure({ fairness: "round-robin" }));
    unwrap(await lane.putQueue("big", { concurrency: 20 }));
    unwrap(await lane.enqueueBatch({ jobs: Array.from({ length: 20 }, (_, i) => aheadJob("pull kind", i)) }));
    unwrap(await lane.enqueue({ id: "due", kind: "demo.echo", queue: "big" }));
    await runDurableObjectAlarm(lane);
    expect(unwrap(await lane.getJob("due")).state).toBe("queued");
    const next = await wake(lane as unknown as LaneStub);
    expect(next === null || next > clock.now()).toBe(true);
  });

  it("a pull claim of one kind takes its job behind 16 or more of another kind", async () => {
    const stub = await pullLane(20, 17);
    expect((await claim(stub, { kinds: ["mine"] })).map((j) => j.id)).toEqual(["mine"]);
  });

  it("reads as far into a queue as its room: behind 290 of another kind in a queue of 300, not behind 300", async () => {
    const stub = await pullLane(300, 290);
    value(await stub.enqueueBatch({ jobs: Array.from({ length: 10 }, (_, i) => ({ id: `more${i}`, kind: "other", queue: "big" })) }));
    value(await stub.enqueue({ id: "beyond", kind: "mine", queue: "big" }));
    expect((await claim(stub, { kinds: ["mine"] })).map((j) => j.id)).toEqual(["mine"]);
    // One runs now: the room is 299, and 300 jobs are ahead of the last one.
    expect(await claim(stub, { kinds: ["mine"] })).toEqual([]);
  });
});
