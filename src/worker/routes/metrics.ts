/**
 * Prometheus metrics (docs/api.md "Metrics"): every lane's from the registry, which keeps each lane's
 * latest report (one call whatever the number of lanes), and one lane's read live from that lane.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { REGISTRY_NAME } from "../../durable/registry.js";
import { EXPOSITION_CONTENT_TYPE } from "../../durable/metrics/exposition.js";
import { bearerAuth, createRouter, errorResponses, LaneParams } from "../openapi.js";
import { readLaneMetrics, route } from "../lane-call.js";

const tags = ["metrics"];

const exposition = (description: string) => ({
  description,
  content: { [EXPOSITION_CONTENT_TYPE]: { schema: z.string().openapi({ description: "the Prometheus text exposition format 0.0.4" }) } },
});

const allMetrics = createRoute({
  method: "get",
  path: "/metrics",
  tags,
  summary: "Every lane's metrics in the Prometheus text format, as each lane last reported them (at most a second old while it changes)",
  security: bearerAuth,
  responses: { 200: exposition("the metrics of every lane the token reaches"), ...errorResponses() },
});

const laneMetrics = createRoute({
  method: "get",
  path: "/lanes/{lane}/metrics",
  tags,
  summary: "One lane's metrics in the Prometheus text format, read live from the lane",
  security: bearerAuth,
  request: { params: LaneParams },
  responses: { 200: exposition("the lane's metrics"), ...errorResponses() },
});

/**
 * Plain text, not compressed here: Cloudflare's edge compresses text responses for clients that
 * accept it, and compressing megabytes in the worker would cost a scrape more than it saves locally.
 */
const headers = { "content-type": EXPOSITION_CONTENT_TYPE };

export function metricsRoutes() {
  return createRouter()
    .openapi(allMetrics, async (c) => {
      const text = await c.env.REGISTRY.getByName(REGISTRY_NAME).metrics(Date.now(), c.get("principal").lanes);
      return c.text(text, 200, headers);
    })
    .openapi(laneMetrics, async (c) => {
      const text = await route(c, readLaneMetrics);
      return c.text(text, 200, headers);
    });
}
