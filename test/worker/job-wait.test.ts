/**
 * An attempt's wait on a waitpoint over HTTP (docs/api.md "Waitpoints"): `POST …/jobs/{id}/wait` and
 * the ack op `wait`, fenced like complete, on a manual clock. The lease ends, the attempt is given
 * back, its checkpoints stay, and the job is blocked on the waitpoint (created pending when missing)
 * or queued at once when it has settled; a timeout never fails it. Bad input changes nothing.
 */
import { describe, expect, it } from "vitest";
import { call, claimOne, enqueueAndClaim, expectError, get, post, setup, T0, type LaneFixture } from "../helpers/http.js";
import { fireAlarm } from "../helpers/lane.js";

const waitOn = (lane: LaneFixture, id: string, body: unknown) => post(`${lane.base}/jobs/${id}/wait`, body);

describe("POST …/jobs/{id}/wait", () => {
  it("blocks the job on a waitpoint it creates, gives the attempt back, keeps checkpoints, and supersedes the token", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    expect((await call("PUT", `${lane.base}/jobs/${claimed.id}/checkpoints/s1`, { json: { token: claimed.lease.token, value: 1 } })).status).toBe(200);
    const answer = await waitOn(lane, claimed.id, { token: claimed.lease.token, waitpoint: "approval-1", timeoutMs: 60_000 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.job).toMatchObject({ id: claimed.id, state: "blocked", attempts: 0, lease: null, dependsOn: [] });
    expect(answer.body.waitpoint).toMatchObject({ id: "approval-1", lane: lane.lane, state: "pending", timeoutAt: T0 + 60_000, waiters: 1 });
    expect((await get(lane.base)).body.counts).toMatchObject({ blocked: 1, running: 0 });
    expect((await get(lane.base)).body.stats.snoozed).toBe(0);
    expectError(await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token }), 409, "lease_superseded");
    expect((await get(`${lane.base}/jobs/${claimed.id}/checkpoints`)).body.checkpoints.map((c: any) => c.name)).toEqual(["s1"]);

    expect((await post(`${lane.base}/waitpoints/approval-1/complete`, { result: { ok: true } })).status).toBe(200);
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body).toMatchObject({ state: "queued", attempts: 0 });
    const again = await claimOne(lane);
    expect(again).toMatchObject({ attempts: 1, generation: 2, checkpoints: { s1: 1 } });
    expect(again.dependencies).toEqual([{ lane: lane.lane, waitpoint: "approval-1", outcome: "completed", result: { ok: true } }]);
  });

  it("keeps an existing waitpoint's own timeout, and a timed-out wait queues the job without failing it", async () => {
    const lane = await setup();
    expect((await post(`${lane.base}/waitpoints`, { id: "w", timeoutMs: 1_000 })).status).toBe(201);
    const claimed = await enqueueAndClaim(lane);
    const answer = await waitOn(lane, claimed.id, { token: claimed.lease.token, waitpoint: "w", timeoutMs: 99_000 });
    expect(answer.body.waitpoint.timeoutAt).toBe(T0 + 1_000);
    lane.clock.advance(1_000);
    await fireAlarm(lane.stub);
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body).toMatchObject({ state: "queued", outcome: null, error: null });
    const again = await claimOne(lane);
    expect(again.dependencies).toEqual([{ lane: lane.lane, waitpoint: "w", outcome: "timedOut", result: null }]);
  });

  it("queues the job at once when the waitpoint has settled, and lists waits in the order they were made", async () => {
    const lane = await setup();
    expect((await post(`${lane.base}/waitpoints/first/complete`, { result: 1 })).status).toBe(201);
    const claimed = await enqueueAndClaim(lane);
    const answer = await waitOn(lane, claimed.id, { token: claimed.lease.token, waitpoint: "first" });
    expect(answer.body.job).toMatchObject({ state: "queued", attempts: 0 });
    expect(answer.body.waitpoint).toMatchObject({ state: "completed", waiters: 0 });
    const second = await claimOne(lane);
    expect((await waitOn(lane, second.id, { token: second.lease.token, waitpoint: "second" })).body.job.state).toBe("blocked");
    expect((await post(`${lane.base}/waitpoints/second/complete`, { result: 2 })).status).toBe(200);
    expect((await claimOne(lane)).dependencies).toEqual([
      { lane: lane.lane, waitpoint: "first", outcome: "completed", result: 1 },
      { lane: lane.lane, waitpoint: "second", outcome: "completed", result: 2 },
    ]);
  });

  it("is also an ack op, answered as the route's", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const answer = await post(`${lane.base}/acks`, { acks: [{ op: "wait", id: claimed.id, token: claimed.lease.token, waitpoint: "by-ack", timeoutMs: 5_000 }] });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.results).toEqual([{ id: claimed.id, ok: true }]);
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body.state).toBe("blocked");
    expect((await get(`${lane.base}/waitpoints/by-ack`)).body.waitpoint).toMatchObject({ state: "pending", timeoutAt: T0 + 5_000, waiters: 1 });
    const repeated = await post(`${lane.base}/acks`, { acks: [{ op: "wait", id: claimed.id, token: claimed.lease.token, waitpoint: "by-ack" }] });
    expect(repeated.body.results).toEqual([{ id: claimed.id, ok: false, error: { code: "lease_superseded", message: expect.any(String) } }]);
  });

  it("refuses bad input with 400, an unknown job with 404 and a stale token with 409, creating no waitpoint and leaving the job running", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const { token } = claimed.lease;
    const bad = [
      { waitpoint: "w" },
      { token, waitpoint: "no spaces" },
      { token, waitpoint: "w", timeoutMs: 0 },
      { token, waitpoint: "w", timeoutMs: 31_536_000_001 },
      { token, waitpoint: "w", extra: 1 },
    ];
    for (const body of bad) expectError(await waitOn(lane, claimed.id, body), 400, "invalid_request");
    expectError(await post(`${lane.base}/acks`, { acks: [{ op: "wait", id: claimed.id, token }] }), 400, "invalid_request");
    expectError(await waitOn(lane, "nope", { token, waitpoint: "w" }), 404, "job_not_found");
    expectError(await waitOn(lane, claimed.id, { token: "not-the-token", waitpoint: "w" }), 409, "lease_superseded");
    expectError(await get(`${lane.base}/waitpoints/w`), 404, "waitpoint_not_found");
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body).toMatchObject({ state: "running", attempts: 1 });
    expect((await waitOn(lane, claimed.id, { token, waitpoint: "w" })).status).toBe(200);
  });
});
