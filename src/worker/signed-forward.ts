/**
 * What a verified signed URL stands for is answered by that route's own handler, not a copy of it:
 * a link's read by `GET …/jobs/{id}` (and its stream), a callback by `POST …/waitpoints/{id}/complete`.
 * Their routers are mounted here a second time, on an app no client can reach: it has no bearer
 * middleware, since the signature has done that work, and only the signed routes call it, each with
 * the one path and method its signature allows.
 */
import type { Context } from "hono";
import { onError, onNotFound } from "./errors.js";
import { createRouter, type AppEnv } from "./openapi.js";
import { jobRoutes } from "./routes/jobs.js";

let inner: ReturnType<typeof createRouter> | null = null;

/** The routers a signed URL may reach, built once per isolate. */
function innerApp(): ReturnType<typeof createRouter> {
  if (inner) return inner;
  const app = createRouter();
  app.onError(onError);
  app.notFound(onNotFound);
  app.route("/", jobRoutes());
  return (inner = app);
}

export interface Forwarded {
  method: "GET" | "POST";
  /** The route's path under `/v1` (`/lanes/{lane}/jobs/{id}`), its parts already verified. */
  path: string;
  /** The query to pass on (`?waitMs=…`, `?after=…`), as the client sent it. */
  search?: string;
  /** The request headers to pass on, by name (e.g. `last-event-id`); no others, never `authorization`. */
  headers?: readonly string[];
  /** A JSON body. */
  body?: string;
}

/** Answers `request` with the route it names, in this request's context (its bindings, its abort signal). */
export function forward(c: Context<AppEnv>, request: Forwarded): Promise<Response> {
  const url = new URL(`${request.path}${request.search ?? ""}`, c.req.url);
  const headers = new Headers();
  for (const name of request.headers ?? []) {
    const value = c.req.header(name);
    if (value !== undefined) headers.set(name, value);
  }
  if (request.body !== undefined) headers.set("content-type", "application/json");
  const init: RequestInit = { method: request.method, headers, signal: c.req.raw.signal };
  if (request.body !== undefined) init.body = request.body;
  return Promise.resolve(innerApp().fetch(new Request(url, init), c.env, c.executionCtx));
}

/** `encodeURIComponent` of each part, joined as a path: names are verified, but never trusted to be path-safe. */
export function pathOf(...parts: string[]): string {
  return `/${parts.map(encodeURIComponent).join("/")}`;
}
