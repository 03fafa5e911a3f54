/**
 * The HTTP client, for everything that is not a Worker binding the lane namespace: producers, pull
 * consumers, dashboards. Typed from the app's own routes (`hc<AppType>`), so a changed route breaks
 * the build of its callers rather than their requests.
 *
 * ```ts
 * const queue = createHttpClient({ baseUrl: "https://queue.example.com", token: env.QUEUE_TOKEN });
 * await queue.lane("tenant-7").enqueue({ kind: "email.send", payload: { to: "a@b.c" } });
 * ```
 */
import { hc, type ClientResponse } from "hono/client";
import type { ClientErrorStatusCode, ServerErrorStatusCode, SuccessStatusCode } from "hono/utils/http-status";
import type { JSONParsed } from "hono/utils/types";
import { QueueError, type ErrorBody } from "../shared/errors.js";
import type { Counts, Json } from "../shared/job.js";
import type { AppType } from "../worker/app.js";
import type { EnqueueOptions, LaneClient } from "./types.js";
import { jobWaits } from "./job-waits.js";
import type { StreamEvent } from "../shared/stream.js";
import { readJobStream } from "./http-stream.js";
import { rejectingThrows, segment } from "./http-params.js";
import type { Waitpoint } from "../shared/waitpoint.js";

export interface HttpClientOptions {
  /** Where the API is served, e.g. `https://queue.example.com` (no `/v1`). */
  baseUrl: string;
  /** A bearer token of the API's `API_TOKEN` list. */
  token: string;
  /** Replaces the global `fetch`: a service binding's, or a test's. */
  fetch?: typeof fetch;
}

/** A lane over HTTP: the lane client, and what only HTTP serves. */
export interface HttpLaneClient extends LaneClient {
  /**
   * Job `id`'s stream (docs/api.md "Results"): its events after `after` (default 0: all), then live,
   * ending with `end` (`{"job"}`) once the job is settled. A dropped connection is opened again after
   * the last event seen. Throws `job_not_found` for an unknown job; `signal` stops it.
   */
  stream(id: string, options?: { after?: number; signal?: AbortSignal }): AsyncGenerator<StreamEvent, void, undefined>;
  /**
   * Signs an expiring, read-only link of job `id` (docs/api.md "Results"): `url` (absolute, under
   * `baseUrl`) reads the job, and `{url}/stream` its stream, without a token until `expiresAt`.
   * `ttlMs` 1000..86400000, default an hour. Needs the API's SIGNING_SECRET.
   */
  link(id: string, options?: { ttlMs?: number }): Promise<{ url: string; expiresAt: number }>;
  /** Writes 1..100 chunks to the job's stream for the attempt holding `token`, all or none. */
  writeStream(id: string, request: { token: string; chunks: unknown[] }): Promise<{ written: number; lastEventId: number }>;
}

export interface HttpClient {
  lane(name: string): HttpLaneClient;
  /** A page of the lanes that have ever had a job, in name order; pass `cursor` back to continue. */
  lanes(query?: { limit?: number; cursor?: string }): Promise<{ lanes: { lane: string; counts: Counts }[]; cursor: string | null }>;
}

/**
 * A route's responses whose success bodies are `T` as JSON carries it. `T` is the shared type the
 * client promises (inferred from `LaneClient`), so a route answering anything else fails to compile.
 */
type Answers<T> =
  | ClientResponse<JSONParsed<T>, SuccessStatusCode, "json">
  | ClientResponse<unknown, ClientErrorStatusCode | ServerErrorStatusCode, "json">;

/** The success body of a response, or its error thrown as a `QueueError`. */
async function value<T>(pending: Promise<Answers<NoInfer<T>>>): Promise<T> {
  const response = await pending;
  const body: unknown = await response.json().catch(() => undefined);
  if (response.ok) return body as T;
  const error = (body as { error?: ErrorBody } | undefined)?.error;
  if (error && typeof error.code === "string") throw QueueError.from(error);
  throw new QueueError("internal", `HTTP ${response.status} ${response.statusText} without an API error body`);
}

