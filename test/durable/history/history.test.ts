/**
 * What a job remembers of its attempts: `errors`, every failed attempt oldest first, the
 * last 20; and `progress`, the last an attempt reported, written through the fence.
 */
import { describe, expect, it } from "vitest";
import { MAX_JOB_ERRORS } from "../../../src/shared/defaults.js";
import { T0, claimOne, enqueue, fireAlarm, refusal, row, setup, value } from "../../helpers/lane.js";

describe("errors", () => {
  it("keeps each failed attempt with its attempt, generation, message and time, oldest first", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 3 });
    const first = await claimOne(stub);
    clock.advance(10);
    value(await stub.fail("a", { token: first.lease.token, error: "one", retryAfterMs: 0 }));
    const second = await claimOne(stub);
    clock.advance(10);
    const job = value(await stub.fail("a", { token: second.lease.token, error: "two", retry: false })).job;
    expect(job).toMatchObject({ state: "settled", outcome: "failed", error: "two" });
    expect(job.errors).toEqual([
      { attempt: 1, generation: 1, message: "one", at: T0 + 10 },
      { attempt: 2, generation: 2, message: "two", at: T0 + 20 },
    ]);
  });

  it("keeps a lease that ran out (recovered, then interrupted) as a failed attempt too", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", recovery: { maxRecoveries: 1, windowMs: 60_000 } });
    for (let i = 0; i < 2; i++) {
      await claimOne(stub, { leaseMs: 1_000 });
      clock.advance(1_000);
      await fireAlarm(stub);
    }
    const job = value(await stub.getJob("a"));
    expect(job.outcome).toBe("interrupted");
    expect(job.errors.map((e) => [e.attempt, e.generation, e.at])).toEqual([
      [1, 1, T0 + 1_000],
      [1, 2, T0 + 2_000],
    ]);
    expect(job.errors.map((e) => e.message)).toEqual([expect.stringContaining("recovered"), expect.stringContaining("budget")]);
    expect(job.errors.at(-1)!.message).toBe(job.error);
  });

  it(`keeps only the last ${MAX_JOB_ERRORS}`, async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 30 });
    for (let i = 1; i <= 25; i++) {
      const { lease } = await claimOne(stub);
      value(await stub.fail("a", { token: lease.token, error: `e${i}`, retryAfterMs: 0 }));
    }
    const { errors } = value(await stub.getJob("a"));
    expect(errors).toHaveLength(MAX_JOB_ERRORS);
    expect(errors.map((e) => e.message)).toEqual(Array.from({ length: MAX_JOB_ERRORS }, (_, i) => `e${i + 6}`));
    expect(errors.map((e) => e.generation)).toEqual(Array.from({ length: MAX_JOB_ERRORS }, (_, i) => i + 6));
  });

  it("a repeated fail adds nothing; completion and release add nothing", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const first = await claimOne(stub);
    value(await stub.fail("a", { token: first.lease.token, error: "x", retryAfterMs: 0 }));
    value(await stub.fail("a", { token: first.lease.token, error: "x", retryAfterMs: 0 }));
    const second = await claimOne(stub);
    value(await stub.release("a", { token: second.lease.token }));
    const third = await claimOne(stub);
    expect(value(await stub.complete("a", { token: third.lease.token })).job.errors).toHaveLength(1);
  });
});

describe("progress", () => {
  it("is null until reported; the last report wins, across attempts, and stays once settled", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    expect(value(await stub.getJob("a")).progress).toBeNull();
    const first = await claimOne(stub);
    value(await stub.progress("a", { token: first.lease.token, progress: { page: 1 } }));
    value(await stub.renew("a", { token: first.lease.token, progress: { page: 2 } }));
    expect(value(await stub.getJob("a")).progress).toEqual({ page: 2 });
    refusal(await stub.progress("a", { token: first.lease.token, progress: { page: 3 } }), "lease_superseded");
    const renewed = (await row(stub, "a"))!.lease_token!;
    value(await stub.release("a", { token: renewed }));
    const second = await claimOne(stub);
    value(await stub.progress("a", { token: second.lease.token, progress: null }));
    expect(value(await stub.complete("a", { token: second.lease.token })).job.progress).toBeNull();
  });

  it("a refused renewal records no progress", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    refusal(await stub.renew("a", { token: lease.token, progress: 1 }), "lease_expired");
    expect((await row(stub, "a"))!.progress).toBeNull();
  });
});
