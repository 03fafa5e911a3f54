import { Hono } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { createLaneClient, QueueError } from "switchyard";
import type { Delivery } from "./deliver.js";

/**
 * `POST /webhooks/:topic` with a JSON event: one `webhook.deliver` job per subscriber of the topic,
 * enqueued in one batch through the RPC client (no HTTP hop). The topic is the lane; each
 * subscriber is a queue of it, so one subscriber gets its events in order and a failing one holds
 * up nobody else. An `idempotency-key` header makes a repeated POST a duplicate, not a second send.
 */
export const webhooks = new Hono<{ Bindings: Env }>();

webhooks.use(async (c, next) => {
  const token = c.env.INGEST_TOKEN;
  if (!token) throw new QueueError("auth_not_configured", "INGEST_TOKEN is not set");
  return bearerAuth<{ Bindings: Env }>({ token })(c, next);
});

webhooks.post("/:topic", async (c) => {
  const topic = c.req.param("topic");
  const subscribers: Record<string, readonly string[] | undefined> = c.env.SUBSCRIBERS;
  const urls = Object.hasOwn(subscribers, topic) ? subscribers[topic] : undefined;
  if (!urls) throw new QueueError("not_found", `no subscribers for topic ${topic}`);
  const event: unknown = await c.req.json().catch(() => {
    throw new QueueError("invalid_request", "the body must be a JSON event");
  });
  const eventId = c.req.header("idempotency-key") ?? crypto.randomUUID();

  const jobs = await Promise.all(
    urls.map(async (url) => {
      const subscriber = await subscriberKey(url);
      const payload: Delivery = { url, topic, eventId, event };
      return { id: `${eventId}.${subscriber}`, kind: "webhook.deliver", queue: subscriber, payload, maxAttempts: 10, backoff: { baseMs: 1_000, maxMs: 600_000 } };
    }),
  );
  const { results } = await createLaneClient(c.env.LANE).lane(topic).enqueueBatch({ jobs });
  return c.json({ eventId, deliveries: results }, 202);
});

/** A short stable name for a subscriber URL: job ids and queue names cannot hold a URL. */
async function subscriberKey(url: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(url)));
  return `s-${Array.from(digest.subarray(0, 8), (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}
