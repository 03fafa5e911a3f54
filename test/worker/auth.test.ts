import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { call, enqueue, expectError, get, read, request, ROTATED_TOKEN, setup, TOKEN } from "../helpers/http.js";

interface Operation {
  method: string;
  path: string;
  security?: unknown;
}

/** Every operation of the OpenAPI document under /v1, with its path parameters filled in. */
async function v1Operations(): Promise<Operation[]> {
  const doc = (await get("/openapi.json", { token: null })).body as { paths: Record<string, Record<string, { security?: unknown }>> };
  const lane = crypto.randomUUID();
  const operations = Object.entries(doc.paths)
    .filter(([path]) => path.startsWith("/v1/"))
    .flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        method: method.toUpperCase(),
        path: path.replace("{lane}", lane).replace("{id}", "job-1"),
        security: operation.security,
      })),
    );
  expect(operations.length).toBeGreaterThanOrEqual(15);
  return operations;
}

describe("bearer auth on every /v1 route of the OpenAPI document", () => {
  it("declares the bearer scheme on each", async () => {
    for (const operation of await v1Operations()) expect(operation.security, `${operation.method} ${operation.path}`).toEqual([{ bearer: [] }]);
  });

  it("refuses a missing token with 401", async () => {
    for (const { method, path } of await v1Operations()) {
      expectError(await call(method, path, { token: null, json: {} }), 401, "unauthorized");
    }
  });

  it("refuses a wrong token with 401", async () => {
    for (const { method, path } of await v1Operations()) {
      for (const header of ["Bearer wrong", `Bearer ${TOKEN}x`, `Basic ${btoa(`u:${TOKEN}`)}`, TOKEN, "Bearer ", `Bearer ${TOKEN},${ROTATED_TOKEN}`]) {
        const answer = await call(method, path, { token: null, json: {}, headers: { authorization: header } });
        expectError(answer, 401, "unauthorized");
      }
    }
  });

  it("lets a valid token through to the route", async () => {
    for (const { method, path } of await v1Operations()) {
      const answer = await call(method, path, { json: {} });
      expect([401, 503], `${method} ${path} answered ${answer.status}`).not.toContain(answer.status);
      expect(answer.status, `${method} ${path}`).toBeLessThan(500);
    }
  });

  it("answers 401 before looking at the body", async () => {
    const lane = await setup();
    const answer = await call("POST", `${lane.base}/jobs`, { token: null, raw: "{", headers: { "content-type": "text/plain" } });
    expectError(answer, 401, "unauthorized");
  });
});

describe("token rotation", () => {
  it("accepts each token of the list, and not one that left it", async () => {
    const lane = await setup();
    await enqueue(lane);
    for (const token of [TOKEN, ROTATED_TOKEN]) expect((await get(lane.base, { token })).status).toBe(200);
    expectError(await get(lane.base, { token: "retired-token" }), 401, "unauthorized");
  });

  it("takes the scheme in any case, and trims the token", async () => {
    const lane = await setup();
    expect((await get(lane.base, { token: null, headers: { authorization: `bearer   ${TOKEN}  ` } })).status).toBe(200);
  });

  it("ignores blanks and empties in API_TOKEN", async () => {
    const app = createApp();
    const configured = { ...env, API_TOKEN: " , new-token ,, " };
    const ok = await app.fetch(request("GET", `/v1/lanes/${crypto.randomUUID()}`, { token: "new-token" }), configured, createExecutionContext());
    expect(ok.status).toBe(200);
    const empty = await app.fetch(request("GET", `/v1/lanes/${crypto.randomUUID()}`, { token: "" }), configured, createExecutionContext());
    expectError(await read(empty), 401, "unauthorized");
  });
});

describe("fail closed", () => {
  it("answers 503 auth_not_configured on every /v1 route when API_TOKEN is empty or unset", async () => {
    const app = createApp();
    const operations = await v1Operations();
    for (const apiToken of ["", " , ", undefined]) {
      const unconfigured = { ...env, API_TOKEN: apiToken };
      for (const { method, path } of operations) {
        for (const token of [TOKEN, null]) {
          const response = await app.fetch(request(method, path, { token, json: {} }), unconfigured, createExecutionContext());
          expectError(await read(response), 503, "auth_not_configured");
        }
      }
    }
  });

  it("still answers /healthz and /openapi.json", async () => {
    const app = createApp();
    const unconfigured = { ...env, API_TOKEN: "" };
    const health = await read(await app.fetch(new Request("http://x/healthz"), unconfigured, createExecutionContext()));
    expect(health).toMatchObject({ status: 200, body: { ok: true } });
    const doc = await app.fetch(new Request("http://x/openapi.json"), unconfigured, createExecutionContext());
    expect(doc.status).toBe(200);
  });
});