/** A waitpoint's create or completion: its body, and whether it made the waitpoint (201) or found it (200). */
async function withCreated<T extends object>(pending: Promise<Answers<NoInfer<T>>>): Promise<T & { created: boolean }> {
  const response = await pending;
  return { ...(await value<T>(Promise.resolve(response))), created: response.status === 201 };
}

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const api = hc<AppType>(options.baseUrl, {
    headers: { authorization: `Bearer ${options.token}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  }).v1.lanes;
  /** A path the API answered, as a URL under `baseUrl` (its own path included) to hand out as it is. */
  const absolute = (path: string) => `${options.baseUrl.replace(/\/+$/, "")}${path}`;
  return {
    lanes: (query = {}) => value(api.$get({ query: stringify(query) })),
    lane(name) {
      const lane = api[":lane"];
      const param = { lane: segment(name, "lane") };
      const job = (id: string) => ({ ...param, id: segment(id) });
      return rejectingThrows<HttpLaneClient>({
        name,
        enqueue: (request, options = {}) => value(lane.jobs.$post({ param, query: {}, header: traceHeader(options), json: request })),
        ...jobWaits({
          enqueue: (request, options, waitMs) => value(lane.jobs.$post({ param, query: { waitMs: String(waitMs) }, header: traceHeader(options), json: request })),
          read: (id, waitMs) => value(lane.jobs[":id"].$get({ param: job(id), query: { waitMs: String(waitMs) } })),
        }),
        enqueueBatch: (request, options = {}) => value(lane.jobs.batch.$post({ param, header: traceHeader(options), json: request })),
        get: (id) => value(lane.jobs[":id"].$get({ param: job(id), query: {} })),
        list: (query = {}) => value(lane.jobs.$get({ param, query: stringify(query) })),
        info: () => value(lane.$get({ param })),
        configure: (patch) => value(lane.$patch({ param, json: patch })),
        cancel: (id, request = {}) => value(lane.jobs[":id"].cancel.$post({ param: job(id), json: request })),
        requeue: (id) => value(lane.jobs[":id"].requeue.$post({ param: job(id), json: {} })),
        sweep: (request) => value(lane.sweep.$post({ param, json: request })),
        claim: (request = {}) => value(lane.claims.$post({ param, json: request })),
        renew: (id, request) => value(lane.jobs[":id"].renew.$post({ param: job(id), json: request })),
        complete: (id, request) => value(lane.jobs[":id"].complete.$post({ param: job(id), json: request })),
        fail: (id, request) => value(lane.jobs[":id"].fail.$post({ param: job(id), json: request })),
        release: (id, request) => value(lane.jobs[":id"].release.$post({ param: job(id), json: request })),
        snooze: (id, request) => value(lane.jobs[":id"].snooze.$post({ param: job(id), json: request })),
        waitOn: (id, request) => value(lane.jobs[":id"].wait.$post({ param: job(id), json: request })),
        dependents: (id) => value(lane.jobs[":id"].dependents.$get({ param: job(id) })),
        payload: (id) => value(lane.jobs[":id"].payload.$get({ param: job(id) })) as Promise<Json>,
        result: (id) => value(lane.jobs[":id"].result.$get({ param: job(id) })) as Promise<Json>,
        failLane: (request) => value(lane.fail.$post({ param, json: request })),
        bulk: (request) => value(lane.bulk.$post({ param, json: request })),
        getBulk: (id) => value(lane.bulk[":id"].$get({ param: { ...param, id: segment(id) } })),
        queue: (queue) => value(lane.queues[":queue"].$get({ param: { ...param, queue: segment(queue, "queue") } })),
        putQueue: (queue, request) => value(lane.queues[":queue"].$put({ param: { ...param, queue: segment(queue, "queue") }, json: request })),
        purgeQueue: (queue) => value(lane.queues[":queue"].purge.$post({ param: { ...param, queue: segment(queue, "queue") }, json: {} })),
        putSchedule: (schedule, request) => value(lane.schedules[":name"].$put({ param: { ...param, name: segment(schedule, "schedule") }, json: request })),
        getSchedule: (schedule) => value(lane.schedules[":name"].$get({ param: { ...param, name: segment(schedule, "schedule") } })),
        listSchedules: (query = {}) => value(lane.schedules.$get({ param, query: stringify(query) })),
        deleteSchedule: (schedule) => value(lane.schedules[":name"].$delete({ param: { ...param, name: segment(schedule, "schedule") } })),
        acks: (request) => value(lane.acks.$post({ param, json: request })),
        saveCheckpoint: (id, name, request) => value(lane.jobs[":id"].checkpoints[":name"].$put({ param: { ...job(id), name: segment(name, "checkpoint") }, json: request })),
        checkpoints: (id) => value(lane.jobs[":id"].checkpoints.$get({ param: job(id) })),
        progress: (id, request) => value(lane.jobs[":id"].progress.$post({ param: job(id), json: request })),
        createWaitpoint: (request = {}) =>
          withCreated<{ waitpoint: Waitpoint; callbackUrl?: string }>(lane.waitpoints.$post({ param, json: request })).then((answer) =>
            answer.callbackUrl === undefined ? answer : { ...answer, callbackUrl: absolute(answer.callbackUrl) },
          ),
        link: (id, request = {}) => value<{ url: string; expiresAt: number }>(lane.jobs[":id"].link.$post({ param: job(id), json: request })).then((link) => ({ ...link, url: absolute(link.url) })),
        getWaitpoint: (id) => value(lane.waitpoints[":id"].$get({ param: { ...param, id: segment(id) } })),
        completeWaitpoint: (id, request = {}) => withCreated<{ waitpoint: Waitpoint }>(lane.waitpoints[":id"].complete.$post({ param: { ...param, id: segment(id) }, json: request })),
        listWaitpoints: (query = {}) => value(lane.waitpoints.$get({ param, query: stringify(query) })),
        writeStream: (id, request) => value(lane.jobs[":id"].stream.$post({ param: job(id), json: request })),
        // A generator of its own, so a refused id is thrown by its first next(), not by the call.
        stream: async function* (id, streamOptions = {}) {
          yield* readJobStream({
            url: `${options.baseUrl.replace(/\/+$/, "")}/v1/lanes/${param.lane}/jobs/${segment(id)}/stream`,
            headers: { authorization: `Bearer ${options.token}` },
            fetch: options.fetch ?? ((input, init) => fetch(input, init)),
            ...streamOptions,
          });
        },
      });
    },
  };
}

/** An enqueue's headers: its trace context, if any. */
function traceHeader(options: EnqueueOptions): { traceparent?: string } {
  return options.traceparent === undefined ? {} : { traceparent: options.traceparent };
}

/** Query values as the strings a URL carries; absent ones left out. */
function stringify<Q extends Record<string, unknown>>(query: Q): { [K in keyof Q]: Q[K] extends string | undefined ? Q[K] : string } {
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(query)) if (v !== undefined) out[key] = String(v);
  return out as { [K in keyof Q]: Q[K] extends string | undefined ? Q[K] : string };
}
