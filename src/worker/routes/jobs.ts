/** Producers' and operators' routes of a lane's jobs: enqueue (one or a batch), read, list, cancel, requeue. */
import { createRoute, z } from "@hono/zod-openapi";
import { QueueError } from "../../shared/errors.js";
import { reachesLane, type Principal } from "../access.js";
import { serializeJson } from "../../shared/json.js";
import { heldLimit } from "./payloads.js";
import { parseTraceparent, TRACEPARENT_FORMAT } from "../../shared/trace.js";
import { BatchEnqueueResponse, CancelResponse, DependentsResponse, EnqueueResponse, Job, JobList, JobResponse } from "../responses.js";
import { BatchEnqueueRequest, CancelRequest, EnqueueRequest, ListQuery } from "../../shared/schemas.js";
import { bearerAuth, createRouter, errorResponses, JobParams, jsonRequest, jsonResponse, LaneParams } from "../openapi.js";
import { enqueueOne, route } from "../lane-call.js";
import { readJob, waitAfterEnqueue, WaitQuery } from "../job-waits.js";

const tags = ["jobs"];

/**
 * An enqueue's `traceparent` header (W3C Trace Context): stored on the job (every job of a batch),
 * handed to its executor and on its claims. A malformed one is a 400 naming it, and nothing is enqueued.
 */
const TraceHeaders = z.object({
  traceparent: z
    .string()
    .refine((value) => parseTraceparent(value) !== null, { message: `must be ${TRACEPARENT_FORMAT}` })
    .optional()
    .openapi({
      param: { name: "traceparent", in: "header" },
      description: "W3C Trace Context of the producer: stored on the job (a later version's first 55 characters)",
      example: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    }),
});

/** The request as the lane takes it: the body, and the header's trace context (as stored) beside its fields. */
function traced<T extends object>(request: T, header: string | undefined): T & { traceparent?: string } {
  const trace = header === undefined ? null : parseTraceparent(header);
  return trace ? { ...request, traceparent: trace.traceparent } : request;
}

const enqueue = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs",
  tags,
  summary: "Enqueue a job (idempotent by id); with waitMs, answered once it is settled or waitMs has passed",
  security: bearerAuth,
  request: { params: LaneParams, query: WaitQuery, headers: TraceHeaders, body: jsonRequest(EnqueueRequest) },
  responses: {
    201: jsonResponse(EnqueueResponse, "enqueued (with dependencies not all settled: state blocked)"),
    200: jsonResponse(EnqueueResponse, "duplicate: the id exists with the same spec; debounced; or skipped (singleton skip: the job that holds the queue)"),
    ...errorResponses(409, 413, 415),
  },
});

const enqueueBatch = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs/batch",
  tags,
  summary: "Enqueue 1..1000 jobs, all or nothing",
  security: bearerAuth,
  request: { params: LaneParams, headers: TraceHeaders, body: jsonRequest(BatchEnqueueRequest) },
  responses: { 200: jsonResponse(BatchEnqueueResponse, "every job, queued, duplicate, debounced or skipped, in request order"), ...errorResponses(409, 413, 415) },
});

const getJob = createRoute({
  method: "get",
  path: "/lanes/{lane}/jobs/{id}",
  tags,
  summary: "Read a job; with waitMs, answered once it is settled or waitMs has passed",
  security: bearerAuth,
  request: { params: JobParams, query: WaitQuery },
  responses: { 200: jsonResponse(Job, "the job"), ...errorResponses(404) },
});

const listJobs = createRoute({
  method: "get",
  path: "/lanes/{lane}/jobs",
  tags,
  summary: "List jobs in enqueue order",
  security: bearerAuth,
  request: { params: LaneParams, query: ListQuery },
  responses: { 200: jsonResponse(JobList, "a page of jobs"), ...errorResponses() },
});

const cancel = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs/{id}/cancel",
  tags,
  summary: "Cancel a job",
  security: bearerAuth,
  request: { params: JobParams, body: jsonRequest(CancelRequest, false) },
  responses: {
    200: jsonResponse(CancelResponse, "cancelled (now, or already)"),
    202: jsonResponse(CancelResponse, "cancelling: the job runs; it settles cancelled when its attempt winds up"),
    ...errorResponses(404, 409, 415),
  },
});

