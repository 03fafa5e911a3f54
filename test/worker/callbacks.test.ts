/**
 * Waitpoints' callback URLs (docs/api.md "Waitpoints"): every create answer carries a signed path that
 * completes that one waitpoint without a bearer token, exactly as `…/complete` does; anything that
 * does not verify is a 404 that says nothing and changes nothing.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { callbackUrlFor, signCallback } from "../../src/worker/signing.js";
import { keyOn, setupSharded } from "../helpers/shards.js";
import { call, claimOne, enqueue, expectError, get, post, read, request, setup, type Answer, type CallOptions, type LaneFixture } from "../helpers/http.js";

/** The workers pool's SIGNING_SECRET (vitest.config.ts). */
const SECRET = "test-signing-secret";
const KIB = 1024;

const app = createApp();

/** One request through the app with `overrides` of its bindings (`undefined`: that binding unset). */
async function withEnv(overrides: Record<string, string | undefined>, method: string, path: string, options?: CallOptions): Promise<Answer> {
  return read(await app.fetch(request(method, path, options), { ...env, ...overrides }, createExecutionContext()));
}

/** A pending waitpoint and its callback URL, as the create answers them. */
async function pending(fixture?: LaneFixture, id = `wp-${crypto.randomUUID().slice(0, 8)}`): Promise<{ fixture: LaneFixture; id: string; url: string }> {
  const lane = fixture ?? (await setup());
  const created = await post(`${lane.base}/waitpoints`, { id });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { fixture: lane, id, url: created.body.callbackUrl };
}

