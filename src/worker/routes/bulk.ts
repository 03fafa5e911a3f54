/**
 * A lane's bulk actions (docs/api.md "Bulk actions"): start one (admin only, access.ts), read its
 * progress. Every route answers for the whole lane: a sharded lane's runs on every shard under one id
 * (routing/bulk-routing.ts).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { BULK_ID_PATTERN } from "../../shared/bulk.js";
import { BulkAnswer, BulkRequest } from "../../shared/bulk-schemas.js";
import { Name } from "../../shared/schemas.js";
import { getBulk, startBulk } from "../../routing/bulk-routing.js";
import { bearerAuth, createRouter, errorResponses, jsonRequest, jsonResponse, LaneParams } from "../openapi.js";
import { route } from "../lane-call.js";

const tags = ["bulk"];

const BulkParams = z.object({ lane: Name, id: z.string().regex(BULK_ID_PATTERN, "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$") });

const start = createRoute({
  method: "post",
  path: "/lanes/{lane}/bulk",
  tags,
  summary: "Requeue, cancel or delete the jobs enqueued before now that match a filter, in chunks across the lane's alarms; one at a time per lane",
  security: bearerAuth,
  request: { params: LaneParams, body: jsonRequest(BulkRequest) },
  responses: { 202: jsonResponse(BulkAnswer, "accepted: it runs"), ...errorResponses(409, 415) },
});

const read = createRoute({
  method: "get",
  path: "/lanes/{lane}/bulk/{id}",
  tags,
  summary: "A bulk action's progress (kept 7 days after it finished)",
  security: bearerAuth,
  request: { params: BulkParams },
  responses: { 200: jsonResponse(BulkAnswer, "the bulk action"), ...errorResponses(404) },
});

export function bulkRoutes() {
  return createRouter()
    .openapi(start, async (c) => {
      const request = c.req.valid("json");
      return c.json({ bulk: await route(c, (router, lane) => startBulk(router, lane, request)) }, 202);
    })
    .openapi(read, async (c) => {
      const { id } = c.req.valid("param");
      return c.json({ bulk: await route(c, (router, lane) => getBulk(router, lane, id)) }, 200);
    });
}
