/**
 * Who may call what (docs/api.md "Access"). `API_TOKEN` tokens are admins of every lane; `API_KEYS`
 * (a secret holding a JSON array of `{"token", "role", "lanes"?}`) adds scoped tokens. One table,
 * `ACCESS_RULES`, names the roles besides admin that each `/v1` route allows; a route it does not
 * name is admin only, so a new route fails closed until it is given a rule. A configuration that
 * does not parse refuses every request (503 `auth_not_configured`, with a log line saying why):
 * never open.
 */
import { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { NAME_PATTERN } from "../shared/defaults.js";
import { reachesLane } from "../shared/lane-patterns.js";
import { QueueError } from "../shared/errors.js";
import { log } from "../shared/log.js";
import { bearerToken, configuredTokens, matchingToken } from "./auth.js";
import type { WorkerEnv } from "./env.js";

export const ROLES = ["admin", "producer", "consumer", "viewer"] as const;
export type Role = (typeof ROLES)[number];

/** What a token may reach: its role, and its lane patterns (null: every lane). */
export interface Principal {
  role: Role;
  lanes: readonly string[] | null;
  /** The token itself: tickets are signed under it, so removing it revokes them. */
  token: string;
}

/** A lane name, or a prefix of one ending in `*` (`orders-*`; `*` alone: every lane). */
const LanePattern = z.string().refine((p) => (p.endsWith("*") ? p === "*" || NAME_PATTERN.test(p.slice(0, -1)) : NAME_PATTERN.test(p)), {
  message: "a lane name, or a prefix of one ending in *",
});

const ApiKeys = z.array(
  z.strictObject({
    token: z.string().trim().min(1),
    role: z.enum(ROLES),
    lanes: z.array(LanePattern).min(1).optional(),
  }),
);

/** The tokens this worker accepts, or why it accepts none. */
export type AccessConfig = { ok: true; principals: Principal[] } | { ok: false; reason: string };

let cached: { apiToken: string | undefined; apiKeys: string | undefined; config: AccessConfig } | null = null;

/** The configured principals: every `API_TOKEN` token as an admin of every lane, then `API_KEYS`. */
export function accessConfig(env: { API_TOKEN?: string | undefined; API_KEYS?: string | undefined }): AccessConfig {
  if (cached && cached.apiToken === env.API_TOKEN && cached.apiKeys === env.API_KEYS) return cached.config;
  const config = parseAccess(env.API_TOKEN, env.API_KEYS);
  // Said once per configuration, not per request; never with a token in it.
  if (!config.ok) log({ event: "auth.not_configured", message: config.reason });
  cached = { apiToken: env.API_TOKEN, apiKeys: env.API_KEYS, config };
  return config;
}

function parseAccess(apiToken: string | undefined, apiKeys: string | undefined): AccessConfig {
  const principals: Principal[] = configuredTokens(apiToken).map((token) => ({ role: "admin", lanes: null, token }));
  if (apiKeys !== undefined && apiKeys.trim() !== "") {
    let raw: unknown;
    try {
      raw = JSON.parse(apiKeys);
    } catch {
      return { ok: false, reason: "API_KEYS is not JSON: it must be an array of {token, role, lanes?}" };
    }
    const keys = ApiKeys.safeParse(raw);
    if (!keys.success) {
      const issue = keys.error.issues[0]!;
      return { ok: false, reason: `API_KEYS at ${["API_KEYS", ...issue.path].join(".")}: ${issue.message} (roles: ${ROLES.join(", ")})` };
    }
    for (const key of keys.data) principals.push({ role: key.role, lanes: key.lanes?.includes("*") ? null : (key.lanes ?? null), token: key.token });
  }
  if (principals.length === 0) return { ok: false, reason: "the API has no token configured (API_TOKEN or API_KEYS); it refuses every request" };
  // A key whose token is listed before it (in API_TOKEN, or earlier in API_KEYS) would have the rights
  // of whichever came first: refuse to guess. Checked once per configuration, not per request.
  const admins = configuredTokens(apiToken).length;
  const seen = new Set(principals.slice(0, admins).map((p) => p.token));
  for (const [i, key] of principals.slice(admins).entries()) {
    if (seen.has(key.token)) return { ok: false, reason: `API_KEYS.${i}.token repeats a token listed before it (in API_TOKEN or API_KEYS): each token has one role` };
    seen.add(key.token);
  }
  return { ok: true, principals };
}

export { reachesLane };

// ---- the table ----

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
type NonAdmin = Exclude<Role, "admin">;

const READERS: NonAdmin[] = ["viewer", "producer", "consumer"];

/**
 * The roles besides admin that each `/v1` route allows, by method and OpenAPI path: every route of
 * the API has its rule here (test/security/access.test.ts walks the OpenAPI document against it),
 * and a path without one is admin only. Lane-wide operations (PATCH, sweep, fail, purge, queue
 * settings, schedules' writes, requeue) allow no one else.
 */
export const ACCESS_RULES: readonly { method: Method; path: string; roles: readonly NonAdmin[] }[] = [
  { method: "GET", path: "/v1/access", roles: ["viewer", "producer", "consumer"] },
  { method: "GET", path: "/v1/lanes", roles: ["viewer"] },
  { method: "GET", path: "/v1/lanes/{lane}", roles: ["viewer"] },
  { method: "GET", path: "/v1/lanes/{lane}/history", roles: ["viewer"] },
  { method: "GET", path: "/v1/lanes/{lane}/bulk/{id}", roles: ["viewer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs", roles: ["producer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/batch", roles: ["producer"] },
  { method: "GET", path: "/v1/lanes/{lane}/jobs", roles: ["viewer", "producer"] },
  { method: "GET", path: "/v1/lanes/{lane}/jobs/{id}", roles: READERS },
  { method: "GET", path: "/v1/lanes/{lane}/jobs/{id}/payload", roles: READERS },
  { method: "GET", path: "/v1/lanes/{lane}/jobs/{id}/result", roles: READERS },
  { method: "GET", path: "/v1/lanes/{lane}/jobs/{id}/dependents", roles: ["viewer", "producer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/cancel", roles: ["producer"] },
  { method: "POST", path: "/v1/lanes/{lane}/waitpoints", roles: ["producer"] },
  { method: "GET", path: "/v1/lanes/{lane}/waitpoints/{id}", roles: READERS },
  { method: "POST", path: "/v1/lanes/{lane}/waitpoints/{id}/complete", roles: ["producer"] },
  { method: "GET", path: "/v1/lanes/{lane}/waitpoints", roles: READERS },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/link", roles: ["viewer", "producer"] },
  { method: "POST", path: "/v1/lanes/{lane}/claims", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/renew", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/complete", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/fail", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/release", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/snooze", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/wait", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/progress", roles: ["consumer"] },
  { method: "GET", path: "/v1/lanes/{lane}/jobs/{id}/stream", roles: READERS },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/stream", roles: ["consumer"] },
  { method: "POST", path: "/v1/lanes/{lane}/acks", roles: ["consumer"] },
  { method: "PUT", path: "/v1/lanes/{lane}/jobs/{id}/checkpoints/{name}", roles: ["consumer"] },
  { method: "GET", path: "/v1/lanes/{lane}/jobs/{id}/checkpoints", roles: ["viewer", "consumer"] },
  { method: "GET", path: "/v1/lanes/{lane}/queues/{queue}", roles: ["viewer"] },
  { method: "GET", path: "/v1/lanes/{lane}/schedules", roles: ["viewer"] },
  { method: "GET", path: "/v1/lanes/{lane}/schedules/{name}", roles: ["viewer"] },
  { method: "POST", path: "/v1/tickets", roles: ["viewer"] },
  { method: "GET", path: "/v1/metrics", roles: ["viewer"] },
  { method: "GET", path: "/v1/lanes/{lane}/metrics", roles: ["viewer"] },
  { method: "PATCH", path: "/v1/lanes/{lane}", roles: [] },
  { method: "POST", path: "/v1/lanes/{lane}/sweep", roles: [] },
  { method: "POST", path: "/v1/lanes/{lane}/fail", roles: [] },
  { method: "POST", path: "/v1/lanes/{lane}/bulk", roles: [] },
  { method: "POST", path: "/v1/lanes/{lane}/jobs/{id}/requeue", roles: [] },
  { method: "PUT", path: "/v1/lanes/{lane}/queues/{queue}", roles: [] },
  { method: "POST", path: "/v1/lanes/{lane}/queues/{queue}/purge", roles: [] },
  { method: "PUT", path: "/v1/lanes/{lane}/schedules/{name}", roles: [] },
  { method: "DELETE", path: "/v1/lanes/{lane}/schedules/{name}", roles: [] },
];

const compiled = ACCESS_RULES.map((rule) => ({
  ...rule,
  // `{id}` may be a schedule's `<name>@<T>`; no parameter spans a slash.
  pattern: new RegExp(`^${rule.path.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+")}$`),
}));

/** The rule of `method path` (a request's path, or a route's template), if the table has one. */
export function ruleFor(method: string, path: string): (typeof ACCESS_RULES)[number] | undefined {
  const upper = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
  // The most literal rule wins (`jobs/batch` over a `jobs/{id}`, were both a route of one method).
  return compiled
    .filter((r) => r.method === upper && r.pattern.test(path))
    .sort((a, b) => a.path.split("{").length - b.path.split("{").length)[0];
}

/** The roles that may call `method path`: admin, plus what its rule names (none: admin only). */
export function rolesFor(method: string, path: string): readonly Role[] {
  return ["admin", ...(ruleFor(method, path)?.roles ?? [])];
}

/**
 * Waiting for a job (`?waitMs` on its read or on an enqueue) is producers' (docs/api.md "Access"), and
 * viewers', who read as every GET: a consumer reads a job, but does not wait on one.
 */
const WAITERS: readonly Role[] = ["admin", "producer", "viewer"];
const WAITING_PATHS: ReadonlySet<string> = new Set(["/v1/lanes/{lane}/jobs/{id}", "/v1/lanes/{lane}/jobs"]);

/** Whether a request with this query may wait, for `role`. */
function mayWait(role: Role, method: string, path: string, waitMs: string | undefined): boolean {
  if (waitMs === undefined || WAITERS.includes(role)) return true;
  const rule = ruleFor(method, path);
  return rule === undefined || !WAITING_PATHS.has(rule.path);
}

/** The lane a `/v1/lanes/{lane}/…` path names (as sent), or null. */
export function laneOfPath(path: string): string | null {
  const match = /^\/v1\/lanes\/([^/]+)/.exec(path);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return match[1]!;
  }
}

// ---- the middleware ----

/**
 * Auth of every `/v1` route but the events socket (which takes a ticket): the bearer token names a
 * principal (401 when none), whose role and lanes must reach the route (403 `forbidden` otherwise),
 * checked before the body is read, so a refusal changes nothing (an enqueue's `dependsOn` is checked
 * against the lanes once parsed, before any lane is called: routes/jobs.ts). Handlers find it as `principal`.
 */
export const requireAccess: MiddlewareHandler<{ Bindings: WorkerEnv; Variables: { principal: Principal } }> = async (c, next) => {
  const config = accessConfig(c.env);
  if (!config.ok) throw new QueueError("auth_not_configured", config.reason);
  const principal = await principalOf(c.req.header("authorization"), config.principals);
  if (principal === null) throw new QueueError("unauthorized", "missing or wrong bearer token");
  const roles = rolesFor(c.req.method, c.req.path);
  if (!roles.includes(principal.role)) {
    throw new QueueError("forbidden", `a ${principal.role} token may not call ${c.req.method} on this route (allowed: ${roles.join(", ")})`);
  }
  if (!mayWait(principal.role, c.req.method, c.req.path, c.req.query("waitMs"))) {
    throw new QueueError("forbidden", `a ${principal.role} token may not wait for a job (waitMs; allowed: ${WAITERS.join(", ")})`);
  }
  const lane = laneOfPath(c.req.path);
  if (lane !== null && !reachesLane(principal.lanes, lane)) throw new QueueError("forbidden", "this token does not reach this lane");
  c.set("principal", principal);
  await next();
};

/** The principal whose token an `Authorization` header carries, compared in constant time; null: none. */
export async function principalOf(header: string | undefined, principals: readonly Principal[]): Promise<Principal | null> {
  const candidate = bearerToken(header);
  if (candidate === null) return null;
  const index = await matchingToken(candidate, principals.map((p) => p.token));
  return index < 0 ? null : principals[index]!;
}
