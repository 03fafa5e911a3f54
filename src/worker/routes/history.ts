/** A lane's per-minute history (docs/api.md, "Metrics"): the buckets the dashboard's charts draw. */
import { createRoute } from "@hono/zod-openapi";
import { HistoryAnswer, HistoryQuery } from "../../shared/history.js";
import { route } from "../lane-call.js";
import { bearerAuth, createRouter, errorResponses, jsonResponse, LaneParams } from "../openapi.js";

const getHistory = createRoute({
  method: "get",
  path: "/lanes/{lane}/history",
  tags: ["lanes"],
  summary: "Per-minute buckets (enqueued, started, completed, failed, depth) of the last windowMs, oldest first",
  security: bearerAuth,
  request: { params: LaneParams, query: HistoryQuery },
  responses: { 200: jsonResponse(HistoryAnswer, "every minute of the window, oldest first"), ...errorResponses() },
});

export function historyRoutes() {
  return createRouter().openapi(getHistory, async (c) => {
    const { windowMs } = c.req.valid("query");
    return c.json(await route(c, (router, lane) => router.history(lane, windowMs === undefined ? {} : { windowMs })), 200);
  });
}
