/**
 * The waitpoints' routes over HTTP (docs/api.md "Waitpoints"): every answer of create, read and
 * complete, refusals that change nothing, the lane's pending count, stats and sweep, the access of
 * each role, and a lane of 4 shards answering for all of them.
 */
import { createExecutionContext, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { shardOf } from "../../src/shared/shards.js";
import { call, expectError, get, post, read, request, setup, T0, TOKEN, type Answer } from "../helpers/http.js";
import { setupSharded } from "../helpers/shards.js";

const waitpointOf = (answer: Answer) => answer.body.waitpoint;

describe("POST /v1/lanes/{lane}/waitpoints", () => {
  it("creates a pending waitpoint (201), then answers it as it is (200), with its callback URL", async () => {
    const { base, lane } = await setup();
    const created = await post(`${base}/waitpoints`, { id: "order-9.paid", timeoutMs: 60_000 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.waitpoint).toEqual({ id: "order-9.paid", lane, state: "pending", result: null, timeoutAt: T0 + 60_000, createdAt: T0, settledAt: null, waiters: 0 });
    expect(created.body.callbackUrl).toMatch(new RegExp(`^/v1/callbacks/${lane}/waitpoints/order-9\\.paid/[A-Za-z0-9_-]{43}$`));
    const again = await post(`${base}/waitpoints`, { id: "order-9.paid", timeoutMs: 1 });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(created.body);
  });

  it("makes a UUID id without one, and takes no body at all", async () => {
    const { base } = await setup();
    const created = await call("POST", `${base}/waitpoints`);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.waitpoint.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(created.body.waitpoint.timeoutAt).toBeNull();
  });

  it("accepts a schedule fire's wait id, in the body and in paths", async () => {
    const { base } = await setup();
    expect((await post(`${base}/waitpoints`, { id: "nightly@1795936561938.approval" })).status).toBe(201);
    expect((await get(`${base}/waitpoints/nightly@1795936561938.approval`)).status).toBe(200);
    expect((await post(`${base}/waitpoints/nightly@1795936561938.approval/complete`, {})).status).toBe(200);
  });

  it("refuses bad ids, out-of-range timeouts and unknown fields (400), creating nothing", async () => {
    const { base } = await setup();
    for (const body of [{ id: "-x" }, { id: "a/b" }, { id: "x".repeat(129) }, { id: 7 }, { timeoutMs: 0 }, { timeoutMs: 31_536_000_001 }, { timeoutMs: 1.5 }, { nope: true }]) {
      expectError(await post(`${base}/waitpoints`, body), 400, "invalid_request");
    }
    expect((await get(base)).body.waitpoints).toEqual({ pending: 0 });
  });
});

describe("GET /v1/lanes/{lane}/waitpoints/{id}", () => {
  it("reads a waitpoint (200), 404 waitpoint_not_found for an unknown id, 400 for a bad one", async () => {
    const { base } = await setup();
    const created = await post(`${base}/waitpoints`, { id: "w" });
    const read = await get(`${base}/waitpoints/w`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ waitpoint: created.body.waitpoint });
    expectError(await get(`${base}/waitpoints/nope`), 404, "waitpoint_not_found");
    expectError(await get(`${base}/waitpoints/-bad`), 400, "invalid_request");
  });
});

describe("POST /v1/lanes/{lane}/waitpoints/{id}/complete", () => {
  it("completes a pending waitpoint (200) once: then 409 waitpoint_settled with the waitpoint as it is", async () => {
    const { base, clock } = await setup();
    await post(`${base}/waitpoints`, { id: "w", timeoutMs: 60_000 });
    clock.advance(5);
    const done = await post(`${base}/waitpoints/w/complete`, { result: { paid: 12 } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(waitpointOf(done)).toMatchObject({ state: "completed", result: { paid: 12 }, settledAt: T0 + 5, timeoutAt: T0 + 60_000 });
    const second = expectError(await post(`${base}/waitpoints/w/complete`, { result: "late" }), 409, "waitpoint_settled");
    expect(second.details).toEqual({ waitpoint: waitpointOf(done) });
    expect(waitpointOf(await get(`${base}/waitpoints/w`))).toEqual(waitpointOf(done));
  });

  it("creates an unknown id already completed (201), with no body", async () => {
    const { base } = await setup();
    const done = await call("POST", `${base}/waitpoints/early/complete`);
    expect(done.status, JSON.stringify(done.body)).toBe(201);
    expect(waitpointOf(done)).toMatchObject({ id: "early", state: "completed", result: null, timeoutAt: null, settledAt: T0 });
    const created = await post(`${base}/waitpoints`, { id: "early", timeoutMs: 1000 });
    expect(created.status).toBe(200);
    expect(waitpointOf(created)).toEqual(waitpointOf(done));
  });

  it("refuses a result over 128 KiB (413), unknown fields (400) and a body that is not JSON (415), changing nothing", async () => {
    const { base } = await setup();
    await post(`${base}/waitpoints`, { id: "w" });
    expectError(await post(`${base}/waitpoints/w/complete`, { result: "x".repeat(128 * 1024) }), 413, "payload_too_large");
    expectError(await post(`${base}/waitpoints/w/complete`, { result: 1, token: "t" }), 400, "invalid_request");
    expectError(await call("POST", `${base}/waitpoints/w/complete`, { raw: "done", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
    expectError(await post(`${base}/waitpoints/new/complete`, { result: "x".repeat(128 * 1024) }), 413, "payload_too_large");
    expect(waitpointOf(await get(`${base}/waitpoints/w`)).state).toBe("pending");
    expectError(await get(`${base}/waitpoints/new`), 404, "waitpoint_not_found");
    const lane = (await get(base)).body;
    expect(lane.waitpoints).toEqual({ pending: 1 });
    expect(lane.stats).toMatchObject({ waitpointsCompleted: 0, waitpointsTimedOut: 0 });
  });
});

describe("the lane", () => {
  it("counts pending waitpoints and each settlement once; times out with the alarm; a sweep removes settled ones", async () => {
    const { base, clock, stub } = await setup();
    await post(`${base}/waitpoints`, { id: "a", timeoutMs: 1000 });
    await post(`${base}/waitpoints`, { id: "b" });
    await post(`${base}/waitpoints/b/complete`, {});
    await post(`${base}/waitpoints/b/complete`, {});
    await post(`${base}/waitpoints/c/complete`, {});
    expect((await get(base)).body).toMatchObject({ waitpoints: { pending: 1 }, stats: { waitpointsCompleted: 2, waitpointsTimedOut: 0 }, nextWakeAt: T0 + 1000 });
    clock.set(T0 + 1000);
    await runDurableObjectAlarm(stub);
    expect(waitpointOf(await get(`${base}/waitpoints/a`)).state).toBe("timedOut");
    expect((await get(base)).body).toMatchObject({ waitpoints: { pending: 0 }, stats: { waitpointsCompleted: 2, waitpointsTimedOut: 1 } });
    const swept = await post(`${base}/sweep`, { settledBefore: T0 + 1 });
    expect(swept.body).toEqual({ removed: 0, waitpointsRemoved: 2 });
    expectError(await get(`${base}/waitpoints/b`), 404, "waitpoint_not_found");
    expect(waitpointOf(await get(`${base}/waitpoints/a`)).state).toBe("timedOut");
    expect((await post(`${base}/sweep`, { settledBefore: T0 + 2000 })).body).toEqual({ removed: 0, waitpointsRemoved: 1 });
    expect((await get(base)).body.stats).toMatchObject({ waitpointsCompleted: 2, waitpointsTimedOut: 1 });
  });

  it("refuses to reshard a lane that holds a waitpoint (409 lane_not_empty)", async () => {
    const { base } = await setup();
    await post(`${base}/waitpoints`, { id: "w" });
    expectError(await call("PATCH", base, { json: { shards: 4 } }), 409, "lane_not_empty");
    expect((await get(base)).body.shards).toBe(1);
  });
});

describe("access", () => {
  const TOKENS = { producer: "wp-producer", consumer: "wp-consumer", viewer: "wp-viewer" };
  const API_KEYS = JSON.stringify(Object.entries(TOKENS).map(([role, token]) => ({ token, role })));
  const app = createApp();
  const send = async (method: string, path: string, token: string, json?: unknown) =>
    read(await app.fetch(request(method, path, { token, ...(json === undefined ? {} : { json }) }), { ...env, API_TOKEN: TOKEN, API_KEYS }, createExecutionContext()));

  it("lets producers create, complete and read; consumers and viewers read only (403 changes nothing)", async () => {
    const { base } = await setup();
    expect((await send("POST", `${base}/waitpoints`, TOKENS.producer, { id: "w" })).status).toBe(201);
    for (const role of ["consumer", "viewer"] as const) {
      expect((await send("GET", `${base}/waitpoints/w`, TOKENS[role])).status).toBe(200);
      expectError(await send("POST", `${base}/waitpoints`, TOKENS[role], { id: `by-${role}` }), 403, "forbidden");
      expectError(await send("POST", `${base}/waitpoints/w/complete`, TOKENS[role], {}), 403, "forbidden");
    }
    expect(waitpointOf(await get(`${base}/waitpoints/w`)).state).toBe("pending");
    expectError(await get(`${base}/waitpoints/by-viewer`), 404, "waitpoint_not_found");
    expect((await send("POST", `${base}/waitpoints/w/complete`, TOKENS.producer, { result: 1 })).status).toBe(200);
    expect((await send("GET", `${base}/waitpoints/w`, TOKENS.producer)).status).toBe(200);
  });
});

describe("a lane of 4 shards", () => {
  it("keeps each waitpoint in the shard its id hashes to, and answers every route for the whole lane", async () => {
    const fixture = await setupSharded(4);
    const ids = Array.from({ length: 12 }, (_, i) => `wp-${i}`);
    for (const id of ids) expect((await post(`${fixture.base}/waitpoints`, { id, timeoutMs: 1000 })).status).toBe(201);
    for (const id of ids) {
      const home = shardOf(id, 4);
      for (let i = 0; i < 4; i++) expect((await fixture.shard(i).getWaitpoint(id)).ok, `${id} on shard ${i}`).toBe(i === home);
      expect(waitpointOf(await get(`${fixture.base}/waitpoints/${id}`)).id).toBe(id);
    }
    const made = await post(`${fixture.base}/waitpoints`, {});
    expect(made.status).toBe(201);
    expect((await fixture.shard(shardOf(made.body.waitpoint.id, 4)).getWaitpoint(made.body.waitpoint.id)).ok).toBe(true);
    expect((await post(`${fixture.base}/waitpoints`, { id: "wp-3" })).status).toBe(200);
    for (const id of ids.slice(0, 5)) expect((await post(`${fixture.base}/waitpoints/${id}/complete`, { result: id })).status).toBe(200);
    expectError(await post(`${fixture.base}/waitpoints/wp-0/complete`, {}), 409, "waitpoint_settled");
    expect((await post(`${fixture.base}/waitpoints/fresh/complete`, {})).status).toBe(201);
    expect((await get(fixture.base)).body).toMatchObject({ waitpoints: { pending: 8 }, stats: { waitpointsCompleted: 6, waitpointsTimedOut: 0 } });
    fixture.clock.set(T0 + 1000);
    for (let i = 0; i < 4; i++) await runDurableObjectAlarm(fixture.shard(i));
    expect((await get(fixture.base)).body).toMatchObject({ waitpoints: { pending: 1 }, stats: { waitpointsCompleted: 6, waitpointsTimedOut: 7 } });
    expect((await post(`${fixture.base}/sweep`, { settledBefore: T0 + 2000 })).body).toEqual({ removed: 0, waitpointsRemoved: 13 });
    expectError(await call("PATCH", fixture.base, { json: { shards: 2 } }), 409, "lane_not_empty");
  });
});
