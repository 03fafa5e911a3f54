/**
 * The front worker: bearer auth and scoped access (access.ts) and body checks on `/v1`, the routes of docs/api.md, the OpenAPI
 * document, and one error handler. A library user mounts `createApp()` as their worker's fetch.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { except } from "hono/combine";
import { requireAccess } from "./access.js";
import { jsonBody } from "./body.js";
import { onError, onNotFound } from "./errors.js";
import { dashboardRoutes } from "./dashboard/routes.js";
import { createRouter, jsonResponse, serveDocument } from "./openapi.js";
import { accessRoutes } from "./routes/access.js";
import { ackRoutes } from "./routes/acks.js";
import { checkpointRoutes } from "./routes/checkpoints.js";
import { historyRoutes } from "./routes/history.js";
import { consumerRoutes } from "./routes/consumers.js";
import { EVENTS_PATH, eventRoutes } from "./routes/events.js";
import { jobRoutes } from "./routes/jobs.js";
import { payloadRoutes } from "./routes/payloads.js";
import { LINKS_PATH, linkReadRoutes, linkRoutes } from "./routes/links.js";
import { CALLBACKS_PATH, callbackRoutes } from "./routes/callbacks.js";
import { laneRoutes } from "./routes/lanes.js";
import { metricsRoutes } from "./routes/metrics.js";
import { queueRoutes } from "./routes/queues.js";
import { waitpointRoutes } from "./routes/waitpoints.js";
import { waitRoutes } from "./routes/waits.js";
import { scheduleRoutes } from "./routes/schedules.js";
import { waitpointListRoutes } from "./routes/waitpoint-list.js";
import { streamRoutes } from "./routes/stream.js";
import { bulkRoutes } from "./routes/bulk.js";
import type { KindSchemas } from "../shared/kinds.js";

const healthz = createRoute({
  method: "get",
  path: "/healthz",
  tags: ["health"],
  summary: "Liveness, without auth",
  responses: { 200: jsonResponse(z.object({ ok: z.literal(true) }), "alive") },
});

/** What the app knows of the Worker besides its bindings. */
export interface AppOptions {
  /**
   * The lane class bound as `LANE` (`defineLane`): the kinds it declares are listed in
   * `/openapi.json`'s `"x-kinds"`. Without it the document lists none (`{}`); the lane checks its
   * kinds all the same.
   */
  lane?: (abstract new (...args: never) => object) & { readonly kinds?: KindSchemas };
}

/** The Hono app of the API (docs/api.md): `export default createApp({ lane: MyLane })` in a Worker. */
export function createApp(options: AppOptions = {}) {
  const app = createRouter();
  app.onError(onError);
  app.notFound(onNotFound);
  // The events socket authenticates with a ticket instead (routes/events.ts), links and callbacks
  // with their signature (routes/links.ts, routes/callbacks.ts), which read their bodies themselves.
  app.use("/v1/*", except([EVENTS_PATH, LINKS_PATH, CALLBACKS_PATH], requireAccess), except([LINKS_PATH, CALLBACKS_PATH], jsonBody));
  const routes = app.openapi(healthz, (c) => c.json({ ok: true as const }, 200))
    .route("/v1", jobRoutes())
    .route("/v1", payloadRoutes())
    .route("/v1", laneRoutes())
    .route("/v1", bulkRoutes())
    .route("/v1", historyRoutes())
    .route("/v1", consumerRoutes())
    .route("/v1", queueRoutes())
    .route("/v1", scheduleRoutes())
    .route("/v1", waitpointRoutes())
    .route("/v1", waitpointListRoutes())
    .route("/v1", waitRoutes())
    .route("/v1", checkpointRoutes())
    .route("/v1", streamRoutes())
    .route("/v1", ackRoutes())
    .route("/v1", eventRoutes())
    .route("/v1", metricsRoutes())
    .route("/v1", accessRoutes())
    .route("/v1", linkRoutes())
    .route("/v1", linkReadRoutes())
    .route("/v1", callbackRoutes())
    .route("/", dashboardRoutes());
  serveDocument(routes, "/openapi.json", options.lane?.kinds);
  return routes;
}

/** The routes' types, for `hc<AppType>` (hono/client). */
export type AppType = ReturnType<typeof createApp>;
