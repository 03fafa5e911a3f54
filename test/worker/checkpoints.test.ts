/**
 * Durable steps over HTTP: checkpoint routes, the progress route and renew's `progress`,
 * `checkpoints` on claimed jobs, and both clients.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import { MAX_CHECKPOINT_BYTES, MAX_PROGRESS_BYTES } from "../../src/shared/defaults.js";
import type { LaneClient } from "../../src/client/types.js";
import { QueueError } from "../../src/shared/errors.js";
import { call, enqueue, enqueueAndClaim, expectError, get, post, PULL_KIND, setup, T0, TOKEN } from "../helpers/http.js";

const put = (path: string, json: unknown) => call("PUT", path, { json });
/** A string whose JSON is exactly `bytes` bytes. */
const sized = (bytes: number) => "x".repeat(bytes - 2);

describe("PUT …/jobs/{id}/checkpoints/{name}", () => {
  it("records a checkpoint for the lease holder, and GET lists the job's checkpoints by name", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    lane.clock.advance(7);
    const saved = await put(`${lane.base}/jobs/${claimed.id}/checkpoints/fetch`, { token: claimed.lease.token, value: { rows: 40 } });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ checkpoint: { name: "fetch", generation: 1, updatedAt: T0 + 7 } });
    expect((await put(`${lane.base}/jobs/${claimed.id}/checkpoints/charge`, { token: claimed.lease.token, value: "ch_1" })).status).toBe(200);
    const listed = await get(`${lane.base}/jobs/${claimed.id}/checkpoints`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      checkpoints: [
        { name: "charge", value: "ch_1", generation: 1, updatedAt: T0 + 7 },
        { name: "fetch", value: { rows: 40 }, generation: 1, updatedAt: T0 + 7 },
      ],
    });
  });

  it("answers the fence's refusals like complete, and records nothing", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const path = `${lane.base}/jobs/${claimed.id}/checkpoints/s1`;
    expectError(await put(path, { token: "not-the-token", value: 1 }), 409, "lease_superseded");
    lane.clock.advance(30_000);
    expectError(await put(path, { token: claimed.lease.token, value: 1 }), 409, "lease_expired");
    expectError(await put(`${lane.base}/jobs/nope/checkpoints/s1`, { token: claimed.lease.token, value: 1 }), 404, "job_not_found");
    expect((await get(`${lane.base}/jobs/${claimed.id}/checkpoints`)).body).toEqual({ checkpoints: [] });
    expectError(await get(`${lane.base}/jobs/nope/checkpoints`), 404, "job_not_found");
  });

  it("refuses a value over 128 KiB with 413, a missing value or a bad name with 400", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const base = `${lane.base}/jobs/${claimed.id}/checkpoints`;
    expectError(await put(`${base}/big`, { token: claimed.lease.token, value: sized(MAX_CHECKPOINT_BYTES + 1) }), 413, "payload_too_large");
    expectError(await put(`${base}/s1`, { token: claimed.lease.token }), 400, "invalid_request");
    expectError(await put(`${base}/-bad`, { token: claimed.lease.token, value: 1 }), 400, "invalid_request");
    expect((await put(`${base}/big`, { token: claimed.lease.token, value: sized(MAX_CHECKPOINT_BYTES) })).status).toBe(200);
  });

  it("refuses a write past a job's 1 MiB of values with 409 checkpoint_limit", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const base = `${lane.base}/jobs/${claimed.id}/checkpoints`;
    for (let i = 0; i < 8; i++) expect((await put(`${base}/v${i}`, { token: claimed.lease.token, value: sized(MAX_CHECKPOINT_BYTES) })).status).toBe(200);
    expectError(await put(`${base}/v8`, { token: claimed.lease.token, value: 0 }), 409, "checkpoint_limit");
    expect((await get(base)).body.checkpoints).toHaveLength(8);
  });
});

describe("claims carry checkpoints", () => {
  it("the next attempt of a job gets what the earlier one recorded; a fresh job gets {}", async () => {
    const lane = await setup();
    const first = await enqueueAndClaim(lane);
    await put(`${lane.base}/jobs/${first.id}/checkpoints/s1`, { token: first.lease.token, value: [1, 2] });
    expect(first.checkpoints).toEqual({});
    expect((await post(`${lane.base}/jobs/${first.id}/release`, { token: first.lease.token })).status).toBe(200);
    const again = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
    expect(again.body.jobs[0]).toMatchObject({ id: first.id, lease: { generation: 2 }, checkpoints: { s1: [1, 2] } });
    const done = await post(`${lane.base}/jobs/${first.id}/complete`, { token: again.body.jobs[0].lease.token });
    expect(done.status).toBe(200);
    expect((await get(`${lane.base}/jobs/${first.id}/checkpoints`)).body).toEqual({ checkpoints: [] });
  });
});

