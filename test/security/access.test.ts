/**
 * Scoped tokens (docs/api.md "Access"): every /v1 route of the OpenAPI document × every role against
 * the one table in src/worker/access.ts, lane patterns, tickets that carry their issuer's lanes, a
 * refusal that changes nothing, and API_KEYS that cannot be read failing closed.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ACCESS_RULES, ROLES, rolesFor, ruleFor, type Role } from "../../src/worker/access.js";
import { createApp } from "../../src/worker/app.js";
import { get, read, request, TOKEN, type Answer } from "../helpers/http.js";
import { fill, v1Routes } from "./routes.js";

const TOKENS: Record<Role, string> = { admin: TOKEN, producer: "producer-token-1", consumer: "consumer-token-1", viewer: "viewer-token-1" };
const SCOPED_PRODUCER = "scoped-producer-token";
const SCOPED_VIEWER = "scoped-viewer-token";
const API_KEYS = JSON.stringify([
  { token: TOKENS.producer, role: "producer" },
  { token: TOKENS.consumer, role: "consumer" },
  { token: TOKENS.viewer, role: "viewer" },
  { token: SCOPED_PRODUCER, role: "producer", lanes: ["orders-*", "billing"] },
  { token: SCOPED_VIEWER, role: "viewer", lanes: ["team-a-*"] },
]);

const app = createApp();

/** One request through the app with these secrets (`null`: that secret unset). */
async function send(method: string, path: string, token: string | null, json?: unknown, keys: string | null = API_KEYS, apiToken: string | null = TOKEN): Promise<Answer> {
  const secrets = { API_TOKEN: apiToken ?? undefined, API_KEYS: keys ?? undefined };
  const response = await app.fetch(request(method, path, { token, ...(json === undefined ? {} : { json }) }), { ...env, ...secrets }, createExecutionContext());
  return read(response);
}

const fresh = (prefix = "acl") => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;

afterEach(() => vi.restoreAllMocks());

describe("the access table", () => {
  it("has a rule for every route of the OpenAPI document, and none for a route that is not there", async () => {
    const { routes } = await v1Routes();
    for (const route of routes) expect(ruleFor(route.method, route.template), `${route.method} ${route.template}`).toBeDefined();
    const documented = new Set(routes.map((r) => `${r.method} ${r.template}`));
    for (const rule of ACCESS_RULES) expect(documented.has(`${rule.method} ${rule.path}`), `${rule.method} ${rule.path}`).toBe(true);
  });

  it("marks each operation of the document with the roles the table allows", async () => {
    const doc = (await get("/openapi.json", { token: null })).body as { paths: Record<string, Record<string, { "x-roles"?: string[] }>> };
    for (const [template, operations] of Object.entries(doc.paths)) {
      if (!template.startsWith("/v1/")) continue;
      for (const [method, operation] of Object.entries(operations)) expect(operation["x-roles"], `${method} ${template}`).toEqual(rolesFor(method, template));
    }
    expect(doc.paths["/v1/lanes/{lane}"]!["patch"]!["x-roles"]).toEqual(["admin"]);
    expect(doc.paths["/v1/lanes/{lane}/jobs"]!["post"]!["x-roles"]).toEqual(["admin", "producer"]);
  });

  it("answers every route for every role as the table says: 403 forbidden outside it, never 401 or 503 inside", async () => {
    const { routes } = await v1Routes();
    const lane = fresh();
    let denied = 0;
    for (const route of routes) {
      const path = fill(route.template, { lane, id: "job-1" });
      const allowed = rolesFor(route.method, route.template);
      for (const role of ROLES) {
        const answer = await send(route.method, path, TOKENS[role], {});
        const what = `${role} ${route.method} ${route.template}`;
        if (allowed.includes(role)) {
          expect([401, 403, 503], what).not.toContain(answer.status);
        } else {
          denied++;
          expect(answer.status, what).toBe(403);
          expect(answer.body.error.code, what).toBe("forbidden");
        }
      }
    }
    // Every non-admin role is refused somewhere, and admin nowhere.
    expect(denied).toBeGreaterThan(routes.length);
  });

  it("keeps a path without a rule for admins (fail closed)", async () => {
    expect(ruleFor("POST", "/v1/lanes/x/not-a-route")).toBeUndefined();
    expect(rolesFor("POST", "/v1/lanes/x/not-a-route")).toEqual(["admin"]);
    for (const role of ["producer", "consumer", "viewer"] as const) expect((await send("GET", "/v1/lanes/x/not-a-route", TOKENS[role])).status, role).toBe(403);
    expect((await send("GET", "/v1/lanes/x/not-a-route", TOKENS.admin)).status).toBe(404);
  });
});

