/**
 * A job's payload and result as JSON, streamed (docs/api.md "Read and list", "Big payloads"): the
 * value's JSON exactly as stored, for every job, held in R2 or not. The lane says where it is (its
 * row's text, or the key of its object in `PAYLOADS`); the front worker streams the object itself,
 * so that 16 MiB never crosses the lane's RPC.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { QueueError } from "../../shared/errors.js";
import { MAX_HELD_PAYLOAD_BYTES } from "../../shared/payload-ref.js";
import { bearerAuth, createRouter, errorResponses, JobParams, type AppEnv } from "../openapi.js";
import type { Context } from "hono";
import { route } from "../lane-call.js";

/** The most a payload or result may hold when the worker binds `PAYLOADS` (else undefined: 128 KiB). */
export function heldLimit(env: { PAYLOADS?: unknown }): number | undefined {
  return env.PAYLOADS === undefined ? undefined : MAX_HELD_PAYLOAD_BYTES;
}

const json = (description: string) => ({ description, content: { "application/json": { schema: z.any().openapi({ description: "the value's JSON as stored (no whitespace)" }) } } });

const payloadRoute = createRoute({
  method: "get",
  path: "/lanes/{lane}/jobs/{id}/payload",
  tags: ["jobs"],
  summary: "The job's payload, streamed (held in R2 or not)",
  security: bearerAuth,
  request: { params: JobParams },
  responses: { 200: json("the job's payload"), ...errorResponses(404) },
});

const resultRoute = createRoute({
  method: "get",
  path: "/lanes/{lane}/jobs/{id}/result",
  tags: ["jobs"],
  summary: "The job's result, streamed (null until there is one; held in R2 or not)",
  security: bearerAuth,
  request: { params: JobParams },
  responses: { 200: json("the job's result"), ...errorResponses(404) },
});

const headers = { "content-type": "application/json" };

/** The value's JSON: the row's text as it is (never parsed and written again), or its object streamed from the bucket. */
async function streamed(c: Context<AppEnv>, lane: string, id: string, which: "payload" | "result"): Promise<Response> {
  const source = await route(c, (router, lane) => router.byId(lane, id, (stub) => stub.jobValue(id, which)));
  if ("json" in source) return new Response(source.json, { status: 200, headers });
  const object = await (c.env as { PAYLOADS?: R2Bucket }).PAYLOADS?.get(source.key);
  // Deleted after its job only: a job read a moment ago and swept since.
  if (!object) throw new QueueError("job_not_found", `no job ${id} in lane ${lane}`);
  return new Response(object.body, { status: 200, headers });
}

export function payloadRoutes() {
  return createRouter()
    .openapi(payloadRoute, async (c) => {
      const { lane, id } = c.req.valid("param");
      return (await streamed(c, lane, id, "payload")) as never;
    })
    .openapi(resultRoute, async (c) => {
      const { lane, id } = c.req.valid("param");
      return (await streamed(c, lane, id, "result")) as never;
    });
}
