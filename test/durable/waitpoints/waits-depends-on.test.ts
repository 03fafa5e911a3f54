/**
 * Jobs that wait on waitpoints of their own lane through `dependsOn` items, over RPC with the manual
 * clock: blocked until the waitpoint settles, released in the settlement's own transaction (no alarm
 * needed), a timeout failing the job under policy fail and counting done under ignore, a waitpoint
 * settled before the enqueue counting at once, a missing one refused, the items part of the spec.
 */
import { describe, expect, it } from "vitest";
import { T0, claim, claimOne, fireAlarm, refusal, setup, sql, value, type LaneStub } from "../../helpers/lane.js";

const job = async (stub: LaneStub, id: string) => value(await stub.getJob(id));
const waitsOf = (stub: LaneStub) => sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM job_waits`).then((r) => r[0]!.n);

describe("a job waiting on a waitpoint of its lane (dependsOn)", () => {
  it("is blocked until the waitpoint completes, released by the completion itself, and sees its result", async () => {
    const { stub, name } = await setup();
    value(await stub.createWaitpoint({ id: "order-9.paid" }));
    value(await stub.enqueue({ id: "c", kind: "k-c" }));
    const enqueued = value(await stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ waitpoint: "order-9.paid" }, { id: "c" }] }));
    expect(enqueued.status).toBe("queued");
    expect(enqueued.job.state).toBe("blocked");
    expect(enqueued.job.dependsOn).toEqual([{ lane: name, waitpoint: "order-9.paid" }, { lane: name, id: "c" }]);
    expect(value(await stub.getWaitpoint("order-9.paid")).waiters).toBe(1);
    // The job item settles first: still blocked on the waitpoint.
    const c = await claimOne(stub, { kinds: ["k-c"] });
    value(await stub.complete("c", { token: c.lease.token, result: "from c" }));
    await fireAlarm(stub);
    expect((await job(stub, "p")).state).toBe("blocked");

    value(await stub.completeWaitpoint("order-9.paid", { result: { paid: 42 } }));
    expect(value(await stub.getWaitpoint("order-9.paid")).waiters).toBe(0);
    // Released in the completion's transaction: no alarm has run since.
    expect((await job(stub, "p")).state).toBe("queued");
    expect(value(await stub.info()).counts.blocked).toBe(0);
    const claimed = await claimOne(stub, { kinds: ["k-p"] });
    expect(claimed.dependencies).toEqual([
      { lane: name, waitpoint: "order-9.paid", outcome: "completed", result: { paid: 42 } },
      { lane: name, id: "c", outcome: "completed", result: "from c", error: null },
    ]);
  });

  it("fails the job at once when the waitpoint times out (policy fail), naming it", async () => {
    const { stub, clock, name } = await setup();
    value(await stub.createWaitpoint({ id: "w", timeoutMs: 1_000 }));
    value(await stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ waitpoint: "w" }] }));
    clock.advance(1_000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(value(await stub.getWaitpoint("w")).state).toBe("timedOut");
    expect(await job(stub, "p")).toMatchObject({ state: "settled", outcome: "failed", error: `waitpoint ${name}/w timedOut`, attempts: 0 });
  });

  it("counts a timed-out waitpoint as done under policy ignore, its entry saying timedOut with no result", async () => {
    const { stub, clock, name } = await setup();
    value(await stub.createWaitpoint({ id: "w", timeoutMs: 1_000 }));
    value(await stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ waitpoint: "w", lane: name }], dependencyFailure: "ignore" }));
    clock.advance(1_000);
    await fireAlarm(stub);
    expect((await job(stub, "p")).state).toBe("queued");
    const claimed = await claimOne(stub, { kinds: ["k-p"] });
    expect(claimed.dependencies).toEqual([{ lane: name, waitpoint: "w", outcome: "timedOut", result: null }]);
  });

  it("counts a waitpoint settled before the enqueue at once: queued when completed, failed when timed out", async () => {
    const { stub, clock, name } = await setup();
    value(await stub.completeWaitpoint("done", { result: 7 }));
    value(await stub.createWaitpoint({ id: "late", timeoutMs: 10 }));
    clock.advance(10);
    await fireAlarm(stub);
    const queued = value(await stub.enqueue({ id: "a", kind: "k-a", dependsOn: [{ waitpoint: "done" }] }));
    expect(queued).toMatchObject({ status: "queued", job: { state: "queued" } });
    expect((await claimOne(stub, { kinds: ["k-a"] })).dependencies).toEqual([{ lane: name, waitpoint: "done", outcome: "completed", result: 7 }]);
    const failed = value(await stub.enqueue({ id: "b", kind: "k-b", dependsOn: [{ waitpoint: "done" }, { waitpoint: "late" }] }));
    expect(failed).toMatchObject({ status: "queued", job: { state: "settled", outcome: "failed", error: `waitpoint ${name}/late timedOut` } });
    expect(value(await stub.getWaitpoint("done")).waiters).toBe(0);
  });

  it("refuses a waitpoint that does not exist with dependency_not_found, enqueueing nothing", async () => {
    const { stub, name } = await setup();
    value(await stub.createWaitpoint({ id: "there" }));
    const error = refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ waitpoint: "there" }, { waitpoint: "gone" }] }), "dependency_not_found");
    expect(error.details).toEqual({ dependencies: [{ lane: name, waitpoint: "gone" }] });
    refusal(await stub.getJob("p"), "job_not_found");
    expect(await waitsOf(stub)).toBe(0);
    expect(value(await stub.getWaitpoint("there")).waiters).toBe(0);
  });

  it("refuses items that name both or neither of id and waitpoint, the same waitpoint twice, or more than 100 items", async () => {
    const { stub } = await setup();
    value(await stub.createWaitpoint({ id: "w" }));
    const bad: unknown[] = [
      [{ id: "c", waitpoint: "w" }],
      [{ lane: "l" }],
      [{ waitpoint: "w" }, { waitpoint: "w" }],
      [{ waitpoint: "no spaces" }],
      [...Array.from({ length: 50 }, (_, i) => ({ waitpoint: `w${i}` })), ...Array.from({ length: 51 }, (_, i) => ({ id: `c${i}` }))],
    ];
    for (const dependsOn of bad) refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn }), "invalid_request");
    refusal(await stub.getJob("p"), "job_not_found");
    expect(value(await stub.getWaitpoint("w")).waiters).toBe(0);
  });

  it("holds the items as part of the spec: the same again is a duplicate, another waitpoint a conflict", async () => {
    const { stub } = await setup();
    value(await stub.createWaitpoint({ id: "w1" }));
    value(await stub.createWaitpoint({ id: "w2" }));
    value(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ waitpoint: "w1" }] }));
    expect(value(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ waitpoint: "w1" }] })).status).toBe("duplicate");
    refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ waitpoint: "w2" }] }), "job_conflict");
    refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "w1" }] }), "job_conflict");
    expect(await waitsOf(stub)).toBe(1);
  });

  it("stops counting a waiter that is cancelled, and deletes its waits with it", async () => {
    const { stub } = await setup();
    value(await stub.createWaitpoint({ id: "w" }));
    value(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ waitpoint: "w" }] }));
    value(await stub.enqueue({ id: "q", kind: "k", dependsOn: [{ waitpoint: "w" }] }));
    expect(value(await stub.getWaitpoint("w")).waiters).toBe(2);
    value(await stub.cancel("p", {}));
    expect(value(await stub.getWaitpoint("w")).waiters).toBe(1);
    value(await stub.completeWaitpoint("w", {}));
    expect((await job(stub, "q")).state).toBe("queued");
    expect((await job(stub, "p")).outcome).toBe("cancelled");
    value(await stub.sweep({ settledBefore: T0 + 1 }));
    expect(await sql(stub, `SELECT job_seq FROM job_waits`)).toHaveLength(1);
    expect(await claim(stub, { kinds: ["k"] })).toHaveLength(1);
  });
});
