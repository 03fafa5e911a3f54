import { describe, expect, it } from "vitest";
import { backoffBoundsMs } from "../../../src/shared/backoff.js";
import { MAX_PAYLOAD_BYTES } from "../../../src/shared/defaults.js";
import type { Result } from "../../../src/shared/errors.js";
import { T0, claim, claimOne, enqueue, fireAlarm, refusal, row, rows, setup, value, type LaneStub } from "../../helpers/lane.js";

describe("the fence refuses", () => {
  it("job_settled: a renew of a completed job, and a settle with another attempt's token", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token }));
    const settled = await row(stub, "a");
    refusal(await stub.renew("a", { token: lease.token }), "job_settled");
    refusal(await stub.fail("a", { token: lease.token, error: "late" }), "job_settled");
    refusal(await stub.release("a", { token: lease.token }), "job_settled");
    refusal(await stub.complete("a", { token: "tok-other" }), "job_settled");
    expect(await row(stub, "a")).toEqual(settled);
  });

  it("job_cancelled: the holder of a cancel-requested job speaks, and the job settles cancelled", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    expect(value(await stub.cancel("a")).status).toBe("cancelling");
    refusal(await stub.complete("a", { token: lease.token, result: 1 }), "job_cancelled");
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "cancelled", result: null, settledAt: T0 });
  });

  it("lease_superseded: the token of an older lease after a renew", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    const renewed = value(await stub.renew("a", { token: lease.token })).lease;
    expect(renewed.token).not.toBe(lease.token);
    const before = await row(stub, "a");
    refusal(await stub.complete("a", { token: lease.token }), "lease_superseded");
    refusal(await stub.renew("a", { token: lease.token }), "lease_superseded");
    expect(await row(stub, "a")).toEqual(before);
    expect(value(await stub.complete("a", { token: renewed.token })).job.outcome).toBe("completed");
  });

  it("lease_expired: the current token after its lease ran out, changing nothing", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    const before = await row(stub, "a");
    refusal(await stub.complete("a", { token: lease.token }), "lease_expired");
    refusal(await stub.renew("a", { token: lease.token }), "lease_expired");
    refusal(await stub.fail("a", { token: lease.token, error: "x" }), "lease_expired");
    refusal(await stub.release("a", { token: lease.token }), "lease_expired");
    expect(await row(stub, "a")).toEqual(before);
  });

  it("lease_expired: the token of an attempt the alarm recovered", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    expect((await row(stub, "a"))!.state).toBe("queued");
    refusal(await stub.complete("a", { token: lease.token }), "lease_expired");
    expect((await row(stub, "a"))!.state).toBe("queued");
  });

  it("job_not_found: an attempt write for an unknown job", async () => {
    const { stub } = await setup();
    refusal(await stub.complete("nope", { token: "t" }), "job_not_found");
    refusal(await stub.renew("nope", { token: "t" }), "job_not_found");
    refusal(await stub.fail("nope", { token: "t", error: "x" }), "job_not_found");
    refusal(await stub.release("nope", { token: "t" }), "job_not_found");
  });

  it.each<[string, (stub: LaneStub) => Promise<Result<unknown>>]>([
    ["an empty token", (stub) => stub.complete("a", { token: "" })],
    ["no error message", (stub) => stub.fail("a", { token: "tok-1" })],
    ["a negative retryAfterMs", (stub) => stub.fail("a", { token: "tok-1", error: "x", retryAfterMs: -1 })],
    ["a renew leaseMs below 100", (stub) => stub.renew("a", { token: "tok-1", leaseMs: 99 })],
    ["an unknown field", (stub) => stub.release("a", { token: "tok-1", extra: 1 })],
    ["a job id outside the name pattern", (stub) => stub.complete("a b", { token: "tok-1" })],
    ["no body", (stub) => stub.complete("a", undefined)],
  ])("invalid_request: %s, changing nothing", async (_what, call) => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await claimOne(stub);
    const before = await rows(stub);
    refusal(await call(stub), "invalid_request");
    expect(await rows(stub)).toEqual(before);
  });

  it("payload_too_large: a result over 128 KiB, leaving the attempt running", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    refusal(await stub.complete("a", { token: lease.token, result: "x".repeat(MAX_PAYLOAD_BYTES) }), "payload_too_large");
    expect(value(await stub.getJob("a")).state).toBe("running");
    expect(value(await stub.complete("a", { token: lease.token, result: "ok" })).job.result).toBe("ok");
  });
});

