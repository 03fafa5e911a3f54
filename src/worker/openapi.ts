/**
 * What every route module shares to describe itself in the OpenAPI document: the router factory
 * (with the validation hook), path parameters, body and response helpers, the bearer scheme.
 */
import { OpenAPIHono, z } from "@hono/zod-openapi";
import { rolesFor, type Principal } from "./access.js";
import type { WorkerEnv } from "./env.js";
import { ErrorResponse } from "./responses.js";
import { JobId, Name } from "../shared/schemas.js";
import { validationHook } from "./errors.js";
import { kindsJsonSchema, type KindJsonSchemas, type KindSchemas } from "../shared/kinds.js";

/** The bindings the library reads (src/durable/env.ts), and who is calling (set by access.ts). */
export type AppEnv = { Bindings: WorkerEnv; Variables: { principal: Principal } };

/** A router whose validation failures are `invalid_request` with one detail per problem. */
export function createRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

export const BEARER_SCHEME = "bearer";

/** The security requirement of every `/v1` route. */
export const bearerAuth = [{ [BEARER_SCHEME]: [] }];

export const LaneParams = z.object({ lane: Name });
/** A job's path: its id may be a schedule's `<name>@<T>` (docs/api.md, Conventions). */
export const JobParams = z.object({ lane: Name, id: JobId });

/** A JSON request body; `required: false` lets the request carry no body at all. */
export function jsonRequest<T extends z.ZodType>(schema: T, required = true) {
  return { required, content: { "application/json": { schema } } };
}

/** A JSON response. */
export function jsonResponse<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

const ERROR_DESCRIPTIONS = {
  400: "invalid_request: malformed JSON, wrong types, names that break the pattern, out-of-range numbers; invalid_payload: a payload (or a complete's result) that its kind's declared schema refuses (see x-kinds)",
  401: "unauthorized: missing or wrong bearer token",
  403: "forbidden: the token's role or lanes do not reach this route on this lane (docs/api.md, Access)",
  404: "job_not_found on a job's route, schedule_not_found on a schedule's, waitpoint_not_found on a waitpoint's, bulk_not_found on a bulk action's",
  409: "a refusal of the job's state or lease, waitpoint_settled on a waitpoint's completion, stream_limit on a stream write, bulk_running on a bulk action's start (see the code)",
  413: "payload_too_large: payload, result (of a job or a waitpoint), checkpoint, progress, stream chunk or body over its limit",
  415: "unsupported_media_type: a body that is not application/json",
  503: "auth_not_configured: the API has no token and refuses every request; signing_not_configured: a link asked for without SIGNING_SECRET",
} as const;

type ErrorStatus = keyof typeof ERROR_DESCRIPTIONS;

/** Error responses of a `/v1` route: always 400, 401, 403 and 503, plus `extra`. */
export function errorResponses<const S extends readonly ErrorStatus[]>(...extra: S) {
  const responses: Partial<Record<ErrorStatus, ReturnType<typeof jsonResponse<typeof ErrorResponse>>>> = {};
  for (const status of [400, 401, 403, 503, ...extra] as const) responses[status] = jsonResponse(ErrorResponse, ERROR_DESCRIPTIONS[status]);
  return responses as Record<400 | 401 | 403 | 503 | S[number], ReturnType<typeof jsonResponse<typeof ErrorResponse>>>;
}

/**
 * Serves the OpenAPI 3.1 document of `app` at `path`, with the bearer scheme declared, each route's
 * roles (`x-roles`, access.ts) and the lane's declared kinds' schemas (`x-kinds`, shared/kinds.ts).
 */
export function serveDocument(app: OpenAPIHono<AppEnv>, path: string, kinds?: KindSchemas): void {
  app.openAPIRegistry.registerComponent("securitySchemes", BEARER_SCHEME, { type: "http", scheme: "bearer" });
  const config = {
    openapi: "3.1.0",
    info: {
      title: "Switchyard",
      version: "1",
      description: "A durable job queue on Cloudflare Workers: one Durable Object with its own SQLite per lane.",
    },
  } as const;
  let document: (ReturnType<typeof app.getOpenAPI31Document> & { "x-kinds": Record<string, KindJsonSchemas> }) | null = null;
  app.get(path, (c) => {
    document ??= { ...withRoles(app.getOpenAPI31Document(config)), "x-kinds": kindsJsonSchema(kinds) };
    return c.json(document);
  });
}

/** The document with every `/v1` operation marked with the roles that may call it. */
function withRoles<D extends { paths?: Record<string, unknown> }>(document: D): D {
  for (const [template, operations] of Object.entries(document.paths ?? {})) {
    if (!template.startsWith("/v1/")) continue;
    for (const [method, operation] of Object.entries(operations as Record<string, Record<string, unknown>>)) {
      operation["x-roles"] = [...rolesFor(method, template)];
    }
  }
  return document;
}
