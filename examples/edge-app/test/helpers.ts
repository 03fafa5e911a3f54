import { env, exports } from "cloudflare:workers";
import { expect, vi } from "vitest";

/** One request to the app's own default export, as the world would send it. */
export async function call(method: string, path: string, options: { token?: string | null; json?: unknown; body?: string; headers?: Record<string, string> } = {}) {
  const headers = new Headers(options.headers);
  if (options.token !== null) headers.set("authorization", `Bearer ${options.token ?? "api-token"}`);
  let body = options.body;
  if (options.json !== undefined) {
    headers.set("content-type", "application/json");
    body = JSON.stringify(options.json);
  }
  const response = await exports.default.fetch(`https://app.test${path}`, { method, headers, body });
  return { status: response.status, body: (await response.json()) as any };
}

/** POST /webhooks/:topic with the ingest token, under a fresh idempotency key unless one is given. */
export function publish(topic: string, event: unknown, eventId: string = crypto.randomUUID()) {
  return call("POST", `/webhooks/${topic}`, { token: "ingest-token", json: event, headers: { "idempotency-key": eventId } });
}

export interface Delivery {
  url: string;
  topic: string;
  attempt: number;
  signature: string;
  body: string;
  status: number | null;
  aborted: boolean;
}

/** What reached the stub subscribers for an event, in order. */
export async function deliveries(eventId: string): Promise<Delivery[]> {
  return (await env.SUBSCRIBERS_LOG.fetch(`https://subscribers.test/log?event=${eventId}`)).json();
}

/**
 * Resolves once `check` passes. Deliveries cross a real fetch into another Worker and retries wait
 * for the lane's real alarm, so there is no in-isolate event to await: this asks again until then.
 */
export function eventually<T>(check: () => Promise<T>): Promise<T> {
  return vi.waitFor(check, { timeout: 30_000, interval: 25 });
}

/** The job once it has settled, read through the queue's own /v1 API. */
export function settledJob(lane: string, id: string) {
  return eventually(async () => {
    const { body } = await call("GET", `/v1/lanes/${lane}/jobs/${id}`);
    expect(body.state).toBe("settled");
    return body;
  });
}