describe("renew", () => {
  it("mints a new token and a new expiry from now, keeping the generation", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(900);
    const renewed = value(await stub.renew("a", { token: lease.token, leaseMs: 5_000 })).lease;
    expect(renewed).toEqual({ token: "tok-2", generation: 1, expiresAt: T0 + 900 + 5_000 });
    clock.advance(4_000); // past the first lease, inside the renewed one
    expect(value(await stub.complete("a", { token: renewed.token })).job.state).toBe("settled");
  });
});

describe("a stale attempt", () => {
  it("cannot settle a job re-claimed after its lease expired; the job is unchanged", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const first = await claimOne(stub, { leaseMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    const second = await claimOne(stub);
    expect(second.lease.generation).toBe(2);
    const before = await row(stub, "a");
    refusal(await stub.complete("a", { token: first.lease.token }), "lease_superseded");
    refusal(await stub.fail("a", { token: first.lease.token, error: "x", retry: false }), "lease_superseded");
    refusal(await stub.release("a", { token: first.lease.token }), "lease_superseded");
    refusal(await stub.renew("a", { token: first.lease.token }), "lease_superseded");
    expect(await row(stub, "a")).toEqual(before);
    expect(value(await stub.complete("a", { token: second.lease.token })).job.generation).toBe(2);
  });
});

describe("complete", () => {
  it("settles completed with the result and clears the last error", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const first = await claimOne(stub);
    value(await stub.fail("a", { token: first.lease.token, error: "flaky", retryAfterMs: 0 }));
    const second = await claimOne(stub);
    clock.advance(5);
    const { job } = value(await stub.complete("a", { token: second.lease.token, result: { n: 1 } }));
    expect(job).toMatchObject({ state: "settled", outcome: "completed", result: { n: 1 }, error: null, attempts: 2, lease: null, settledAt: T0 + 5 });
  });

  it("is idempotent: the same token completing again answers the same job and changes nothing", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    const first = value(await stub.complete("a", { token: lease.token, result: 1 }));
    const settled = await row(stub, "a");
    clock.advance(10);
    const again = value(await stub.complete("a", { token: lease.token, result: 1 }));
    expect(again).toEqual(first);
    expect(await row(stub, "a")).toEqual(settled);
  });
});

