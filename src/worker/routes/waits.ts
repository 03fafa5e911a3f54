/**
 * An attempt's wait on a waitpoint (docs/api.md "Waitpoints"): `POST …/jobs/{id}/wait`, fenced like
 * complete. The lease ends, the attempt is given back, and the job is blocked on the waitpoint of its
 * lane (created pending when missing), or queued at once when it has settled.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { WaitRequest } from "../../shared/schemas.js";
import { Job } from "../responses.js";
import { bearerAuth, createRouter, errorResponses, JobParams, jsonRequest, jsonResponse } from "../openapi.js";
import { route } from "../lane-call.js";
import { WaitpointView } from "./waitpoints.js";

const WaitResponse = z.object({ job: Job, waitpoint: WaitpointView }).openapi("WaitResponse");

const wait = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs/{id}/wait",
  tags: ["pull consumers"],
  summary: "End the attempt in a wait on a waitpoint of the lane (created pending when missing): the job is blocked on it, its attempt given back and checkpoints kept; the token is then lease_superseded",
  security: bearerAuth,
  request: { params: JobParams, body: jsonRequest(WaitRequest) },
  responses: { 200: jsonResponse(WaitResponse, "the job, blocked on the waitpoint (or queued, when it has settled), and the waitpoint"), ...errorResponses(404, 409, 415) },
});

export function waitRoutes() {
  return createRouter().openapi(wait, async (c) => {
    const { id } = c.req.valid("param");
    const request = c.req.valid("json");
    return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.waitOn(id, request))), 200);
  });
}
