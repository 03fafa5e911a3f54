/**
 * Durable steps over HTTP (docs/api.md "Checkpoints" and the pull consumers' progress): a lease holder
 * records checkpoints and progress through the fence; an operator reads a job's checkpoints.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { MAX_CHECKPOINT_BYTES, MAX_PROGRESS_BYTES } from "../../shared/defaults.js";
import { unwrap } from "../../shared/errors.js";
import { serializeJson } from "../../shared/json.js";
import { CheckpointRequest, JobId, Name, ProgressRequest } from "../../shared/schemas.js";
import { CheckpointList, CheckpointResponse, JobResponse } from "../responses.js";
import { bearerAuth, createRouter, errorResponses, JobParams, jsonRequest, jsonResponse } from "../openapi.js";
import { route } from "../lane-call.js";

const CheckpointParams = z.object({ lane: Name, id: JobId, name: Name });

const saveCheckpoint = createRoute({
  method: "put",
  path: "/lanes/{lane}/jobs/{id}/checkpoints/{name}",
  tags: ["checkpoints"],
  summary: "Record a checkpoint for the attempt holding the token (fenced like complete)",
  security: bearerAuth,
  request: { params: CheckpointParams, body: jsonRequest(CheckpointRequest) },
  responses: { 200: jsonResponse(CheckpointResponse, "recorded, stamped with the attempt's generation"), ...errorResponses(404, 409, 413, 415) },
});

const listCheckpoints = createRoute({
  method: "get",
  path: "/lanes/{lane}/jobs/{id}/checkpoints",
  tags: ["checkpoints"],
  summary: "Every checkpoint of a job, in name order",
  security: bearerAuth,
  request: { params: JobParams },
  responses: { 200: jsonResponse(CheckpointList, "the job's checkpoints"), ...errorResponses(404) },
});

const progress = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs/{id}/progress",
  tags: ["pull consumers"],
  summary: "Record the job's progress for the attempt holding the token (fenced like complete; keeps the token)",
  security: bearerAuth,
  request: { params: JobParams, body: jsonRequest(ProgressRequest) },
  responses: { 200: jsonResponse(JobResponse, "the job with its progress"), ...errorResponses(404, 409, 413, 415) },
});

export function checkpointRoutes() {
  return createRouter()
    .openapi(saveCheckpoint, async (c) => {
      const { id, name } = c.req.valid("param");
      const request = c.req.valid("json");
      unwrap(serializeJson(request.value, "value", MAX_CHECKPOINT_BYTES)); // 413 before the lane is touched
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.saveCheckpoint(id, name, request))), 200);
    })
    .openapi(listCheckpoints, async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await route(c, (router, lane) => router.byId(lane, id, (stub) => stub.listCheckpoints(id))), 200);
    })
    .openapi(progress, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      unwrap(serializeJson(request.progress, "progress", MAX_PROGRESS_BYTES));
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.progress(id, request))), 200);
    });
}
