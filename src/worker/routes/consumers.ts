/**
 * Pull consumers: claim due jobs with a lease, then renew, complete, fail or release through the fence.
 * A lease token appears in the claim and renew answers only.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { unwrap } from "../../shared/errors.js";
import { serializeJson } from "../../shared/json.js";
import { heldLimit } from "./payloads.js";
import { ClaimResponse, JobResponse, RenewResponse } from "../responses.js";
import { ClaimRequest, CompleteRequest, FailRequest, ReleaseRequest, RenewRequest, SnoozeRequest } from "../../shared/schemas.js";
import { bearerAuth, createRouter, errorResponses, JobParams, jsonRequest, jsonResponse, LaneParams } from "../openapi.js";
import { laneName, route, routerOf } from "../lane-call.js";

const tags = ["pull consumers"];

const claim = createRoute({
  method: "post",
  path: "/lanes/{lane}/claims",
  tags,
  summary: "Claim up to `max` due jobs with a lease (possibly none); with `waitMs`, held until one is claimable",
  security: bearerAuth,
  request: { params: LaneParams, body: jsonRequest(ClaimRequest, false) },
  responses: { 200: jsonResponse(ClaimResponse, "the claimed jobs, each with its lease token"), ...errorResponses(415) },
});

/** A fenced write on behalf of a lease holder: `POST /lanes/{lane}/jobs/{id}/<op>`. */
function fencedRoute<Op extends string, B extends z.ZodType, R extends z.ZodType>(op: Op, summary: string, body: B, answer: R, description: string) {
  return createRoute({
    method: "post",
    path: `/lanes/{lane}/jobs/{id}/${op}` as `/lanes/{lane}/jobs/{id}/${Op}`,
    tags,
    summary,
    security: bearerAuth,
    request: { params: JobParams, body: jsonRequest(body) },
    responses: { 200: jsonResponse(answer, description), ...errorResponses(404, 409, 413, 415) },
  });
}

const renew = fencedRoute(
  "renew",
  "Extend a lease; answers a NEW token, and the old one is then lease_superseded",
  RenewRequest,
  RenewResponse,
  "the new lease",
);
const complete = fencedRoute(
  "complete",
  "Record the attempt's success (repeating it with the same token answers 200 again)",
  CompleteRequest,
  JobResponse,
  "the completed job",
);
const fail = fencedRoute(
  "fail",
  "Record a failed attempt: queued again with backoff while attempts remain, else settled failed",
  FailRequest,
  JobResponse,
  "the job, queued again or failed",
);
const release = fencedRoute(
  "release",
  "Give the job back: queued at once, and the attempt it spent returned",
  ReleaseRequest,
  JobResponse,
  "the job, queued again",
);
const snooze = fencedRoute(
  "snooze",
  "End the attempt and queue the job again after delayMs, the attempt given back and checkpoints kept; the token is then lease_superseded",
  SnoozeRequest,
  JobResponse,
  "the job, queued for later",
);

export function consumerRoutes() {
  return createRouter()
    .openapi(claim, async (c) => {
      const request = c.req.valid("json");
      if (!request.waitMs) return c.json(await route(c, (router, lane) => router.claim(lane, request, null)), 200);
      // A held claim has a name, so that the lane can drop it (or release what it was just given)
      // when the client goes away: the request's signal fires then (compatibility flag
      // `enable_request_signal`); the lane cannot see an RPC caller leave.
      const hold = crypto.randomUUID();
      const signal = c.req.raw.signal;
      const abandon = () => c.executionCtx.waitUntil(routerOf(c).abandonClaim(laneName(c), hold));
      signal.addEventListener("abort", abandon, { once: true });
      try {
        return c.json(await route(c, (router, lane) => router.claim(lane, request, hold, signal)), 200);
      } finally {
        signal.removeEventListener("abort", abandon);
      }
    })
    .openapi(renew, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.renew(id, request))), 200);
    })
    .openapi(complete, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      unwrap(serializeJson(request.result, "result", heldLimit(c.env))); // 413 before the lane is touched
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.complete(id, request))), 200);
    })
    .openapi(fail, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.fail(id, request))), 200);
    })
    .openapi(release, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.release(id, request))), 200);
    })
    .openapi(snooze, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.snooze(id, request))), 200);
    });
}
