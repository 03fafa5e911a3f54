/** Routes of a lane's queues (serial keys): who holds one and how many wait, and purging its queued jobs. */
import { createRoute, z } from "@hono/zod-openapi";
import { Name, QueuePut } from "../../shared/schemas.js";
import { PurgeResponse, QueueInfo } from "../responses.js";
import { bearerAuth, createRouter, errorResponses, jsonRequest, jsonResponse } from "../openapi.js";
import { route } from "../lane-call.js";

const tags = ["queues"];

const QueueParams = z.object({ lane: Name, queue: Name });

/** Purge takes no fields; a body that has some is refused like any other unknown field. */
const PurgeRequest = z.strictObject({}).openapi("PurgeRequest");

const getQueue = createRoute({
  method: "get",
  path: "/lanes/{lane}/queues/{queue}",
  tags,
  summary: "The job that holds a queue (or runs next), how many of its jobs are queued and run, its settings",
  security: bearerAuth,
  request: { params: QueueParams },
  responses: { 200: jsonResponse(QueueInfo, "the queue"), ...errorResponses() },
});

const putQueue = createRoute({
  method: "put",
  path: "/lanes/{lane}/queues/{queue}",
  tags,
  summary: "Set a queue's concurrency and rate limit (they outlive its jobs)",
  security: bearerAuth,
  request: { params: QueueParams, body: jsonRequest(QueuePut) },
  responses: { 200: jsonResponse(QueueInfo, "the queue as it is now"), ...errorResponses(415) },
});

const purgeQueue = createRoute({
  method: "post",
  path: "/lanes/{lane}/queues/{queue}/purge",
  tags,
  summary: "Delete a queue's queued jobs; a running head runs on",
  security: bearerAuth,
  request: { params: QueueParams, body: jsonRequest(PurgeRequest, false) },
  responses: { 200: jsonResponse(PurgeResponse, "how many jobs were deleted"), ...errorResponses(415) },
});

export function queueRoutes() {
  return createRouter()
    .openapi(getQueue, async (c) => {
      const { queue } = c.req.valid("param");
      return c.json(await route(c, (router, lane) => router.byQueue(lane, queue, (stub) => stub.queueInfo(queue))), 200);
    })
    .openapi(putQueue, async (c) => {
      const { queue } = c.req.valid("param");
      const request = c.req.valid("json");
      return c.json(await route(c, (router, lane) => router.byQueue(lane, queue, (stub) => stub.putQueue(queue, request))), 200);
    })
    .openapi(purgeQueue, async (c) => {
      const { queue } = c.req.valid("param");
      return c.json(await route(c, (router, lane) => router.byQueue(lane, queue, (stub) => stub.purgeQueue(queue))), 200);
    });
}
