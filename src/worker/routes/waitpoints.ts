/**
 * A lane's waitpoints (docs/api.md "Waitpoints"): create (idempotent by id), read, complete. Every
 * route answers for the whole lane: a sharded lane's waitpoint lives in the shard its id hashes to
 * (routing/waitpoint-routing.ts). A create's answer carries the waitpoint's signed `callbackUrl`
 * while `SIGNING_SECRET` is set (signing.ts); the callback's own route completes it as `complete` does
 * (`completeWaitpointAnswer`).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { unwrap } from "../../shared/errors.js";
import type { Json } from "../../shared/job.js";
import { Name } from "../../shared/schemas.js";
import { WAITPOINT_STATES, WaitpointCompleteRequest, WaitpointCreateRequest, WaitpointId, type Waitpoint, type WaitpointCompleted, type WaitpointCreated } from "../../shared/waitpoint.js";
import { createWaitpoint, onWaitpoint } from "../../routing/waitpoint-routing.js";
import { bearerAuth, createRouter, errorResponses, jsonRequest, jsonResponse, LaneParams, type AppEnv } from "../openapi.js";
import { routerOf } from "../lane-call.js";
import { callbackUrlFor } from "../signing.js";

const tags = ["waitpoints"];

const epochMs = z.number().int().openapi({ description: "epoch milliseconds" });

export const WaitpointView = z
  .object({
    id: z.string(),
    lane: z.string(),
    state: z.enum(WAITPOINT_STATES),
    result: z.unknown().openapi({ description: "the completion's result (null when none); null while pending or once timed out" }) as z.ZodType<Json>,
    timeoutAt: epochMs.nullable().openapi({ description: "when a pending waitpoint becomes timedOut; null: never (kept as it was once settled)" }),
    createdAt: epochMs,
    settledAt: epochMs.nullable(),
    waiters: z.number().int().openapi({ description: "how many jobs wait on it now, in every lane" }),
  })
  .openapi("Waitpoint");

const WaitpointResponse = z.object({ waitpoint: WaitpointView }).openapi("WaitpointResponse");

const WaitpointCreateResponse = z
  .object({
    waitpoint: WaitpointView,
    callbackUrl: z.string().optional().openapi({ description: "while SIGNING_SECRET is set: the signed path that completes this waitpoint without a token" }),
  })
  .openapi("WaitpointCreateResponse");

const WaitpointParams = z.object({ lane: Name, id: WaitpointId });

const create = createRoute({
  method: "post",
  path: "/lanes/{lane}/waitpoints",
  tags,
  summary: "Create a waitpoint, pending (idempotent by id: an existing one answers as it is)",
  security: bearerAuth,
  request: { params: LaneParams, body: jsonRequest(WaitpointCreateRequest, false) },
  responses: {
    201: jsonResponse(WaitpointCreateResponse, "created, pending"),
    200: jsonResponse(WaitpointCreateResponse, "the id exists: the waitpoint as it is, whatever its state (this timeoutMs ignored)"),
    ...errorResponses(413, 415),
  },
});

const get = createRoute({
  method: "get",
  path: "/lanes/{lane}/waitpoints/{id}",
  tags,
  summary: "Read a waitpoint",
  security: bearerAuth,
  request: { params: WaitpointParams },
  responses: { 200: jsonResponse(WaitpointResponse, "the waitpoint"), ...errorResponses(404) },
});

const complete = createRoute({
  method: "post",
  path: "/lanes/{lane}/waitpoints/{id}/complete",
  tags,
  summary: "Complete a waitpoint with a result: the first settlement wins (an unknown id is created completed)",
  security: bearerAuth,
  request: { params: WaitpointParams, body: jsonRequest(WaitpointCompleteRequest, false) },
  responses: {
    200: jsonResponse(WaitpointResponse, "completed"),
    201: jsonResponse(WaitpointResponse, "no such waitpoint yet: created already completed"),
    ...errorResponses(409, 413, 415),
  },
});

/** A create's answer: the waitpoint, and its callback URL while `SIGNING_SECRET` is set. */
export async function createAnswer(c: Context<AppEnv>, lane: string, waitpoint: Waitpoint): Promise<{ waitpoint: Waitpoint; callbackUrl?: string }> {
  const callbackUrl = await callbackUrlFor(c.env.SIGNING_SECRET, lane, waitpoint.id);
  return callbackUrl === null ? { waitpoint } : { waitpoint, callbackUrl };
}

/** Completes waitpoint `id` of `lane` (the route's and a callback's): the answer, or its refusal thrown as a `QueueError`. */
export async function completeWaitpointAnswer(c: Context<AppEnv>, lane: string, id: string, request: { result?: unknown }): Promise<WaitpointCompleted> {
  return unwrap(await onWaitpoint(routerOf(c), lane, id, (stub) => stub.completeWaitpoint(id, request)));
}

export function waitpointRoutes() {
  return createRouter()
    .openapi(create, async (c) => {
      const { lane } = c.req.valid("param");
      const { waitpoint, created }: WaitpointCreated = unwrap(await createWaitpoint(routerOf(c), lane, c.req.valid("json") ?? {}));
      const answer = await createAnswer(c, lane, waitpoint);
      return created ? c.json(answer, 201) : c.json(answer, 200);
    })
    .openapi(get, async (c) => {
      const { lane, id } = c.req.valid("param");
      const waitpoint = unwrap(await onWaitpoint(routerOf(c), lane, id, (stub) => stub.getWaitpoint(id)));
      return c.json({ waitpoint }, 200);
    })
    .openapi(complete, async (c) => {
      const { lane, id } = c.req.valid("param");
      const { waitpoint, created } = await completeWaitpointAnswer(c, lane, id, c.req.valid("json") ?? {});
      return created ? c.json({ waitpoint }, 201) : c.json({ waitpoint }, 200);
    });
}
