/**
 * Typed kinds through the HTTP API (docs/api.md "Typed kinds"): 400 `invalid_payload` with each issue's
 * path from the body's root on every route that enqueues or completes, nothing stored; on a sharded
 * lane too (a batch's paths name the request's items; a debounce replacement on another shard is
 * checked); and `/openapi.json`'s `x-kinds`.
 */
import { describe, expect, it } from "vitest";
import { call, get, post } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";
import { createApp } from "../../src/worker/app.js";
import { DemoLane } from "../../src/worker/index.js";
import { MAX_PAYLOAD_BYTES } from "../../src/shared/defaults.js";

const lane = () => `/v1/lanes/${crypto.randomUUID()}`;

function expectRefused(answer: { status: number; body: any }, details: unknown[]): void {
  expect([answer.status, answer.body.error?.code], JSON.stringify(answer.body)).toEqual([400, "invalid_payload"]);
  expect(answer.body.error.details).toEqual(details);
}

const issue = (...path: (string | number)[]) => ({ path, message: expect.any(String) });

describe("invalid_payload over HTTP", () => {
  it("refuses an enqueue, a batch and a schedule PUT, storing nothing", async () => {
    const base = lane();
    expectRefused(await post(`${base}/jobs`, { kind: "typed.sleep", payload: { ms: "1" } }), [issue("payload", "ms")]);
    expectRefused(await post(`${base}/jobs`, { kind: "typed.async", payload: { ms: -1 } }), [issue("payload", "ms")]);
    const jobs = [{ kind: "typed.sleep", payload: { ms: 1 } }, { kind: "typed.sleep", payload: {} }];
    expectRefused(await post(`${base}/jobs/batch`, { jobs }), [issue("jobs", 1, "payload", "ms")]);
    expectRefused(await call("PUT", `${base}/schedules/s1`, { json: { everyMs: 60_000, job: { kind: "typed.sleep", payload: { ms: 1.5 } } } }), [issue("job", "payload", "ms")]);
    expect((await get(`${base}/jobs`)).body.jobs).toEqual([]);
    expect((await get(`${base}/schedules`)).body.schedules).toEqual([]);
    expect((await post(`${base}/jobs`, { kind: "untyped", payload: { ms: "1" } })).status).toBe(201);
  });

  it("refuses a complete and an ack whose result breaks the kind's result schema, keeping the lease", async () => {
    const base = lane();
    expect((await post(`${base}/jobs`, { id: "c1", kind: "typed.pull", payload: { to: "a@b.co" } })).status).toBe(201);
    const [job] = (await post(`${base}/claims`, { kinds: ["typed.pull"] })).body.jobs;
    expectRefused(await post(`${base}/jobs/c1/complete`, { token: job.lease.token, result: { sent: "y" } }), [issue("result", "sent")]);
    const acked = await post(`${base}/acks`, { acks: [{ op: "complete", id: "c1", token: job.lease.token, result: {} }] });
    expect(acked.body.results).toEqual([{ id: "c1", ok: false, error: { code: "invalid_payload", message: expect.stringContaining("sent") } }]);
    expect((await get(`${base}/jobs/c1`)).body.state).toBe("running");
    expect((await post(`${base}/jobs/c1/complete`, { token: job.lease.token, result: { sent: true } })).body.job.outcome).toBe("completed");
  });
});

