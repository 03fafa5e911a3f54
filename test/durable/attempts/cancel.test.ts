import { describe, expect, it } from "vitest";
import { T0, alarmAt, claim, claimOne, enqueue, fireAlarm, refusal, retentionWakeOf, row, setup, value } from "../../helpers/lane.js";

describe("cancel", () => {
  it("settles a queued job cancelled at once", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", delayMs: 10_000 });
    clock.advance(5);
    const answer = value(await stub.cancel("a", { reason: "not needed" }));
    expect(answer.status).toBe("cancelled");
    expect(answer.job).toMatchObject({ state: "settled", outcome: "cancelled", cancelRequested: true, settledAt: T0 + 5 });
    expect((await row(stub, "a"))!.cancel_reason).toBe("not needed");
    expect(await claim(stub)).toEqual([]);
  });

  it("records the intent for a running job, which runs on until its holder speaks", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    const answer = value(await stub.cancel("a", { reason: "stop" }));
    expect(answer.status).toBe("cancelling");
    expect(answer.job).toMatchObject({ state: "running", outcome: null, cancelRequested: true, lease: { generation: 1 } });
    expect((await row(stub, "a"))!.cancel_reason).toBe("stop");
    refusal(await stub.renew("a", { token: lease.token }), "job_cancelled");
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "cancelled" });
  });

  it.each(["complete", "fail", "release"] as const)(
    "settles a cancel-requested job cancelled when its holder calls %s",
    async (method) => {
      const { stub } = await setup();
      await enqueue(stub, { id: "a" });
      const { lease } = await claimOne(stub);
      value(await stub.cancel("a"));
      const body = method === "fail" ? { token: lease.token, error: "e" } : { token: lease.token };
      refusal(await stub[method]("a", body as never), "job_cancelled");
      expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "cancelled", attempts: 1 });
      // and it keeps saying so
      refusal(await stub[method]("a", body as never), "job_cancelled");
    },
  );

  it("settles a cancel-requested job cancelled when its lease expires, through the alarm", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    value(await stub.cancel("a"));
    expect(await alarmAt(stub)).toBe(T0 + 1_000);
    clock.advance(1_000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "cancelled", settledAt: T0 + 1_000 });
    expect(await alarmAt(stub)).toBe(retentionWakeOf(T0 + 1_000, "cancelled"));
    refusal(await stub.complete("a", { token: lease.token }), "job_cancelled");
  });

  it("is idempotent for a running job and for a cancelled one", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    await claimOne(stub);
    const first = value(await stub.cancel("a"));
    expect(value(await stub.cancel("a"))).toEqual(first);
    const cancelled = value(await stub.cancel("b"));
    expect(value(await stub.cancel("b"))).toEqual(cancelled);
  });

  it("refuses a job settled otherwise as job_settled, changing nothing", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token }));
    const before = await row(stub, "a");
    refusal(await stub.cancel("a"), "job_settled");
    expect(await row(stub, "a")).toEqual(before);
  });

  it("refuses an unknown job as job_not_found and a reason over 1024 characters as invalid_request", async () => {
    const { stub } = await setup();
    refusal(await stub.cancel("nope"), "job_not_found");
    await enqueue(stub, { id: "a" });
    refusal(await stub.cancel("a", { reason: "r".repeat(1025) }), "invalid_request");
    expect((await row(stub, "a"))!.state).toBe("queued");
  });

  it("unblocks the queue of a cancelled head", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q" });
    value(await stub.cancel("a"));
    expect((await claim(stub)).map((j) => j.id)).toEqual(["b"]);
  });
});

describe("requeue", () => {
  it.each([
    ["failed", { maxAttempts: 1 }],
    ["cancelled", {}],
    ["interrupted", { recovery: { maxRecoveries: 0, windowMs: 1_000 } }],
  ] as const)("queues a %s job again to run now, with a fresh attempt budget and a growing generation", async (outcome, spec) => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", ...spec });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    if (outcome === "failed") value(await stub.fail("a", { token: lease.token, error: "e" }));
    if (outcome === "cancelled") {
      value(await stub.cancel("a"));
      refusal(await stub.complete("a", { token: lease.token }), "job_cancelled");
    }
    if (outcome === "interrupted") {
      clock.advance(1_000);
      await fireAlarm(stub);
    }
    expect(value(await stub.getJob("a")).outcome).toBe(outcome);
    clock.advance(7);
    const { job } = value(await stub.requeue("a"));
    expect(job).toMatchObject({
      state: "queued",
      outcome: null,
      attempts: 0,
      generation: 1,
      runAt: clock.now(),
      cancelRequested: false,
      settledAt: null,
      result: null,
    });
    expect(await claimOne(stub)).toMatchObject({ attempts: 1, generation: 2 });
  });

  it("refuses a completed job as job_settled", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token }));
    refusal(await stub.requeue("a"), "job_settled");
    expect(value(await stub.getJob("a")).outcome).toBe("completed");
  });

  it("refuses a queued or running job as job_not_requeueable", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    refusal(await stub.requeue("a"), "job_not_requeueable");
    await claimOne(stub);
    refusal(await stub.requeue("a"), "job_not_requeueable");
    expect(value(await stub.getJob("a")).state).toBe("running");
  });

  it("refuses an unknown job as job_not_found, and an id outside the name pattern as invalid_request", async () => {
    const { stub } = await setup();
    refusal(await stub.requeue("nope"), "job_not_found");
    refusal(await stub.requeue("no pe"), "invalid_request");
    refusal(await stub.cancel(42), "invalid_request");
  });

  it("never lets the old attempt's token settle the requeued job", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 1 });
    const { lease } = await claimOne(stub);
    value(await stub.fail("a", { token: lease.token, error: "e" }));
    value(await stub.requeue("a"));
    refusal(await stub.complete("a", { token: lease.token }), "lease_superseded");
    const again = await claimOne(stub);
    refusal(await stub.complete("a", { token: lease.token }), "lease_superseded");
    value(await stub.complete("a", { token: again.lease.token }));
  });
});

describe("cancel with onlyIfQueued", () => {
  it("cancels a queued job as a plain cancel does", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", delayMs: 10_000 });
    const answer = value(await stub.cancel("a", { onlyIfQueued: true }));
    expect(answer).toMatchObject({ status: "cancelled", job: { state: "settled", outcome: "cancelled" } });
  });

  it("refuses a running job with job_running, and changes nothing", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    const before = await row(stub, "a");
    refusal(await stub.cancel("a", { reason: "stop", onlyIfQueued: true }), "job_running");
    expect(await row(stub, "a")).toEqual(before);
    // The attempt runs on, its holder unaware: it completes as if nothing was asked.
    expect(value(await stub.complete("a", { token: lease.token })).job).toMatchObject({ outcome: "completed", cancelRequested: false });
  });

  it("answers a settled job as a plain cancel does: cancelled again, or job_settled", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "gone" });
    value(await stub.cancel("gone"));
    expect(value(await stub.cancel("gone", { onlyIfQueued: true })).status).toBe("cancelled");
    await enqueue(stub, { id: "done" });
    const { lease } = await claimOne(stub);
    value(await stub.complete("done", { token: lease.token }));
    refusal(await stub.cancel("done", { onlyIfQueued: true }), "job_settled");
  });
});

