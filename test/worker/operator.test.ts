/**
 * The operator's routes over HTTP: retention in PATCH, failing a lane, reading and purging
 * a queue — each happy path, each refusal (a clear 4xx, nothing changed) — and the same through both
 * clients.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import type { LaneClient } from "../../src/client/types.js";
import { DEFAULT_COMPLETED_RETENTION_MS, MAX_DURATION_MS } from "../../src/shared/defaults.js";
import { call, claimOne, enqueue, expectError, get, post, setup, TOKEN, type LaneFixture } from "../helpers/http.js";

/** Everything a refusal must leave as it was: the lane's answer (counts, settings, stats) and its jobs. */
async function state(lane: LaneFixture) {
  return { info: (await get(lane.base)).body, jobs: (await get(`${lane.base}/jobs?limit=500`)).body };
}

describe("PATCH retention", () => {
  it("sets either horizon, keeps the other, null keeps jobs, and answers the lane", async () => {
    const lane = await setup();
    const first = await call("PATCH", lane.base, { json: { retention: { failedMs: 60_000 } } });
    expect(first.status).toBe(200);
    expect(first.body.retention).toEqual({ completedMs: DEFAULT_COMPLETED_RETENTION_MS, failedMs: 60_000 });
    const second = await call("PATCH", lane.base, { json: { retention: { completedMs: null }, concurrency: 4 } });
    expect(second.body).toMatchObject({ concurrency: 4, retention: { completedMs: null, failedMs: 60_000 } });
    expect((await get(lane.base)).body.retention).toEqual({ completedMs: null, failedMs: 60_000 });
  });

  it.each([
    [{ retention: { completedMs: -1 } }, ["retention", "completedMs"]],
    [{ retention: { failedMs: 1.5 } }, ["retention", "failedMs"]],
    [{ retention: { failedMs: "1d" } }, ["retention", "failedMs"]],
    [{ retention: { completedMs: MAX_DURATION_MS + 1 } }, ["retention", "completedMs"]],
    [{ retention: { keepMs: 1 } }, ["retention", "keepMs"]],
    [{ retention: null }, ["retention"]],
  ])("refuses %j, naming the field, changing nothing", async (body, path) => {
    const lane = await setup();
    await enqueue(lane);
    const before = await state(lane);
    const error = expectError(await call("PATCH", lane.base, { json: body }), 400, "invalid_request");
    expect(error.details.map((d: { path: unknown[] }) => d.path)).toEqual([path]);
    expect(await state(lane)).toEqual(before);
  });
});

describe("POST /v1/lanes/{lane}/fail", () => {
  it("fails the running jobs first, then the queued ones, and says none are left", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "q1" });
    await enqueue(lane, { id: "q2" });
    const held = await claimOne(lane);
    const answer = await post(`${lane.base}/fail`, { reason: "the mail provider is gone" });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ failed: ["q1", "q2"], more: false });
    expect((await get(`${lane.base}/jobs/q2`)).body).toMatchObject({ state: "settled", outcome: "failed", error: "the mail provider is gone" });
    expectError(await post(`${lane.base}/jobs/q1/complete`, { token: held.lease.token }), 409, "job_settled");
    expect((await get(lane.base)).body.counts).toMatchObject({ queued: 0, running: 0, failed: 2 });
  });

  it.each([
    ["no reason", {}],
    ["an empty reason", { reason: "" }],
    ["a reason that is not a string", { reason: 42 }],
    ["an unknown field", { reason: "x", force: true }],
  ])("refuses %s with 400, changing nothing", async (_what, body) => {
    const lane = await setup();
    await enqueue(lane);
    const before = await state(lane);
    expectError(await post(`${lane.base}/fail`, body), 400, "invalid_request");
    expect(await state(lane)).toEqual(before);
  });

  it("refuses a request without a body (415) or with malformed JSON (400), changing nothing", async () => {
    const lane = await setup();
    await enqueue(lane);
    const before = await state(lane);
    expectError(await post(`${lane.base}/fail`), 415, "unsupported_media_type");
    expectError(await call("POST", `${lane.base}/fail`, { raw: "{", headers: { "content-type": "application/json" } }), 400, "invalid_request");
    expect(await state(lane)).toEqual(before);
  });
});

describe("queues over HTTP", () => {
  it("reads a queue and purges its queued jobs, leaving the running head", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "head", queue: "user-9" });
    await claimOne(lane);
    await enqueue(lane, { id: "next", queue: "user-9" });
    const read = await get(`${lane.base}/queues/user-9`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ queue: "user-9", head: { id: "head", state: "running", cancelRequested: false }, queued: 1, running: 1, concurrency: 1, rateLimit: null });
    const purged = await post(`${lane.base}/queues/user-9/purge`);
    expect(purged.status).toBe(200);
    expect(purged.body).toEqual({ purged: 1 });
    expect((await get(`${lane.base}/queues/user-9`)).body).toEqual({ queue: "user-9", head: { id: "head", state: "running", cancelRequested: false }, queued: 0, running: 1, concurrency: 1, rateLimit: null });
    expect((await post(`${lane.base}/queues/idle/purge`, {})).body).toEqual({ purged: 0 });
    expect((await get(`${lane.base}/queues/idle`)).body).toEqual({ queue: "idle", head: null, queued: 0, running: 0, concurrency: 1, rateLimit: null });
  });

  it("refuses a bad queue name and a purge body with fields, changing nothing", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a", queue: "q" });
    const before = await state(lane);
    expectError(await get(`${lane.base}/queues/-bad`), 400, "invalid_request");
    expectError(await post(`${lane.base}/queues/${"x".repeat(129)}/purge`), 400, "invalid_request");
    expectError(await post(`${lane.base}/queues/q/purge`, { all: true }), 400, "invalid_request");
    expectError(await call("POST", `${lane.base}/queues/q/purge`, { raw: "x", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
    expectError(await call("DELETE", `${lane.base}/queues/q`), 404, "not_found");
    expect(await state(lane)).toEqual(before);
  });
});

describe("both clients", () => {
  const http = () =>
    createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });

  it.each([
    ["RPC", (name: string): LaneClient => createLaneClient(env.LANE).lane(name)],
    ["HTTP", (name: string): LaneClient => http().lane(name)],
  ])("the %s client reads and purges a queue, fails the lane and sets retention", async (_which, client) => {
    const { lane: name } = await setup();
    const lane = client(name);
    await lane.enqueueBatch({ jobs: [{ id: "a", kind: "email.send", queue: "q" }, { id: "b", kind: "email.send", queue: "q" }, { id: "c", kind: "email.send" }] });
    expect(await lane.queue("q")).toEqual({ queue: "q", head: { id: "a", state: "queued", cancelRequested: false }, queued: 2, running: 0, concurrency: 1, rateLimit: null });
    expect(await lane.purgeQueue("q")).toEqual({ purged: 2 });
    expect(await lane.failLane({ reason: "gone" })).toEqual({ failed: ["c"], more: false });
    const info = await lane.configure({ retention: { failedMs: null } });
    expect(info).toMatchObject({ retention: { failedMs: null }, counts: { failed: 1, queued: 0 }, stats: { enqueued: 3, failed: 1 } });
    await expect(lane.queue("bad name")).rejects.toMatchObject({ code: "invalid_request" });
  });
});