describe("fail", () => {
  it("queues the job again after a delay within the backoff bounds, for every attempt", async () => {
    for (const random of [0, 0.999_999]) {
      const { stub, clock } = await setup({ randoms: [random, random, random, random] });
      await enqueue(stub, { id: "a", maxAttempts: 5, backoff: { baseMs: 1_000, maxMs: 5_000 } });
      for (let attempt = 1; attempt <= 4; attempt++) {
        const { lease } = await claimOne(stub);
        const { job } = value(await stub.fail("a", { token: lease.token, error: `e${attempt}` }));
        const [low, high] = backoffBoundsMs(attempt, 1_000, 5_000);
        const delay = job.runAt - clock.now();
        expect(delay).toBeGreaterThanOrEqual(low);
        expect(delay).toBeLessThanOrEqual(high);
        expect(delay).toBe(random === 0 ? low : high - 1);
        expect(job).toMatchObject({ state: "queued", attempts: attempt, error: `e${attempt}`, lease: null });
        clock.set(job.runAt);
      }
    }
  });

  it("caps the backoff at maxMs", async () => {
    const { stub, clock } = await setup({ randoms: [0.5] });
    await enqueue(stub, { id: "a", maxAttempts: 100, backoff: { baseMs: 1_000, maxMs: 1_500 } });
    for (let attempt = 1; attempt <= 5; attempt++) {
      const { lease } = await claimOne(stub);
      const { job } = value(await stub.fail("a", { token: lease.token, error: "x" }));
      expect(job.runAt - clock.now()).toBeLessThanOrEqual(1_500);
      clock.set(job.runAt);
    }
  });

  it("waits retryAfterMs instead of the backoff when given", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    clock.advance(3);
    const { job } = value(await stub.fail("a", { token: lease.token, error: "busy", retryAfterMs: 12_345 }));
    expect(job.runAt).toBe(T0 + 3 + 12_345);
  });

  it("settles failed at once with retry: false, attempts notwithstanding", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 5 });
    const { lease } = await claimOne(stub);
    const { job } = value(await stub.fail("a", { token: lease.token, error: "fatal", retry: false }));
    expect(job).toMatchObject({ state: "settled", outcome: "failed", error: "fatal", attempts: 1, settledAt: T0 });
  });

  it("settles failed when the last attempt fails", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 2 });
    let job;
    for (let attempt = 1; attempt <= 2; attempt++) {
      const { lease } = await claimOne(stub);
      job = value(await stub.fail("a", { token: lease.token, error: `e${attempt}`, retryAfterMs: 0 })).job;
      clock.advance(1);
    }
    expect(job).toMatchObject({ state: "settled", outcome: "failed", error: "e2", attempts: 2 });
    expect(await claim(stub)).toEqual([]);
  });

  it("is idempotent once settled: the same token failing again answers the same job", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 1 });
    const { lease } = await claimOne(stub);
    const first = value(await stub.fail("a", { token: lease.token, error: "e" }));
    expect(value(await stub.fail("a", { token: lease.token, error: "e" }))).toEqual(first);
  });
});

describe("a repeated fail (its first answer may have been cut off)", () => {
  it("answers 200 with the job as it is when the first call queued a retry, changing nothing", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 3 });
    const { lease } = await claimOne(stub);
    const first = value(await stub.fail("a", { token: lease.token, error: "e", retryAfterMs: 5_000 })).job;
    expect(first).toMatchObject({ state: "queued", attempts: 1, error: "e" });
    const before = await rows(stub);
    clock.advance(1_000);
    expect(value(await stub.fail("a", { token: lease.token, error: "e", retryAfterMs: 5_000 })).job).toEqual(first);
    expect(await rows(stub)).toEqual(before);
  });

  it("is lease_superseded once the retry was claimed by a newer attempt", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 3 });
    const { lease } = await claimOne(stub);
    value(await stub.fail("a", { token: lease.token, error: "e", retryAfterMs: 0 }));
    await claimOne(stub);
    refusal(await stub.fail("a", { token: lease.token, error: "e" }), "lease_superseded");
  });

  it("is not a repeat after a release or a recovery: that attempt ended otherwise", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    const a = await claimOne(stub);
    value(await stub.release("a", { token: a.lease.token }));
    refusal(await stub.fail("a", { token: a.lease.token, error: "e" }), "lease_superseded");
    const b = await claimOne(stub, { leaseMs: 100 });
    clock.advance(200);
    await fireAlarm(stub);
    expect(await row(stub, b.id)).toMatchObject({ state: "queued" });
    refusal(await stub.fail(b.id, { token: b.lease.token, error: "e" }), "lease_expired");
  });
});

describe("release", () => {
  it("queues the job again at once and gives the attempt back", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 1, delayMs: 0 });
    const { lease } = await claimOne(stub);
    clock.advance(50);
    const { job } = value(await stub.release("a", { token: lease.token }));
    expect(job).toMatchObject({ state: "queued", attempts: 0, generation: 1, runAt: T0 + 50, lease: null });
    const again = await claimOne(stub);
    expect(again).toMatchObject({ attempts: 1, generation: 2 });
    // the attempt given back is the one that lets a job of one attempt fail for real
    expect(value(await stub.fail("a", { token: again.lease.token, error: "e" })).job.outcome).toBe("failed");
  });

  it("refuses the released token afterwards", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.release("a", { token: lease.token }));
    refusal(await stub.complete("a", { token: lease.token }), "lease_superseded");
  });
});
