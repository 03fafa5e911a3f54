/**
 * Snooze (a fenced write that ends the lease, queues the job for later and gives the attempt back)
 * and durable sleep in process (`ctx.sleep`, built on a checkpoint and a snooze), on manual clocks.
 */
import { describe, expect, it } from "vitest";
import { MAX_SNOOZE_MS } from "../../../src/shared/defaults.js";
import { setup as inProcess, START } from "../../helpers/dispatch.js";
import { gate } from "../../helpers/executors.js";
import { claim, claimOne, enqueue, fireAlarm, refusal, setup, sql, value } from "../../helpers/lane.js";

describe("snooze", () => {
  it("queues the job for later, gives its attempt back, keeps its checkpoints, and supersedes the token", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "j", maxAttempts: 1 });
    const first = await claimOne(stub);
    value(await stub.saveCheckpoint("j", "half", { token: first.lease.token, value: { done: 50 } }));
    const { job } = value(await stub.snooze("j", { token: first.lease.token, delayMs: 5_000 }));
    expect(job).toMatchObject({ state: "queued", attempts: 0, generation: 1, runAt: clock.now() + 5_000, lease: null });
    refusal(await stub.complete("j", { token: first.lease.token, result: 1 }), "lease_superseded");
    refusal(await stub.snooze("j", { token: first.lease.token, delayMs: 0 }), "lease_superseded");
    expect(value(await stub.info()).stats.snoozed).toBe(1);
    expect(await claim(stub)).toEqual([]);
    clock.advance(5_000);
    const second = await claimOne(stub);
    // maxAttempts 1 and still its first attempt: a snooze spends none.
    expect(second).toMatchObject({ attempts: 1, generation: 2, checkpoints: { half: { done: 50 } } });
    value(await stub.complete("j", { token: second.lease.token, result: "ok" }));
  });

  it("is refused like any fenced write, changing nothing: stale or expired token, delay out of range", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "j" });
    const held = await claimOne(stub, { leaseMs: 1_000 });
    refusal(await stub.snooze("j", { token: "not-the-token", delayMs: 1 }), "lease_superseded");
    refusal(await stub.snooze("j", { token: held.lease.token, delayMs: MAX_SNOOZE_MS + 1 }), "invalid_request");
    refusal(await stub.snooze("j", { token: held.lease.token, delayMs: -1 }), "invalid_request");
    refusal(await stub.snooze("nope", { token: held.lease.token, delayMs: 1 }), "job_not_found");
    expect(value(await stub.getJob("j"))).toMatchObject({ state: "running", attempts: 1 });
    clock.advance(1_000);
    refusal(await stub.snooze("j", { token: held.lease.token, delayMs: 1 }), "lease_expired");
    expect(value(await stub.info()).stats.snoozed).toBe(0);
  });

  it("is an ack op, and frees the job's queue slot at once", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q" });
    const a = await claimOne(stub);
    expect(await claim(stub)).toEqual([]); // a serial queue: b waits behind a
    const { results } = value(await stub.acks({ acks: [{ op: "snooze", id: "a", token: a.lease.token, delayMs: 60_000 }] }));
    expect(results).toEqual([{ id: "a", ok: true }]);
    // a is queued again but not due, and ahead of b in its queue: the queue keeps its order.
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "queued", runAt: clock.now() + 60_000 });
    expect(value(await stub.queueInfo("q"))).toMatchObject({ running: 0, queued: 2 });
  });
});

describe("durable sleep in process", () => {
  it("demo.sleepy sleeps twice without holding an executor or spending an attempt, and resumes past each sleep", async () => {
    const { lane, clock, enqueue: add, get, waitFor } = await inProcess();
    const job = await add({ id: "sleepy", kind: "demo.sleepy", payload: { sleeps: 2, ms: 1_000 }, maxAttempts: 1 });
    await waitFor(job.id, (e) => e.from === "running" && e.to === "queued");
    expect(await get(job.id)).toMatchObject({ state: "queued", attempts: 0, runAt: START + 1_000 });
    const checkpoints = value(await lane.listCheckpoints(job.id)).checkpoints;
    expect(checkpoints.map((c) => [c.name, c.value])).toEqual([["z1", { wakeAt: START + 1_000 }]]);
    expect(value(await lane.info()).counts.running).toBe(0);
    clock.advance(1_000);
    await fireAlarm(lane);
    await waitFor(job.id, (e) => e.from === "running" && e.to === "queued" && e.generation === 2);
    expect((await get(job.id)).runAt).toBe(START + 2_000);
    clock.advance(1_000);
    await fireAlarm(lane);
    await waitFor(job.id, (e) => e.to === "settled");
    const done = await get(job.id);
    expect(done).toMatchObject({ outcome: "completed", result: { attempt: 1 }, attempts: 1, generation: 3 });
    expect(value(await lane.info()).stats.snoozed).toBe(2);
  });

  it("an attempt woken early sleeps on until the recorded instant", async () => {
    const { lane, clock, enqueue: add, get, waitFor } = await inProcess();
    const job = await add({ id: "early", kind: "demo.sleepy", payload: { sleeps: 1, ms: 10_000 } });
    await waitFor(job.id, (e) => e.from === "running" && e.to === "queued");
    clock.advance(4_000);
    // Due before its instant (as if its runAt had been moved): the attempt snoozes again until then.
    await sql(lane, `UPDATE jobs SET run_at = ? WHERE id = ?`, clock.now(), job.id);
    await fireAlarm(lane);
    await waitFor(job.id, (e) => e.from === "running" && e.to === "queued" && e.generation === 2);
    expect(await get(job.id)).toMatchObject({ runAt: START + 10_000, attempts: 0 });
    clock.advance(6_000);
    await fireAlarm(lane);
    await waitFor(job.id, (e) => e.to === "settled");
    expect((await get(job.id)).result).toEqual({ attempt: 1 });
  });

  it("a test executor's sleep that is caught still ends the attempt in a snooze", async () => {
    const { lane, enqueue: add, get, waitFor, inside } = await inProcess();
    const g = gate();
    const job = await add({ id: "caught", kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const slept = await inside(() => attempt.ctx.sleep("nap", 5_000).then(() => "passed", (e: Error) => e.name));
    expect(slept).toBe("JobSnoozed");
    await inside(() => attempt.open("answered anyway"));
    await waitFor(job.id, (e) => e.from === "running" && e.to === "queued");
    expect(await get(job.id)).toMatchObject({ state: "queued", result: null, attempts: 0, runAt: START + 5_000 });
    refusal(await lane.getJob("nope"), "job_not_found");
  });
});
