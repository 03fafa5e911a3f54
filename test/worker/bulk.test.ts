/**
 * The bulk actions' routes (docs/api.md "Bulk actions"): POST answers 202 with the action, GET its
 * progress; one at a time (409 `bulk_running`), bad input 400 naming the field, admins only to start
 * one (viewers read); a sharded lane's runs on every shard under one id, its answers summed.
 */
import { createExecutionContext, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { PULL_KIND, T0, TOKEN, call, enqueue, expectError, get, post, read, request, setup, type Answer } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

const failAll = async (base: string) => {
  while ((await post(`${base}/fail`, { reason: "boom" })).body.more);
};

describe("POST and GET …/bulk", () => {
  it("accepts one (202), shows its progress, and refuses a second while it runs (409 with the running one)", async () => {
    const f = await setup();
    for (let i = 0; i < 3; i++) await enqueue(f, { id: `j${i}` });
    await failAll(f.base);
    const started = await post(`${f.base}/bulk`, { action: "requeue", filter: { outcome: "failed" } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body.bulk).toEqual({ id: expect.any(String), action: "requeue", filter: { outcome: "failed" }, state: "running", matched: null, done: 0, skipped: 0, createdAt: T0, finishedAt: null });
    const id = started.body.bulk.id;

    const second = expectError(await post(`${f.base}/bulk`, { action: "cancel", filter: { kind: "x" }, reason: "r" }), 409, "bulk_running");
    expect(second.details).toEqual({ bulk: started.body.bulk });

    expect(await runDurableObjectAlarm(f.stub)).toBe(true);
    const done = await get(`${f.base}/bulk/${id}`);
    expect(done.status).toBe(200);
    expect(done.body.bulk).toMatchObject({ id, state: "done", matched: 3, done: 3, skipped: 0, finishedAt: T0 });
    expect((await get(`${f.base}/jobs/j0`)).body).toMatchObject({ state: "queued", attempts: 0 });
    expect((await post(`${f.base}/bulk`, { action: "delete", filter: { state: "settled" } })).status).toBe(202);
  });

  it("answers 404 bulk_not_found for an unknown id", async () => {
    const f = await setup();
    expectError(await get(`${f.base}/bulk/nope`), 404, "bulk_not_found");
  });

  it.each([
    ["an empty filter", { action: "requeue", filter: {} }, ["filter"]],
    ["an unknown filter field", { action: "requeue", filter: { color: "red" } }, ["filter", "color"]],
    ["a bad state", { action: "cancel", filter: { state: "gone" } }, ["filter", "state"]],
    ["a reason with requeue", { action: "requeue", filter: { outcome: "failed" }, reason: "x" }, ["reason"]],
    ["no action", { filter: { outcome: "failed" } }, ["action"]],
  ])("refuses %s: 400 naming the field, nothing stored", async (_what, body, path) => {
    const f = await setup();
    const refused = expectError(await post(`${f.base}/bulk`, body), 400, "invalid_request");
    expect(refused.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    expect(await f.stub.runningBulk()).toEqual({ ok: true, value: null });
  });
});

describe("access", () => {
  const VIEWER = "bulk-viewer-token";
  const PRODUCER = "bulk-producer-token";
  const keys = JSON.stringify([{ token: VIEWER, role: "viewer" }, { token: PRODUCER, role: "producer" }]);
  const app = createApp();
  const send = async (method: string, path: string, token: string, json?: unknown): Promise<Answer> =>
    read(await app.fetch(request(method, path, { token, ...(json === undefined ? {} : { json }) }), { ...env, API_TOKEN: TOKEN, API_KEYS: keys }, createExecutionContext()));

  it("lets admins alone start one (403 otherwise, nothing started); viewers read it", async () => {
    const f = await setup();
    const body = { action: "cancel", filter: { kind: "x" } };
    for (const token of [VIEWER, PRODUCER]) expectError(await send("POST", `${f.base}/bulk`, token, body), 403, "forbidden");
    expect(await f.stub.runningBulk()).toEqual({ ok: true, value: null });
    const started = await send("POST", `${f.base}/bulk`, TOKEN, body);
    expect(started.status).toBe(202);
    expect((await send("GET", `${f.base}/bulk/${started.body.bulk.id}`, VIEWER)).status).toBe(200);
    expect((await send("GET", `${f.base}/bulk/${started.body.bulk.id}`, PRODUCER)).status).toBe(403);
  });
});

describe("a sharded lane", () => {
  it("runs one on every shard under one id; its answers sum them, done when every shard is", async () => {
    const s = await setupSharded(3);
    const ids = [0, 1, 2].flatMap((shard) => [keyOn(shard, 3, "a"), keyOn(shard, 3, "b")]);
    for (const id of ids) expect((await post(`${s.base}/jobs`, { id, kind: PULL_KIND })).status).toBe(201);
    await failAll(s.base);
    const started = await post(`${s.base}/bulk`, { action: "requeue", filter: { outcome: "failed" } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const id = started.body.bulk.id;
    for (let i = 0; i < 3; i++) expect(await s.shard(i).getBulk(id)).toMatchObject({ ok: true, value: { id, state: "running" } });

    await runDurableObjectAlarm(s.shard(0));
    await runDurableObjectAlarm(s.shard(1));
    expect((await get(`${s.base}/bulk/${id}`)).body.bulk).toMatchObject({ id, state: "running", matched: null, done: 4, finishedAt: null });
    // Shard 2's still runs: a second start is refused, naming the lane's one.
    const refused = expectError(await post(`${s.base}/bulk`, { action: "delete", filter: { state: "settled" } }), 409, "bulk_running");
    expect(refused.details.bulk).toMatchObject({ id, state: "running", done: 4 });
    for (let i = 0; i < 3; i++) expect((await s.shard(i).runningBulk() as { value: unknown }).value === null).toBe(i !== 2);

    await runDurableObjectAlarm(s.shard(2));
    expect((await get(`${s.base}/bulk/${id}`)).body.bulk).toMatchObject({ id, state: "done", matched: 6, done: 6, skipped: 0, finishedAt: T0 });
    const counts = (await get(s.base)).body.counts;
    expect(counts).toMatchObject({ queued: 6, failed: 0 });
    expect((await call("POST", `${s.base}/bulk`, { json: { action: "delete", filter: { state: "settled" } } })).status).toBe(202);
  });
});
