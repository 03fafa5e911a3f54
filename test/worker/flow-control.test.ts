/**
 * Flow control over HTTP: the lane's rate limit and fairness in PATCH and GET, a queue's settings in
 * PUT and GET, TTL and debounce on enqueue, and every bad value refused with 400 `invalid_request`
 * naming its path, changing nothing.
 */
import { describe, expect, it } from "vitest";
import { call, enqueue, expectError, get, post, PULL_KIND, setup, T0 } from "../helpers/http.js";

describe("flow control over HTTP", () => {
  it("sets and shows a lane's rate limit and fairness", async () => {
    const lane = await setup();
    const answer = await call("PATCH", lane.base, { json: { rateLimit: { limit: 10, periodMs: 1_000 }, fairness: "round-robin" } });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ rateLimit: { limit: 10, periodMs: 1_000 }, fairness: "round-robin" });
    expect((await get(lane.base)).body).toMatchObject({ rateLimit: { limit: 10, periodMs: 1_000 }, fairness: "round-robin" });
  });

  it("sets and shows a queue's concurrency and rate limit", async () => {
    const lane = await setup();
    const put = await call("PUT", `${lane.base}/queues/q1`, { json: { concurrency: 3, rateLimit: { limit: 2, periodMs: 500 } } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ queue: "q1", head: null, queued: 0, running: 0, concurrency: 3, rateLimit: { limit: 2, periodMs: 500 } });
    const cleared = await call("PUT", `${lane.base}/queues/q1`, { json: { rateLimit: null } });
    expect(cleared.body).toMatchObject({ concurrency: 3, rateLimit: null });
  });

  it("enqueues with a TTL and a debounce", async () => {
    const lane = await setup();
    const job = await enqueue(lane, { ttlMs: 60_000 });
    expect(job.expiresAt).toBe(T0 + 60_000);
    const first = await post(`${lane.base}/jobs`, { kind: PULL_KIND, debounce: { key: "d", delayMs: 100 } });
    expect(first.status).toBe(201);
    const again = await post(`${lane.base}/jobs`, { kind: PULL_KIND, payload: { n: 2 }, debounce: { key: "d", delayMs: 100 } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "debounced", job: { id: first.body.job.id, payload: { n: 2 } } });
  });

  it.each([
    ["a rate limit of 0", "PATCH", "", { rateLimit: { limit: 0, periodMs: 1_000 } }, ["rateLimit", "limit"]],
    ["a period under 100 ms", "PATCH", "", { rateLimit: { limit: 5, periodMs: 99 } }, ["rateLimit", "periodMs"]],
    ["an unknown fairness", "PATCH", "", { fairness: "random" }, ["fairness"]],
    ["a queue concurrency of 0", "PUT", "/queues/q", { concurrency: 0 }, ["concurrency"]],
    ["a queue concurrency over 1000", "PUT", "/queues/q", { concurrency: 1001 }, ["concurrency"]],
    ["a queue rate limit over 100000", "PUT", "/queues/q", { rateLimit: { limit: 100_001, periodMs: 1_000 } }, ["rateLimit", "limit"]],
    ["a debounce without a key", "POST", "/jobs", { kind: PULL_KIND, debounce: { delayMs: 10 } }, ["debounce", "key"]],
    ["a ttlMs of 0", "POST", "/jobs", { kind: PULL_KIND, ttlMs: 0 }, ["ttlMs"]],
    ["a maxDelayMs under delayMs", "POST", "/jobs", { kind: PULL_KIND, debounce: { key: "d", delayMs: 100, maxDelayMs: 50 } }, ["debounce", "maxDelayMs"]],
    ["a debounce delay over a day", "POST", "/jobs", { kind: PULL_KIND, debounce: { key: "d", delayMs: 86_400_001 } }, ["debounce", "delayMs"]],
  ] as [string, string, string, unknown, (string | number)[]][])("refuses %s with 400, naming it, and changes nothing", async (_what, method, path, body, at) => {
    const lane = await setup();
    const error = expectError(await call(method, `${lane.base}${path}`, { json: body }), 400, "invalid_request");
    expect(error.details.map((d: { path: unknown }) => d.path)).toContainEqual(at);
    const info = (await get(lane.base)).body;
    expect(info).toMatchObject({ rateLimit: null, fairness: "fifo", counts: { queued: 0 } });
    expect((await get(`${lane.base}/queues/q`)).body).toMatchObject({ concurrency: 1, rateLimit: null });
  });
});
