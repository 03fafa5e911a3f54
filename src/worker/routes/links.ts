/**
 * Links for a browser (docs/api.md "Results"): `POST …/jobs/{id}/link` (bearer auth) signs an
 * expiring URL of one job; `GET {url}` and `GET {url}/stream` then read that job without a token
 * (a browser's fetch or EventSource cannot carry one) from any origin. A link reads one job and never
 * writes: nothing else is under it, and anything that does not verify is a 404 that says nothing
 * about the job. The reads are the job routes' own handlers (`readJob`, `jobStream`).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { QueueError, fail } from "../../shared/errors.js";
import { accessConfig } from "../access.js";
import { toIssues } from "../../shared/schemas.js";
import { readJob, WaitQuery } from "../job-waits.js";
import { route } from "../lane-call.js";
import { bearerAuth, createRouter, errorResponses, JobParams, jsonRequest, jsonResponse, type AppEnv } from "../openapi.js";
import { linkFor, signingConfigured, verifyLink } from "../signing.js";
import { jobStream } from "./stream.js";

/** The link routes, in Hono's path syntax under `/v1`, for the bearer middleware and the body check to skip. */
export const LINKS_PATH = "/v1/links/*";

const MIN_LINK_TTL_MS = 1_000;
const MAX_LINK_TTL_MS = 86_400_000;
const DEFAULT_LINK_TTL_MS = 3_600_000;

const LinkRequest = z
  .strictObject({
    ttlMs: z
      .number()
      .int()
      .min(MIN_LINK_TTL_MS)
      .max(MAX_LINK_TTL_MS)
      .optional()
      .openapi({ description: `how long the link reads the job, from now (default ${DEFAULT_LINK_TTL_MS})` }),
  })
  .openapi("LinkRequest");

const LinkResponse = z
  .object({
    url: z.string().openapi({ description: "/v1/links/{lane}/{id}/{expiresAt}/{signature}: GET it (or {url}/stream) without a token" }),
    expiresAt: z.number().int().openapi({ description: "epoch ms after which the link answers 404" }),
  })
  .openapi("LinkResponse");

const createLink = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs/{id}/link",
  tags: ["results"],
  summary: "Sign an expiring, read-only URL of the job and its stream, for a browser",
  security: bearerAuth,
  request: { params: JobParams, body: jsonRequest(LinkRequest, false) },
  responses: {
    200: jsonResponse(LinkResponse, "the link"),
    ...errorResponses(404, 415),
  },
});

/** One answer for every link that does not verify (expired included), whatever it names. */
const notFound = () => new QueueError("not_found", "no such link, or it has expired");

/**
 * Before anything under `/v1/links/`: like every `/v1` route it answers nothing while the API has no
 * token (fail closed), and a browser may read its answer, refusals included, from any origin.
 */
const linkAccess: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = accessConfig(c.env);
  if (!config.ok) throw new QueueError("auth_not_configured", config.reason);
  await next();
  // An answer's headers may be immutable (a stream's): it is rebuilt around its body.
  const answer = new Response(c.res.body, c.res);
  answer.headers.set("access-control-allow-origin", "*");
  c.res = undefined;
  c.res = answer;
};

/** The job a link names, when it verifies now; a 404 `not_found` otherwise. */
async function linkedJob(c: Context<AppEnv>): Promise<{ lane: string; id: string }> {
  const { lane, id, expiresAt, signature } = c.req.param() as Record<"lane" | "id" | "expiresAt" | "signature", string>;
  if (!(await verifyLink(c.env.SIGNING_SECRET, lane, id, expiresAt, signature, Date.now()))) throw notFound();
  return { lane, id };
}

export function linkRoutes() {
  return createRouter()
    .openapi(createLink, async (c) => {
      const { lane, id } = c.req.valid("param");
      const ttlMs = c.req.valid("json")?.ttlMs ?? DEFAULT_LINK_TTL_MS;
      const secret = c.env.SIGNING_SECRET;
      if (!signingConfigured(secret)) throw new QueueError("signing_not_configured", "no SIGNING_SECRET is set: this API signs no links");
      // The lane says whether it holds the job (on a sharded lane, the shard its id is on).
      await route(c, (router) =>
        router.byId(lane, id, async (stub) => {
          const held = await stub.hasJob(id);
          if (!held.ok || held.value) return held;
          return fail("job_not_found", `no job ${id} in lane ${lane}`);
        }),
      );
      return c.json((await linkFor(secret, lane, id, ttlMs, Date.now()))!, 200);
    });
}

/** The routes under a link, outside the OpenAPI document: they take a signature, not the bearer scheme. */
export function linkReadRoutes() {
  return createRouter()
    .use("/links/*", linkAccess)
    .options("/links/*", () => {
      // A browser's EventSource sends Last-Event-ID on reconnect, which is not a CORS-safelisted header.
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-methods": "GET, HEAD",
          "access-control-allow-headers": "Last-Event-ID, Cache-Control, Accept",
          "access-control-max-age": "86400",
        },
      });
    })
    .get("/links/:lane/:id/:expiresAt/:signature", async (c) => {
      const { lane, id } = await linkedJob(c);
      const query = WaitQuery.safeParse(c.req.query());
      if (!query.success) {
        const details = toIssues(query.error);
        throw new QueueError("invalid_request", `invalid query: ${details.map((d) => `${d.path.join(".")}: ${d.message}`).join("; ")}`, details);
      }
      return c.json(await readJob(c, lane, id, query.data.waitMs), 200);
    })
    .get("/links/:lane/:id/:expiresAt/:signature/stream", async (c) => {
      const { lane, id } = await linkedJob(c);
      return jobStream(c, lane, id);
    })
    .all("/links/*", () => {
      throw notFound();
    });
}
