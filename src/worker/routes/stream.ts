/**
 * A job's stream (docs/api.md "Results"): `GET …/jobs/{id}/stream` sends its stored events as
 * Server-Sent Events from where the reader resumes, then live, and ends once the job is settled;
 * `POST …/jobs/{id}/stream` is a pull consumer's chunk write, fenced like progress.
 *
 * Live without polling: the route holds one call to the job's lane (its shard, by the job's id) that
 * the lane answers when the job has an event after the last one sent, or is settled, or when the
 * hold passes; then it asks again. An idle stream costs the lane a pending promise, no CPU.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { STREAM_BUSY_RETRY_MS, STREAM_HOLD_MS } from "../../shared/defaults.js";
import { pause, untilAborted } from "../../shared/abortable.js";
import { QueueError, unwrap } from "../../shared/errors.js";
import { chunkTexts, resumeAfter, StreamWriteRequest, type StreamPage } from "../../shared/stream.js";
import { acrossResets, isLaneReset } from "../../routing/lane-retry.js";
import { route, routerOf } from "../lane-call.js";
import { bearerAuth, createRouter, errorResponses, JobParams, jsonRequest, jsonResponse, type AppEnv } from "../openapi.js";

const tags = ["results"];

const StreamQuery = z.object({
  after: z.string().optional().openapi({ description: "replay the events whose seq is above this integer ≥ 0 (Last-Event-ID wins when both are given)" }),
});

const StreamHeaders = z.object({
  "last-event-id": z.string().optional().openapi({ param: { name: "last-event-id", in: "header" }, description: "the seq of the last event the reader holds (an EventSource sends it on reconnect)" }),
});

const readStream = createRoute({
  method: "get",
  path: "/lanes/{lane}/jobs/{id}/stream",
  tags,
  summary: "The job's events as Server-Sent Events: transitions, progress and chunks from where the reader resumes, then live; `end` once settled",
  security: bearerAuth,
  request: { params: JobParams, query: StreamQuery, headers: StreamHeaders },
  responses: {
    200: {
      description: "`id: <seq>`, `event: transition | progress | chunk`, `data: <JSON>` per event; `event: end` (no id) with `{\"job\"}` once settled, then the stream closes",
      content: { "text/event-stream": { schema: z.string() } },
    },
    ...errorResponses(404),
  },
});

const StreamWritten = z.object({ written: z.number().int(), lastEventId: z.number().int() }).openapi("StreamWritten");

const writeStream = createRoute({
  method: "post",
  path: "/lanes/{lane}/jobs/{id}/stream",
  tags,
  summary: "Write 1..100 chunks to the job's stream for the attempt holding the token, all or none (fenced like progress; keeps the token)",
  security: bearerAuth,
  request: { params: JobParams, body: jsonRequest(StreamWriteRequest) },
  responses: { 200: jsonResponse(StreamWritten, "written, with the seq of the last chunk"), ...errorResponses(404, 409, 413, 415) },
});

/**
 * One page of the job's events after `after`, held up to `holdMs` while there is none (the job's
 * shard, by its id). A read: asked again after a reset of the lane, the stream going on from `after`.
 */
function page(c: Context<AppEnv>, lane: string, id: string, after: number, holdMs: number): Promise<StreamPage> {
  return acrossResets(() => routerOf(c).byId(lane, id, (stub) => stub.streamEvents(id, after, holdMs)), c.req.raw.signal).then(unwrap);
}

/**
 * The SSE answer of job `id` in `lane`, resumed after the reader's `Last-Event-ID` or `?after`: what
 * `GET …/jobs/{id}/stream` answers, and what any other route serving a job's stream calls.
 * 400 for a bad resume position, 404 for an unknown job, before the stream starts.
 */
export async function jobStream(c: Context<AppEnv>, lane: string, id: string): Promise<Response> {
  const after = unwrap(resumeAfter(c.req.header("last-event-id"), c.req.query("after")));
  const first = await page(c, lane, id, after, 0);
  return streamSSE(c, async (stream) => {
    let next: StreamPage | null = first;
    let last = after;
    while (!stream.aborted && !stream.closed) {
      let answer: StreamPage | null;
      try {
        // A reader gone while its call is held stops asking now, not when the hold passes.
        answer = next ?? (await untilAborted(page(c, lane, id, last, STREAM_HOLD_MS), c.req.raw.signal));
      } catch (error) {
        // The job was deleted while streamed (retention, sweep, purge): nothing more will come.
        if (error instanceof QueueError && error.code === "job_not_found") return;
        // The lane still resetting after the retries: the stream ends, and its reader resumes from its Last-Event-ID.
        if (isLaneReset(error)) return;
        throw error;
      }
      next = null;
      if (answer === null) return;
      for (const event of answer.events) {
        await stream.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${event.data}\n\n`);
        last = event.seq;
      }
      if (answer.end) {
        await stream.write(`event: end\ndata: ${JSON.stringify({ job: answer.end })}\n\n`);
        return;
      }
      // A lane holding as many readers as it may answered at once: ask again a moment later.
      if (answer.busy && answer.events.length === 0) await pause(STREAM_BUSY_RETRY_MS, c.req.raw.signal);
      // A hold that passed with nothing new: a comment keeps proxies from closing an idle connection.
      else if (answer.events.length === 0) await stream.write(": idle\n\n");
    }
  });
}

export function streamRoutes() {
  return createRouter()
    .openapi(readStream, async (c) => {
      const { lane, id } = c.req.valid("param");
      return jobStream(c, lane, id);
    })
    .openapi(writeStream, async (c) => {
      const { id } = c.req.valid("param");
      const request = c.req.valid("json");
      unwrap(chunkTexts(request.chunks)); // 413 before the lane is touched
      return c.json(await route(c, (router, lane) => router.byToken(lane, id, request.token, (stub) => stub.writeStream(id, request))), 200);
    });
}