const dependents = createRoute({
  method: "get",
  path: "/lanes/{lane}/jobs/{id}/dependents",
  tags,
  summary: "The jobs registered to wait for this one (dependsOn), by lane then id",
  security: bearerAuth,
  request: { params: JobParams },
  responses: { 200: jsonResponse(DependentsResponse, "its dependents"), ...errorResponses(404) },
});

/** Requeue takes no fields; a body that has some is refused like any other unknown field. */
const RequeueRequest = z.strictObject({}).openapi("RequeueRequest");

const requeue = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs/{id}/requeue",
  tags,
  summary: "Queue a failed, cancelled or interrupted job again, with a fresh attempt budget",
  security: bearerAuth,
  request: { params: JobParams, body: jsonRequest(RequeueRequest, false) },
  responses: { 200: jsonResponse(JobResponse, "queued again"), ...errorResponses(404, 409, 415) },
});

/**
 * 413 before the lane is touched: the lane checks again, but a worker need not ship 128 KiB+ (16 MiB+
 * with `PAYLOADS`, `limit`) to learn it.
 */
function checkPayload(payload: unknown, index?: number, limit?: number): void {
  const serialized = serializeJson(payload, "payload", limit);
  if (serialized.ok) return;
  if (index === undefined) throw QueueError.from(serialized.error);
  throw new QueueError(serialized.error.code, `jobs[${index}]: ${serialized.error.message}`, { index });
}

/**
 * A scoped token's enqueue may wait only for jobs of lanes it reaches: a dependency registers on its
 * lane and tells whether the job exists there, so naming another lane is a 403 like calling it.
 */
function checkDependencyLanes(principal: Principal, jobs: readonly { dependsOn?: readonly { lane?: string | undefined }[] | undefined }[], batch: boolean): void {
  if (principal.lanes === null) return;
  for (const [index, job] of jobs.entries()) {
    for (const [i, dep] of (job.dependsOn ?? []).entries()) {
      if (dep.lane === undefined || reachesLane(principal.lanes, dep.lane)) continue;
      const path = batch ? ["jobs", index, "dependsOn", i] : ["dependsOn", i];
      const message = `${path.join(".")} names lane ${dep.lane}, which this token does not reach`;
      throw new QueueError("forbidden", message, [{ path, message }]);
    }
  }
}

export function jobRoutes() {
  return createRouter()
    .openapi(enqueue, async (c) => {
      const request = c.req.valid("json");
      checkPayload(request.payload, undefined, heldLimit(c.env));
      checkDependencyLanes(c.get("principal"), [request], false);
      const { waitMs } = c.req.valid("query");
      const answer = await waitAfterEnqueue(c, c.req.valid("param").lane, await enqueueOne(c, traced(request, c.req.valid("header").traceparent)), waitMs);
      if (answer.status === "queued") return c.json(answer, 201);
      return c.json(answer, 200);
    })
    .openapi(enqueueBatch, async (c) => {
      const request = c.req.valid("json");
      request.jobs.forEach((job, index) => checkPayload(job.payload, index));
      checkDependencyLanes(c.get("principal"), request.jobs, true);
      const batch = traced(request, c.req.valid("header").traceparent);
      return c.json(await route(c, (router, lane) => router.enqueueBatch(lane, batch)), 200);
    })
    .openapi(getJob, async (c) => {
      const { lane, id } = c.req.valid("param");
      return c.json(await readJob(c, lane, id, c.req.valid("query").waitMs), 200);
    })
    .openapi(listJobs, async (c) => {
      return c.json(await route(c, (router, lane) => router.list(lane, c.req.valid("query"))), 200);
    })
    .openapi(cancel, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      const answer = await route(c, (router, lane) => router.byId(lane, id, (stub) => stub.cancel(id, request)));
      if (answer.status === "cancelling") return c.json(answer, 202);
      return c.json(answer, 200);
    })
    .openapi(dependents, async (c) => {
      const { id } = c.req.valid("param");
      const { dependents } = await route(c, (router, lane) => router.byId(lane, id, (stub) => stub.dependents(id)));
      // A scoped token learns nothing of lanes outside its scope, not even that a job there waits here.
      const reach = c.get("principal").lanes;
      return c.json({ dependents: dependents.filter((d) => reachesLane(reach, d.lane)) }, 200);
    })
    .openapi(requeue, async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await route(c, (router, lane) => router.byId(lane, id, (stub) => stub.requeue(id))), 200);
    });
}