describe("GET /v1/access", () => {
  it("tells each token its role, lanes and the routes the table allows it, for a page to offer only those", async () => {
    for (const role of ROLES) {
      const answer = await send("GET", "/v1/access", TOKENS[role]);
      expect(answer.status, role).toBe(200);
      expect(answer.body.role).toBe(role);
      expect(answer.body.lanes).toBeNull();
      const expected = ACCESS_RULES.filter((rule) => rolesFor(rule.method, rule.path).includes(role)).map((rule) => `${rule.method} ${rule.path}`);
      expect(answer.body.allows, role).toEqual(expected);
    }
    const admin = (await send("GET", "/v1/access", TOKENS.admin)).body.allows as string[];
    expect(admin).toContain("PATCH /v1/lanes/{lane}");
    const producer = (await send("GET", "/v1/access", TOKENS.producer)).body.allows as string[];
    expect(producer).toContain("POST /v1/lanes/{lane}/jobs");
    expect(producer).not.toContain("PATCH /v1/lanes/{lane}");
    expect(producer).not.toContain("POST /v1/lanes/{lane}/claims");
    const scoped = await send("GET", "/v1/access", SCOPED_PRODUCER);
    expect(scoped.body).toMatchObject({ role: "producer", lanes: ["orders-*", "billing"] });
    expect((await send("GET", "/v1/access", null)).status).toBe(401);
  });
});

describe("a refusal changes nothing", () => {
  it("a viewer's enqueue, a producer's PATCH and claim, a consumer's cancel", async () => {
    const lane = fresh();
    expect((await send("POST", `/v1/lanes/${lane}/jobs`, TOKENS.viewer, { id: "v", kind: "email.send" })).status).toBe(403);
    expect((await send("GET", `/v1/lanes/${lane}/jobs/v`, TOKENS.admin)).status).toBe(404);

    expect((await send("POST", `/v1/lanes/${lane}/jobs`, TOKENS.producer, { id: "p", kind: "email.send" })).status).toBe(201);
    const before = await send("GET", `/v1/lanes/${lane}`, TOKENS.admin);
    expect((await send("PATCH", `/v1/lanes/${lane}`, TOKENS.producer, { concurrency: 3, paused: true })).status).toBe(403);
    expect((await send("POST", `/v1/lanes/${lane}/claims`, TOKENS.producer, { max: 1, leaseMs: 30_000 })).status).toBe(403);
    expect((await send("POST", `/v1/lanes/${lane}/jobs/p/cancel`, TOKENS.consumer, {})).status).toBe(403);
    const after = await send("GET", `/v1/lanes/${lane}`, TOKENS.admin);
    expect({ concurrency: after.body.concurrency, paused: after.body.paused, counts: after.body.counts }).toEqual({
      concurrency: before.body.concurrency,
      paused: before.body.paused,
      counts: before.body.counts,
    });
    expect((await send("GET", `/v1/lanes/${lane}/jobs/p`, TOKENS.consumer)).body.state).toBe("queued");
  });
});