describe("progress", () => {
  it("POST …/progress records the job's progress and keeps the token; renew records it too", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const reported = await post(`${lane.base}/jobs/${claimed.id}/progress`, { token: claimed.lease.token, progress: { sent: 10, of: 100 } });
    expect(reported.status).toBe(200);
    expect(reported.body.job).toMatchObject({ id: claimed.id, state: "running", progress: { sent: 10, of: 100 } });
    const renewed = await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: claimed.lease.token, progress: { sent: 50, of: 100 } });
    expect(renewed.status).toBe(200);
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body.progress).toEqual({ sent: 50, of: 100 });
    // A renewal without progress leaves it as it was.
    expect((await post(`${lane.base}/jobs/${claimed.id}/renew`, { token: renewed.body.lease.token })).status).toBe(200);
    expect((await get(`${lane.base}/jobs/${claimed.id}`)).body.progress).toEqual({ sent: 50, of: 100 });
  });

  it("refuses progress over 16 KiB with 413 (the route and renew), a stale token with 409, changing nothing", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const path = `${lane.base}/jobs/${claimed.id}`;
    expectError(await post(`${path}/progress`, { token: claimed.lease.token, progress: sized(MAX_PROGRESS_BYTES + 1) }), 413, "payload_too_large");
    expectError(await post(`${path}/renew`, { token: claimed.lease.token, progress: sized(MAX_PROGRESS_BYTES + 1) }), 413, "payload_too_large");
    expectError(await post(`${path}/progress`, { token: "stale", progress: 1 }), 409, "lease_superseded");
    expectError(await post(`${path}/progress`, { token: claimed.lease.token }), 400, "invalid_request");
    expect((await get(path)).body.progress).toBeNull();
    expect((await post(`${path}/progress`, { token: claimed.lease.token, progress: sized(MAX_PROGRESS_BYTES) })).status).toBe(200);
  });

  it("the job shows every failed attempt in errors", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    await post(`${lane.base}/jobs/${claimed.id}/fail`, { token: claimed.lease.token, error: "smtp 451", retryAfterMs: 0 });
    const job = (await get(`${lane.base}/jobs/${claimed.id}`)).body;
    expect(job).toMatchObject({ error: "smtp 451", errors: [{ attempt: 1, generation: 1, message: "smtp 451", at: T0 }], progress: null });
  });
});

/** The HTTP client, talking to the worker's own fetch. */
const http = () => createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });

describe.each<[string, (lane: string) => LaneClient]>([
  ["the RPC client", (lane) => createLaneClient(env.LANE).lane(lane)],
  ["the HTTP client", (lane) => http().lane(lane)],
])("%s", (_which, client) => {
  it("records and lists checkpoints, reports progress, and claims them back", async () => {
    const fixture = await setup();
    const lane = client(fixture.lane);
    await enqueue(fixture, { id: "c-1" });
    const [job] = (await lane.claim({ kinds: [PULL_KIND] })).jobs;
    expect(job!.checkpoints).toEqual({});
    expect(await lane.saveCheckpoint("c-1", "s1", { token: job!.lease.token, value: { n: 1 } })).toEqual({ checkpoint: { name: "s1", generation: 1, updatedAt: T0 } });
    expect((await lane.progress("c-1", { token: job!.lease.token, progress: 0.5 })).job.progress).toBe(0.5);
    expect(await lane.checkpoints("c-1")).toEqual({ checkpoints: [{ name: "s1", value: { n: 1 }, generation: 1, updatedAt: T0 }] });
    await lane.release("c-1", { token: job!.lease.token });
    expect((await lane.claim({ kinds: [PULL_KIND] })).jobs[0]!.checkpoints).toEqual({ s1: { n: 1 } });
    const refused = await lane.saveCheckpoint("c-1", "s2", { token: job!.lease.token, value: 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(QueueError);
    expect((refused as QueueError).code).toBe("lease_superseded");
  });
});