async function waitpoint(fixture: LaneFixture, id: string): Promise<any> {
  const answer = await get(`${fixture.base}/waitpoints/${id}`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.waitpoint;
}

/** A callback POST with no Authorization and `body` as its JSON body (undefined: no body at all). */
const callback = (url: string, body?: unknown, options: CallOptions = {}) => call("POST", url, { token: null, ...options, ...(body === undefined ? {} : { json: body }) });

describe("a waitpoint's create answer", () => {
  it("carries its signed callback URL, on the first create (201) and on a repeat (200)", async () => {
    const fixture = await setup();
    const first = await post(`${fixture.base}/waitpoints`, { id: "order-9.paid" });
    expect(first.status).toBe(201);
    const signature = await signCallback(SECRET, fixture.lane, "order-9.paid");
    expect(first.body.callbackUrl).toBe(`/v1/callbacks/${fixture.lane}/waitpoints/order-9.paid/${signature}`);
    const again = await post(`${fixture.base}/waitpoints`, { id: "order-9.paid" });
    expect(again.status).toBe(200);
    expect(again.body.callbackUrl).toBe(first.body.callbackUrl);
  });

  it("carries one for a waitpoint whose id the lane made", async () => {
    const fixture = await setup();
    const created = await post(`${fixture.base}/waitpoints`, {});
    expect(created.status).toBe(201);
    expect(created.body.callbackUrl).toBe(await callbackUrlFor(SECRET, fixture.lane, created.body.waitpoint.id));
  });

  it("carries none without SIGNING_SECRET", async () => {
    const fixture = await setup();
    for (const secret of [undefined, ""]) {
      const created = await withEnv({ SIGNING_SECRET: secret }, "POST", `${fixture.base}/waitpoints`, { json: { id: "wp-1" } });
      expect(created.status).toBeLessThan(300);
      expect(created.body.waitpoint.id).toBe("wp-1");
      expect(created.body).not.toHaveProperty("callbackUrl");
    }
  });
});

describe("POST {callbackUrl}", () => {
  it("completes the waitpoint with the whole body as its result, without a bearer token", async () => {
    const { fixture, id, url } = await pending();
    const answer = await callback(url, { paid: true, amount: 42 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.waitpoint).toMatchObject({ id, lane: fixture.lane, state: "completed", result: { paid: true, amount: 42 } });
    expect(await waitpoint(fixture, id)).toMatchObject({ state: "completed", result: { paid: true, amount: 42 } });
  });

  it("takes any JSON value as the result, and no body (or an empty one) as null", async () => {
    const fixture = await setup();
    for (const [body, result] of [[[1, 2], [1, 2]], ["text", "text"], [7, 7], [null, null]] as const) {
      const { id, url } = await pending(fixture);
      expect((await callback(url, body)).body.waitpoint).toMatchObject({ state: "completed", result });
      expect(await waitpoint(fixture, id)).toMatchObject({ result });
    }
    const none = await pending(fixture);
    expect((await callback(none.url)).body.waitpoint).toMatchObject({ state: "completed", result: null });
    const empty = await pending(fixture);
    expect((await callback(empty.url, undefined, { raw: "", headers: { "content-type": "application/json" } })).body.waitpoint).toMatchObject({ state: "completed", result: null });
  });

  it("releases the jobs that wait on the waitpoint, handing them its result", async () => {
    const { fixture, id, url } = await pending();
    const job = await enqueue(fixture, { dependsOn: [{ waitpoint: id }] });
    expect(job.state).toBe("blocked");
    expect((await waitpoint(fixture, id)).waiters).toBe(1);
    expect((await callback(url, { approved: "yes" })).status).toBe(200);
    expect((await get(`${fixture.base}/jobs/${job.id}`)).body.state).toBe("queued");
    const claimed = await claimOne(fixture);
    expect(claimed.id).toBe(job.id);
    expect(claimed.dependencies).toEqual([{ lane: fixture.lane, waitpoint: id, outcome: "completed", result: { approved: "yes" } }]);
  });

  it("completes a waitpoint of a sharded lane in its own shard", async () => {
    const lane = await setupSharded(4);
    for (let shard = 0; shard < 4; shard++) {
      const id = keyOn(shard, 4, "wp");
      const created = await post(`${lane.base}/waitpoints`, { id });
      expect(created.status).toBe(201);
      expect((await callback(created.body.callbackUrl, { shard })).body.waitpoint).toMatchObject({ id, state: "completed", result: { shard } });
      expect((await get(`${lane.base}/waitpoints/${id}`)).body.waitpoint).toMatchObject({ state: "completed", result: { shard } });
      expectError(await callback(created.body.callbackUrl, { again: true }), 409, "waitpoint_settled");
    }
  });

  it("ignores an Authorization header, even a wrong one", async () => {
    const { url } = await pending();
    expect((await call("POST", url, { token: "wrong", json: { ok: 1 } })).status).toBe(200);
  });

  it("answers 409 waitpoint_settled the second time, keeping the first result", async () => {
    const { fixture, id, url } = await pending();
    await callback(url, { first: true });
    const again = expectError(await callback(url, { second: true }), 409, "waitpoint_settled");
    expect(again.details.waitpoint).toMatchObject({ id, state: "completed", result: { first: true } });
    expectError(await post(`${fixture.base}/waitpoints/${id}/complete`, { result: 3 }), 409, "waitpoint_settled");
    expect((await waitpoint(fixture, id)).result).toEqual({ first: true });
  });

  it("creates an unknown waitpoint already completed (201), as …/complete does", async () => {
    const fixture = await setup();
    const url = (await callbackUrlFor(SECRET, fixture.lane, "early-signal"))!;
    const answer = await callback(url, { early: true });
    expect(answer.status).toBe(201);
    expect(answer.body.waitpoint).toMatchObject({ id: "early-signal", state: "completed", result: { early: true }, timeoutAt: null });
  });

  it("takes a body of 128 KiB; one byte more is 413 payload_too_large and changes nothing", async () => {
    const fixture = await setup();
    const fits = await pending(fixture);
    const text = (bytes: number) => JSON.stringify("x".repeat(bytes - 2));
    expect(text(128 * KIB)).toHaveLength(128 * KIB);
    const json = { "content-type": "application/json" };
    expect((await callback(fits.url, undefined, { raw: text(128 * KIB), headers: json })).status).toBe(200);
    const over = await pending(fixture);
    expectError(await callback(over.url, undefined, { raw: text(128 * KIB + 1), headers: json }), 413, "payload_too_large");
    expectError(await callback(over.url, undefined, { raw: text(2048 * KIB), headers: json }), 413, "payload_too_large");
    expect(await waitpoint(fixture, over.id)).toMatchObject({ state: "pending", result: null });
  });

  it("answers 415 for a body that is not JSON, 400 for malformed JSON, and changes nothing", async () => {
    const { fixture, id, url } = await pending();
    expectError(await callback(url, undefined, { raw: "paid=1", headers: { "content-type": "application/x-www-form-urlencoded" } }), 415, "unsupported_media_type");
    expectError(await callback(url, undefined, { raw: "{\"paid\":", headers: { "content-type": "application/json" } }), 400, "invalid_request");
    expectError(await callback(url, undefined, { raw: "[".repeat(200) + "]".repeat(200), headers: { "content-type": "application/json" } }), 400, "invalid_request");
    expect(await waitpoint(fixture, id)).toMatchObject({ state: "pending" });
  });

  it("is 404 not_found for a wrong or malformed signature, another lane or another id, and changes nothing", async () => {
    const { fixture, id, url } = await pending();
    // The same id pending in another lane, and another id in the same lane.
    const other = await pending(undefined, id);
    const sibling = await pending(fixture);
    const parts = url.split("/");
    const signature = parts.at(-1)!;
    const at = (fromEnd: number, value: string) => parts.map((p, i) => (i === parts.length - 1 - fromEnd ? value : p)).join("/");
    const refused = [
      at(0, (signature[0] === "A" ? "B" : "A") + signature.slice(1)),
      at(0, signature.slice(0, 42)),
      at(0, `${signature}A`),
      at(0, "not-a-signature"),
      at(3, other.fixture.lane),
      at(1, sibling.id),
      sibling.url.replace(sibling.id, id),
      `${url}/extra`,
    ];
    for (const path of refused) expectError(await callback(path, { forged: true }), 404, "not_found");
    for (const [lane, wp] of [[fixture, id], [other.fixture, id], [fixture, sibling.id]] as const) expect(await waitpoint(lane, wp)).toMatchObject({ state: "pending" });
  });

  it("says nothing about the waitpoint when refused: the same answer whether it exists or not", async () => {
    const fixture = await setup();
    await pending(fixture, "exists");
    const forged = "A".repeat(43);
    const known = await callback(`/v1/callbacks/${fixture.lane}/waitpoints/exists/${forged}`, {});
    const unknown = await callback(`/v1/callbacks/${fixture.lane}/waitpoints/nowhere/${forged}`, {});
    expectError(known, 404, "not_found");
    expect(unknown.body).toEqual(known.body);
  });

  it("is 404 not_found without SIGNING_SECRET, or under another one, and changes nothing", async () => {
    const { fixture, id, url } = await pending();
    for (const secret of [undefined, "", "rotated-secret"]) expectError(await withEnv({ SIGNING_SECRET: secret }, "POST", url, { token: null, json: { x: 1 } }), 404, "not_found");
    expect(await waitpoint(fixture, id)).toMatchObject({ state: "pending" });
  });

  it("answers 503 auth_not_configured when the API has no token (fail closed), changing nothing", async () => {
    const { fixture, id, url } = await pending();
    for (const apiToken of [undefined, ""]) expectError(await withEnv({ API_TOKEN: apiToken }, "POST", url, { token: null, json: { x: 1 } }), 503, "auth_not_configured");
    expect(await waitpoint(fixture, id)).toMatchObject({ state: "pending" });
  });

  it("answers only POST: other methods are 404 not_found", async () => {
    const { fixture, id, url } = await pending();
    for (const method of ["GET", "PUT", "PATCH", "DELETE"]) expectError(await call(method, url, { token: null, json: {} }), 404, "not_found");
    expect(await waitpoint(fixture, id)).toMatchObject({ state: "pending" });
  });
});
