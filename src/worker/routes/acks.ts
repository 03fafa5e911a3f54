/**
 * Batch acks: up to 100 complete, fail, release and progress items in one request, each fenced on
 * its own and answered as its single route would (src/durable/acks.ts).
 */
import { createRoute } from "@hono/zod-openapi";
import { AcksRequest } from "../../shared/schemas.js";
import { bearerAuth, createRouter, errorResponses, jsonRequest, jsonResponse, LaneParams } from "../openapi.js";
import { route } from "../lane-call.js";
import { AcksResponse } from "../responses.js";

const acks = createRoute({
  method: "post",
  path: "/lanes/{lane}/acks",
  tags: ["pull consumers"],
  summary: "Complete, fail, release or report progress of up to 100 leased jobs; each item answered on its own",
  security: bearerAuth,
  request: { params: LaneParams, body: jsonRequest(AcksRequest) },
  responses: { 200: jsonResponse(AcksResponse, "one answer per item, in request order"), ...errorResponses(413, 415) },
});

export function ackRoutes() {
  return createRouter().openapi(acks, async (c) => {
    const request = c.req.valid("json");
    return c.json(await route(c, (router, lane) => router.acks(lane, request)), 200);
  });
}
