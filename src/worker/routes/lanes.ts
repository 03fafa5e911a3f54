/** Admin routes of lanes: the list of lanes (through the registry), a lane's info and settings, sweeping, failing a lane. */
import { createRoute, z } from "@hono/zod-openapi";
import { unwrap } from "../../shared/errors.js";
import { REGISTRY_NAME } from "../../durable/registry.js";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from "../../shared/defaults.js";
import { FailLaneResponse, LaneInfo, LaneList, SweepResponse } from "../responses.js";
import { FailLaneRequest, LanePatch, Name, SweepRequest } from "../../shared/schemas.js";
import { bearerAuth, createRouter, errorResponses, jsonRequest, jsonResponse, LaneParams } from "../openapi.js";
import { route, routerOf } from "../lane-call.js";

const tags = ["lanes"];

const LanesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: Name.optional().openapi({ description: "the cursor of the previous page" }),
});

const listLanes = createRoute({
  method: "get",
  path: "/lanes",
  tags,
  summary: "Every lane that has ever had a job, in name order, with its counts",
  security: bearerAuth,
  request: { query: LanesQuery },
  responses: { 200: jsonResponse(LaneList, "a page of lanes"), ...errorResponses() },
});

const getLane = createRoute({
  method: "get",
  path: "/lanes/{lane}",
  tags,
  summary: "A lane's counts, settings and next wake",
  security: bearerAuth,
  request: { params: LaneParams },
  responses: { 200: jsonResponse(LaneInfo, "the lane"), ...errorResponses() },
});

const patchLane = createRoute({
  method: "patch",
  path: "/lanes/{lane}",
  tags,
  summary: "Set a lane's concurrency, pause it, set its retention, or (while it is empty) its shard count",
  security: bearerAuth,
  request: { params: LaneParams, body: jsonRequest(LanePatch, false) },
  responses: { 200: jsonResponse(LaneInfo, "the lane as it is now"), ...errorResponses(415) },
});

const sweep = createRoute({
  method: "post",
  path: "/lanes/{lane}/sweep",
  tags,
  summary: "Delete settled jobs settled before an instant",
  security: bearerAuth,
  request: { params: LaneParams, body: jsonRequest(SweepRequest) },
  responses: { 200: jsonResponse(SweepResponse, "how many jobs were deleted"), ...errorResponses(415) },
});

const failLane = createRoute({
  method: "post",
  path: "/lanes/{lane}/fail",
  tags,
  summary: "Settle up to 500 queued and running jobs failed (running first), aborting their attempts; call again while more",
  security: bearerAuth,
  request: { params: LaneParams, body: jsonRequest(FailLaneRequest) },
  responses: { 200: jsonResponse(FailLaneResponse, "the jobs this call failed, and whether any are left"), ...errorResponses(415) },
});

export function laneRoutes() {
  return createRouter()
    .openapi(listLanes, async (c) => {
      const { limit, cursor } = c.req.valid("query");
      // A scoped token's page is read in its scope by the registry, so that the page and its cursor
      // (its last lane) name only lanes the token reaches.
      const page = await c.env.REGISTRY.getByName(REGISTRY_NAME).list(cursor ?? null, limit, c.get("principal").lanes);
      // One call per listed lane, in parallel, each reading one row of kept counts: O(page), whatever the lanes hold.
      const lanes = await Promise.all(page.lanes.map(async (lane) => ({ lane, counts: unwrap(await routerOf(c).counts(lane)) })));
      return c.json({ lanes, cursor: page.more ? (page.lanes.at(-1) ?? null) : null }, 200);
    })
    .openapi(getLane, async (c) => c.json(await route(c, (router, lane) => router.info(lane)), 200))
    .openapi(patchLane, async (c) => {
      const patch = c.req.valid("json") ?? {};
      return c.json(await route(c, (router, lane) => router.configure(lane, patch)), 200);
    })
    .openapi(sweep, async (c) => {
      const request = c.req.valid("json");
      return c.json(await route(c, (router, lane) => router.sweep(lane, request)), 200);
    })
    .openapi(failLane, async (c) => {
      const request = c.req.valid("json");
      return c.json(await route(c, (router, lane) => router.failLane(lane, request)), 200);
    });
}
