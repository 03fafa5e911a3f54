/** A lane's schedules (docs/api.md "Schedules"): create or replace, read, list, delete. */
import { createRoute, z } from "@hono/zod-openapi";
import { Name, ScheduleListQuery, ScheduleName, ScheduleRequest } from "../../shared/schemas.js";
import { ScheduleDeleted, ScheduleList, ScheduleResponse, Schedule } from "../responses.js";
import { bearerAuth, createRouter, errorResponses, jsonRequest, jsonResponse, LaneParams } from "../openapi.js";
import { callLane } from "../lane-call.js";

const tags = ["schedules"];

const ScheduleParams = z.object({ lane: Name, name: ScheduleName });

const putSchedule = createRoute({
  method: "put",
  path: "/lanes/{lane}/schedules/{name}",
  tags,
  summary: "Create or replace a schedule: a cron expression (in a time zone) or an interval",
  security: bearerAuth,
  request: { params: ScheduleParams, body: jsonRequest(ScheduleRequest) },
  responses: {
    201: jsonResponse(ScheduleResponse, "created"),
    200: jsonResponse(ScheduleResponse, "replaced (a definition equal to the stored one changes nothing)"),
    ...errorResponses(413, 415),
  },
});

const getSchedule = createRoute({
  method: "get",
  path: "/lanes/{lane}/schedules/{name}",
  tags,
  summary: "Read a schedule",
  security: bearerAuth,
  request: { params: ScheduleParams },
  responses: { 200: jsonResponse(Schedule, "the schedule"), ...errorResponses(404) },
});

const listSchedules = createRoute({
  method: "get",
  path: "/lanes/{lane}/schedules",
  tags,
  summary: "A lane's schedules by name",
  security: bearerAuth,
  request: { params: LaneParams, query: ScheduleListQuery },
  responses: { 200: jsonResponse(ScheduleList, "a page of schedules (every one, unless there are over 500 or 4 MiB of them)"), ...errorResponses() },
});

const deleteSchedule = createRoute({
  method: "delete",
  path: "/lanes/{lane}/schedules/{name}",
  tags,
  summary: "Delete a schedule (the jobs it enqueued stay)",
  security: bearerAuth,
  request: { params: ScheduleParams },
  responses: { 200: jsonResponse(ScheduleDeleted, "deleted"), ...errorResponses(404) },
});

export function scheduleRoutes() {
  return createRouter()
    .openapi(putSchedule, async (c) => {
      const { lane, name } = c.req.valid("param");
      const { created, schedule } = await callLane(c, (stub) => stub.putSchedule(name, c.req.valid("json")));
      if (created) return c.json({ schedule }, 201);
      return c.json({ schedule }, 200);
    })
    .openapi(getSchedule, async (c) => {
      const { lane, name } = c.req.valid("param");
      return c.json(await callLane(c, (stub) => stub.getSchedule(name)), 200);
    })
    .openapi(listSchedules, async (c) => {
      return c.json(await callLane(c, (stub) => stub.listSchedules(c.req.valid("query"))), 200);
    })
    .openapi(deleteSchedule, async (c) => {
      const { lane, name } = c.req.valid("param");
      return c.json(await callLane(c, (stub) => stub.deleteSchedule(name)), 200);
    });
}