describe("lane patterns", () => {
  it("reach the lanes they name and the ones their prefix starts, and no other", async () => {
    const suffix = crypto.randomUUID().slice(0, 8);
    for (const [lane, status] of [[`orders-${suffix}`, 201], ["billing", 201], [`billing-${suffix}`, 403], [`other-${suffix}`, 403]] as const) {
      const answer = await send("POST", `/v1/lanes/${lane}/jobs`, SCOPED_PRODUCER, { id: `j-${suffix}`, kind: "email.send" });
      expect(answer.status, lane).toBe(status);
      expect((await send("GET", `/v1/lanes/${lane}/jobs/j-${suffix}`, TOKENS.admin)).status, lane).toBe(status === 201 ? 200 : 404);
    }
  });

  it("a scoped producer's enqueue may not wait for a job of a lane it does not reach (nothing registered, nothing enqueued)", async () => {
    const suffix = crypto.randomUUID().slice(0, 8);
    const mine = `orders-${suffix}`;
    const theirs = `other-${suffix}`;
    expect((await send("POST", `/v1/lanes/${theirs}/jobs`, TOKENS.admin, { id: "secret", kind: "email.send" })).status).toBe(201);
    const single = await send("POST", `/v1/lanes/${mine}/jobs`, SCOPED_PRODUCER, { id: "p1", kind: "email.send", dependsOn: [{ lane: theirs, id: "secret" }] });
    expect(single.status).toBe(403);
    expect(single.body.error.code).toBe("forbidden");
    expect(single.body.error.details[0].path).toEqual(["dependsOn", 0]);
    const batch = await send("POST", `/v1/lanes/${mine}/jobs/batch`, SCOPED_PRODUCER, {
      jobs: [{ id: "b1", kind: "email.send" }, { id: "b2", kind: "email.send", dependsOn: [{ id: "b1" }, { lane: theirs, id: "secret" }] }],
    });
    expect(batch.status).toBe(403);
    expect(batch.body.error.details[0].path).toEqual(["jobs", 1, "dependsOn", 1]);
    for (const id of ["p1", "b1", "b2"]) expect((await send("GET", `/v1/lanes/${mine}/jobs/${id}`, TOKENS.admin)).status, id).toBe(404);
    expect((await send("GET", `/v1/lanes/${theirs}/jobs/secret/dependents`, TOKENS.admin)).body.dependents).toEqual([]);
    // Its own lanes, and the lane of the request itself, it may name.
    const own = await send("POST", `/v1/lanes/${mine}/jobs`, SCOPED_PRODUCER, { id: "p2", kind: "email.send", dependsOn: [{ lane: "billing", id: "nope" }] });
    expect(own.body.error?.code).toBe("dependency_not_found");
  });

  it("GET /v1/lanes lists only the lanes a scoped viewer reaches", async () => {
    const mine = fresh("team-a");
    const theirs = fresh("team-b");
    for (const lane of [mine, theirs]) expect((await send("POST", `/v1/lanes/${lane}/jobs`, TOKENS.admin, { kind: "email.send" })).status).toBe(201);
    const all = async (token: string) => {
      const names: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Answer = await send("GET", `/v1/lanes?limit=100${cursor ? `&cursor=${cursor}` : ""}`, token);
        expect(page.status).toBe(200);
        names.push(...page.body.lanes.map((l: { lane: string }) => l.lane));
        cursor = page.body.cursor;
      } while (cursor);
      return names;
    };
    const seen = await all(SCOPED_VIEWER);
    expect(seen).toContain(mine);
    expect(seen).not.toContain(theirs);
    expect(seen.every((lane) => lane.startsWith("team-a-"))).toBe(true);
    expect(await all(TOKENS.viewer)).toEqual(expect.arrayContaining([mine, theirs]));
  });
});

