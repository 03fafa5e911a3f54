import { describe, expect, it } from "vitest";
import { EXPOSITION_CONTENT_TYPE } from "../../src/durable/metrics/exposition.js";
import { createApp } from "../../src/worker/app.js";
import { get } from "../helpers/http.js";

/** Every route of docs/api.md that takes the bearer scheme. */
const API_ROUTES = [
  "post /v1/lanes/{lane}/jobs",
  "post /v1/lanes/{lane}/jobs/batch",
  "get /v1/lanes/{lane}/jobs/{id}",
  "get /v1/lanes/{lane}/jobs/{id}/payload",
  "get /v1/lanes/{lane}/jobs/{id}/result",
  "get /v1/lanes/{lane}/jobs",
  "post /v1/lanes/{lane}/jobs/{id}/cancel",
  "post /v1/lanes/{lane}/jobs/{id}/link",
  "post /v1/lanes/{lane}/jobs/{id}/requeue",
  "get /v1/lanes/{lane}",
  "get /v1/lanes/{lane}/history",
  "patch /v1/lanes/{lane}",
  "get /v1/lanes",
  "post /v1/lanes/{lane}/sweep",
  "post /v1/lanes/{lane}/claims",
  "post /v1/lanes/{lane}/jobs/{id}/renew",
  "post /v1/lanes/{lane}/jobs/{id}/complete",
  "post /v1/lanes/{lane}/jobs/{id}/fail",
  "post /v1/lanes/{lane}/jobs/{id}/release",
  "post /v1/tickets",
  "get /v1/access",
  "post /v1/lanes/{lane}/fail",
  "post /v1/lanes/{lane}/bulk",
  "get /v1/lanes/{lane}/bulk/{id}",
  "get /v1/lanes/{lane}/queues/{queue}",
  "post /v1/lanes/{lane}/queues/{queue}/purge",
  "put /v1/lanes/{lane}/queues/{queue}",
  "put /v1/lanes/{lane}/schedules/{name}",
  "get /v1/lanes/{lane}/schedules",
  "get /v1/lanes/{lane}/schedules/{name}",
  "delete /v1/lanes/{lane}/schedules/{name}",
  "post /v1/lanes/{lane}/waitpoints",
  "get /v1/lanes/{lane}/waitpoints/{id}",
  "post /v1/lanes/{lane}/waitpoints/{id}/complete",
  "get /v1/lanes/{lane}/waitpoints",
  "post /v1/lanes/{lane}/acks",
  "post /v1/lanes/{lane}/jobs/{id}/progress",
  "put /v1/lanes/{lane}/jobs/{id}/checkpoints/{name}",
  "get /v1/lanes/{lane}/jobs/{id}/checkpoints",
  "get /v1/lanes/{lane}/jobs/{id}/dependents",
  "post /v1/lanes/{lane}/jobs/{id}/snooze",
  "post /v1/lanes/{lane}/jobs/{id}/wait",
  "get /v1/lanes/{lane}/jobs/{id}/stream",
  "post /v1/lanes/{lane}/jobs/{id}/stream",
  "get /v1/metrics",
  "get /v1/lanes/{lane}/metrics",
  "get /healthz",
];

/**
 * The `/v1` routes the app serves that the document leaves out on purpose: none takes the bearer
 * scheme. Signed links and callbacks carry their HMAC signature in their path (a link's reader is a
 * browser holding no token; a callback's caller, a third party), and the events socket is a
 * WebSocket upgrade that authenticates with a ticket.
 */
const UNDOCUMENTED = [
  "get /v1/links/{lane}/{id}/{expiresAt}/{signature}",
  "get /v1/links/{lane}/{id}/{expiresAt}/{signature}/stream",
  "options /v1/links/*",
  "post /v1/callbacks/{lane}/waitpoints/{id}/{signature}",
  "get /v1/lanes/{lane}/events",
];

/** The one route whose success is not JSON nor metrics: a job's Server-Sent Events. */
const EVENT_STREAM_ROUTE = "get /v1/lanes/{lane}/jobs/{id}/stream";

type Operation = {
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
};

async function document() {
  const answer = await get("/openapi.json", { token: null });
  expect(answer.status).toBe(200);
  return answer.body as { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
}

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3.1 document of every route, served without auth", async () => {
    const doc = await document();
    expect(doc.openapi).toBe("3.1.0");
    const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m} ${path}`));
    expect(routes.sort()).toEqual([...API_ROUTES].sort());
  });

  it("leaves out exactly the signed routes and the events socket, and every other /v1 route the app serves is in it", async () => {
    const doc = await document();
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m} ${path}`));
    expect(Object.keys(doc.paths).filter((path) => path.startsWith("/v1/links") || path.startsWith("/v1/callbacks"))).toEqual([]);
    // The app's handlers (middleware is registered as ALL), in the document's path syntax.
    const served = createApp().routes.filter((r) => r.method !== "ALL" && r.path.startsWith("/v1/")).map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
    expect([...new Set(served)].sort()).toEqual([...documented.filter((r) => r.includes(" /v1/")), ...UNDOCUMENTED].sort());
  });

  it("describes each route's path parameters, request body and responses", async () => {
    const doc = await document();
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const where = `${method} ${path}`;
        const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        expect(operation.parameters?.filter((p) => p.in === "path").map((p) => p.name) ?? [], where).toEqual(params);
        if (method === "post" || method === "patch") expect(operation.requestBody?.content["application/json"]?.schema, where).toBeDefined();
        const success = Object.keys(operation.responses).filter((s) => s.startsWith("2"));
        expect(success.length, where).toBeGreaterThan(0);
        // JSON, but for the metrics routes' Prometheus text and a job's stream of Server-Sent Events.
        const type = path.endsWith("/metrics") ? EXPOSITION_CONTENT_TYPE : where === EVENT_STREAM_ROUTE ? "text/event-stream" : "application/json";
        for (const status of success) expect(Object.keys(operation.responses[status]!.content ?? {}), `${where} ${status}`).toEqual([type]);
        for (const status of success) expect(operation.responses[status]!.content?.[type]?.schema, `${where} ${status}`).toBeDefined();
        if (path.startsWith("/v1/")) {
          for (const status of ["400", "401", "503"]) expect(operation.responses[status], `${where} ${status}`).toBeDefined();
        }
      }
    }
  });

  it("names the request and response schemas", async () => {
    const doc = await document();
    for (const name of ["EnqueueRequest", "Job", "ClaimedJob", "Lease", "LaneInfo", "ErrorResponse", "ClaimRequest", "FailRequest"]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
  });

  it("lists the list query parameters", async () => {
    const doc = await document();
    const names = doc.paths["/v1/lanes/{lane}/jobs"]!.get!.parameters!.filter((p) => p.in === "query").map((p) => p.name);
    expect(names.sort()).toEqual(["cursor", "kind", "limit", "outcome", "queue", "state"]);
  });
});

describe("GET /healthz", () => {
  it('answers {"ok":true} without auth', async () => {
    const answer = await get("/healthz", { token: null });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ ok: true });
  });
});
