import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../src/shared/defaults.js";
import { enqueue, enqueueAndClaim, expectError, get, post, PULL_KIND, setup, T0 } from "../helpers/http.js";

describe("claims", () => {
  it("answers due jobs with their lease token, highest priority first", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "low" });
    await enqueue(lane, { id: "high", priority: 9 });
    const answer = await post(`${lane.base}/claims`, { kinds: [PULL_KIND], max: 5, leaseMs: 1000 });
    expect(answer.status).toBe(200);
    expect(answer.body.jobs.map((j: { id: string }) => j.id)).toEqual(["high", "low"]);
    expect(answer.body.jobs[0]).toMatchObject({ state: "running", attempts: 1, lease: { token: expect.any(String), generation: 1, expiresAt: T0 + 1000 } });
  });

  it("answers an empty list when nothing is due, with or without a body", async () => {
    const lane = await setup();
    await enqueue(lane, { delayMs: 60_000 });
    expect((await post(`${lane.base}/claims`)).body).toEqual({ jobs: [] });
    expect((await post(`${lane.base}/claims`, {})).body).toEqual({ jobs: [] });
  });

  it("refuses an out-of-range lease and max, naming each", async () => {
    const lane = await setup();
    const error = expectError(await post(`${lane.base}/claims`, { leaseMs: 99, max: 101 }), 400, "invalid_request");
    expect(error.details.map((d: { path: unknown[] }) => d.path)).toEqual([["max"], ["leaseMs"]]);
  });
});

describe("the fence, end to end", () => {
  it("renew answers a new token; the old one is then lease_superseded, the new one completes", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    lane.clock.advance(10_000);
    const renewed = await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: claimed.lease.token, leaseMs: 60_000 });
    expect(renewed.status).toBe(200);
    expect(renewed.body.lease).toEqual({ token: expect.any(String), generation: 1, expiresAt: T0 + 70_000 });
    expect(renewed.body.lease.token).not.toBe(claimed.lease.token);
    expectError(await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token }), 409, "lease_superseded");
    expectError(await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: claimed.lease.token }), 409, "lease_superseded");
    const done = await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: renewed.body.lease.token, result: { sent: true } });
    expect(done.status).toBe(200);
    expect(done.body.job).toMatchObject({ state: "settled", outcome: "completed", result: { sent: true } });
  });

  it("complete repeated with the same token answers 200 again, changing nothing", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const first = await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token, result: 1 });
    lane.clock.advance(1000);
    const second = await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token, result: 1 });
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
  });

  it("a token whose lease ran out is lease_expired", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane, 100);
    lane.clock.advance(100);
    expectError(await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token }), 409, "lease_expired");
    expectError(await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: claimed.lease.token }), 409, "lease_expired");
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body.state).toBe("running");
  });

  it("a holder speaking for a cancelled job is job_cancelled, and the job settles cancelled", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    expect((await post(`${lane.base}/jobs/${claimed.id}/cancel`)).status).toBe(202);
    expectError(await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: claimed.lease.token }), 409, "job_cancelled");
    expectError(await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token }), 409, "job_cancelled");
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body).toMatchObject({ state: "settled", outcome: "cancelled" });
  });

  it("renewing a completed job is job_settled", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token });
    expectError(await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: claimed.lease.token }), 409, "job_settled");
  });

  it("an unknown job is job_not_found", async () => {
    const lane = await setup();
    expectError(await post(`${lane.base}/jobs/nope/complete`, { token: "t" }), 404, "job_not_found");
  });
});

describe("settling an attempt", () => {
  it("fail queues the job again with retryAfterMs while attempts remain", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const answer = await post(`${lane.base}/jobs/${claimed.id}/fail`, { token: claimed.lease.token, error: "smtp down", retryAfterMs: 5000 });
    expect(answer.status).toBe(200);
    expect(answer.body.job).toMatchObject({ state: "queued", attempts: 1, error: "smtp down", runAt: T0 + 5000, lease: null });
  });

  it("fail with retry false settles the job failed", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const answer = await post(`${lane.base}/jobs/${claimed.id}/fail`, { token: claimed.lease.token, error: "bad address", retry: false });
    expect(answer.body.job).toMatchObject({ state: "settled", outcome: "failed", error: "bad address" });
  });

  it("release queues the job at once and gives its attempt back", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const answer = await post(`${lane.base}/jobs/${claimed.id}/release`, { token: claimed.lease.token });
    expect(answer.status).toBe(200);
    expect(answer.body.job).toMatchObject({ state: "queued", attempts: 0, generation: 1, runAt: T0 });
  });

  it("a result over 128 KiB is payload_too_large, and the attempt is still held", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const result = "x".repeat(MAX_PAYLOAD_BYTES);
    expectError(await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token, result }), 413, "payload_too_large");
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body.state).toBe("running");
  });
});

describe("lease tokens", () => {
  it("appear in claim and renew answers only, never in a read, a list or another answer", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const renewed = await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: claimed.lease.token });
    const tokens = [claimed.lease.token, renewed.body.lease.token];
    const read = await get(`${lane.base}/jobs/${claimed.id}`);
    const list = await get(`${lane.base}/jobs?state=running`);
    expect(read.body.lease).toEqual({ generation: 1, expiresAt: expect.any(Number) });
    expect(list.body.jobs[0].lease).toEqual({ generation: 1, expiresAt: expect.any(Number) });
    const duplicate = await post(`${lane.base}/jobs`, { id: claimed.id, kind: claimed.kind, payload: claimed.payload });
    const cancelling = await post(`${lane.base}/jobs/${claimed.id}/cancel`);
    expect(cancelling.status).toBe(202);
    for (const answer of [read, list, duplicate, cancelling]) {
      for (const token of tokens) expect(JSON.stringify(answer.body)).not.toContain(token);
    }
  });
});
