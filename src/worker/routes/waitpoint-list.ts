/**
 * `GET /v1/lanes/{lane}/waitpoints` (an extension of docs/api.md "Waitpoints"): a lane's waitpoints
 * of one state, in id order, a page at a time; every shard of a sharded lane under one cursor
 * (routing/waitpoint-list-routing.ts). What the dashboard's lane view lists as pending.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { WaitpointListQuery } from "../../shared/waitpoint-list.js";
import { listWaitpoints } from "../../routing/waitpoint-list-routing.js";
import { route } from "../lane-call.js";
import { bearerAuth, createRouter, errorResponses, jsonResponse, LaneParams } from "../openapi.js";
import { WaitpointView } from "./waitpoints.js";

const WaitpointList = z
  .object({
    waitpoints: z.array(WaitpointView),
    cursor: z.string().nullable().openapi({ description: "pass back as `cursor` for the next page; null: the end" }),
  })
  .openapi("WaitpointList");

const listRoute = createRoute({
  method: "get",
  path: "/lanes/{lane}/waitpoints",
  tags: ["waitpoints"],
  summary: "A lane's waitpoints, of one state or all, in id order (every shard of a sharded lane)",
  security: bearerAuth,
  request: { params: LaneParams, query: WaitpointListQuery },
  responses: { 200: jsonResponse(WaitpointList, "a page of waitpoints (at most limit, and at most 4 MiB of JSON)"), ...errorResponses() },
});

export function waitpointListRoutes() {
  return createRouter().openapi(listRoute, async (c) => c.json(await route(c, (router, lane) => listWaitpoints(router, lane, c.req.valid("query"))), 200));
}