describe("invalid_payload on a sharded lane", () => {
  it("names a batch's items as the request numbers them, every shard's issues, nothing stored on any shard", async () => {
    const fixture = await setupSharded(4, "PLAIN_LANE");
    const jobs = [0, 1, 2, 3, 0, 1].map((shard, i) => ({ kind: "typed.sleep", queue: keyOn(shard, 4, "q"), payload: { ms: i === 2 || i === 5 ? -1 : i } }));
    expectRefused(await post(`${fixture.base}/jobs/batch`, { jobs }), [issue("jobs", 2, "payload", "ms"), issue("jobs", 5, "payload", "ms")]);
    expect((await get(`${fixture.base}/jobs`)).body.jobs).toEqual([]);
  });

  it("checks a debounce replacement whose key's job is on another shard", async () => {
    const fixture = await setupSharded(4, "PLAIN_LANE");
    const debounce = { key: keyOn(3, 4, "key"), delayMs: 1000 };
    const first = await post(`${fixture.base}/jobs`, { kind: "typed.sleep", payload: { ms: 1 }, queue: keyOn(1, 4, "qa"), debounce });
    expect(first.status).toBe(201);
    expectRefused(await post(`${fixture.base}/jobs`, { kind: "typed.sleep", payload: { ms: "x" }, queue: keyOn(2, 4, "qb"), debounce }), [issue("payload", "ms")]);
    expect((await get(`${fixture.base}/jobs/${first.body.job.id}`)).body).toMatchObject({ payload: { ms: 1 }, queue: keyOn(1, 4, "qa") });
  });

  it("refuses a debounce replacement too large and breaking its schema with 413 first, as an enqueue orders them", async () => {
    const fixture = await setupSharded(4, "PLAIN_LANE");
    const debounce = { key: keyOn(3, 4, "key"), delayMs: 1000 };
    const first = await post(`${fixture.base}/jobs`, { kind: "typed.sleep", payload: { ms: 1 }, queue: keyOn(1, 4, "qa"), debounce });
    expect(first.status).toBe(201);
    // The hand-over asked of the shard holding the key's job, as the router asks it.
    const badAndBig = { ms: "x", blob: "y".repeat(MAX_PAYLOAD_BYTES) };
    const answer = await fixture.shard(1).handOverKey(debounce.key, null, 2, { kind: "typed.sleep", payload: badAndBig, queue: keyOn(2, 4, "qb"), debounce });
    expect(answer.ok ? answer : answer.error.code).toBe("payload_too_large");
    expect((await get(`${fixture.base}/jobs/${first.body.job.id}`)).body).toMatchObject({ payload: { ms: 1 }, queue: keyOn(1, 4, "qa") });
  });
});

describe("x-kinds in /openapi.json", () => {
  it("lists the test lane's kinds: JSON Schema where the schema converts, null where it does not", async () => {
    const document = (await call("GET", "/openapi.json", { token: null })).body;
    const kinds = document["x-kinds"];
    expect(Object.keys(kinds).sort()).toEqual(["typed.async", "typed.batch", "typed.breaks", "typed.pull", "typed.result", "typed.sleep", "typed.ten"]);
    expect(kinds["typed.async"]).toEqual({ payload: null, result: null });
    expect(kinds["typed.sleep"].result).toBeNull();
    expect(kinds["typed.sleep"].payload).toMatchObject({ type: "object", properties: { ms: { type: "integer", minimum: 0 } }, required: ["ms"] });
    expect(kinds["typed.pull"].result).toMatchObject({ type: "object", properties: { sent: { type: "boolean" } } });
  });

  it("is {} for a worker whose lane declares no kinds", async () => {
    const document = await (await createApp().request("/openapi.json")).json<Record<string, unknown>>();
    expect(document["x-kinds"]).toEqual({});
  });

  it("lists the dev worker's demo kinds as docs/api.md gives them", async () => {
    const document = await (await createApp({ lane: DemoLane }).request("/openapi.json")).json<{ "x-kinds": Record<string, { payload: any; result: unknown }> }>();
    const kinds = document["x-kinds"];
    expect(Object.keys(kinds).sort()).toEqual(["demo.approval", "demo.batch", "demo.deps", "demo.echo", "demo.fail", "demo.sleep", "demo.sleepy", "demo.steps", "demo.stream", "demo.throw"]);
    for (const kind of Object.values(kinds)) expect(kind.result).toBeNull();
    expect(kinds["demo.echo"]!.payload).not.toHaveProperty("type");
    expect(kinds["demo.sleep"]!.payload).toMatchObject({ type: "object", required: ["ms"], properties: { ms: { type: "integer", minimum: 0 }, progressEveryMs: { type: "integer", minimum: 0 } } });
    expect(kinds["demo.stream"]!.payload.properties.chunks).toMatchObject({ type: "integer", minimum: 0, maximum: 1000 });
    expect(kinds["demo.throw"]!.payload.properties.value.enum).toEqual(["null-prototype", "symbol", "bad-tostring", "undefined", "number", "string"]);
    expect(kinds["demo.batch"]!.payload).toMatchObject({ type: "object", properties: { fail: { type: "boolean" } } });
    expect(kinds["demo.approval"]!.payload.anyOf).toEqual(expect.arrayContaining([{ type: "null" }]));
  });
});