describe("tickets carry their issuer's lanes", () => {
  it("a scoped viewer's ticket for every lane opens its lanes' sockets only; a ticket for another lane is refused", async () => {
    const minted = await send("POST", "/v1/tickets", SCOPED_VIEWER, {});
    expect(minted.status).toBe(200);
    const ticket = encodeURIComponent(minted.body.ticket);
    // The ticket is checked first: 426 (no upgrade) means it opened the lane, 401 that it did not.
    expect((await send("GET", `/v1/lanes/team-a-1/events?ticket=${ticket}`, null)).status).toBe(426);
    const other = await send("GET", `/v1/lanes/team-b-1/events?ticket=${ticket}`, null);
    expect(other.status).toBe(401);
    expect(other.body.error.code).toBe("unauthorized");
    expect((await send("POST", "/v1/tickets", SCOPED_VIEWER, { lane: "team-b-1" })).status).toBe(403);
    expect((await send("POST", "/v1/tickets", SCOPED_VIEWER, { lane: "team-a-2" })).status).toBe(200);
    // An unscoped viewer's ticket opens every lane; a producer mints none.
    const open = encodeURIComponent((await send("POST", "/v1/tickets", TOKENS.viewer, {})).body.ticket);
    expect((await send("GET", `/v1/lanes/team-b-1/events?ticket=${open}`, null)).status).toBe(426);
    expect((await send("POST", "/v1/tickets", TOKENS.producer, {})).status).toBe(403);
  });

  it("a ticket stops opening sockets when its issuer's key is removed", async () => {
    const ticket = encodeURIComponent((await send("POST", "/v1/tickets", TOKENS.viewer, {})).body.ticket);
    const without = JSON.stringify([{ token: TOKENS.producer, role: "producer" }]);
    expect((await send("GET", `/v1/lanes/any/events?ticket=${ticket}`, null, undefined, without)).status).toBe(401);
  });
});

describe("configuration", () => {
  it("scoped tokens work without any API_TOKEN", async () => {
    const lane = fresh();
    expect((await send("POST", `/v1/lanes/${lane}/jobs`, TOKENS.producer, { kind: "email.send" }, API_KEYS, null)).status).toBe(201);
    expect((await send("PATCH", `/v1/lanes/${lane}`, TOKEN, {}, API_KEYS, null)).status).toBe(401);
  });

  it("API_KEYS that cannot be read refuse every /v1 route with 503 and say why in one log line", async () => {
    const { routes } = await v1Routes();
    const bad = [
      "not json",
      JSON.stringify({ token: "t", role: "viewer" }),
      JSON.stringify([{ token: "t", role: "root" }]),
      JSON.stringify([{ token: "", role: "viewer" }]),
      JSON.stringify([{ token: "t", role: "viewer", lanes: ["bad lane*"] }]),
      JSON.stringify([{ token: "t", role: "viewer", lanes: [] }]),
      JSON.stringify([{ token: "t", role: "viewer", extra: 1 }]),
      JSON.stringify([{ token: TOKEN, role: "viewer", lanes: ["x"] }]),
      JSON.stringify([{ token: "t", role: "viewer" }, { token: "t", role: "admin" }]),
    ];
    for (const keys of bad) {
      const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
      for (const route of routes) {
        const answer = await send(route.method, fill(route.template, { lane: "l", id: "j" }), TOKEN, {}, keys);
        expect(answer.status, `${keys} ${route.method} ${route.template}`).toBe(503);
        expect(answer.body.error.code).toBe("auth_not_configured");
      }
      expect((await send("GET", "/v1/lanes/l/events?ticket=x", null, undefined, keys)).status, keys).toBe(503);
      const lines = errors.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('"auth.not_configured"'));
      expect(lines.length, keys).toBe(1);
      expect(JSON.parse(lines[0]!).message, keys).toMatch(/API_KEYS/);
      expect(lines[0]).not.toContain(TOKEN);
      errors.mockRestore();
    }
  });

  it("no token at all: 503 on every route", async () => {
    const answer = await send("GET", "/v1/lanes", TOKEN, undefined, null, null);
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe("auth_not_configured");
  });
});
