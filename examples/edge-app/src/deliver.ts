import { NonRetryableError, RetryAfterError, type Executor } from "switchyard";

/** The payload of a `webhook.deliver` job: one event for one subscriber. */
export interface Delivery {
  url: string;
  topic: string;
  eventId: string;
  event: unknown;
}

/**
 * POSTs the event to the subscriber, signed. 2xx: delivered. 429: again when `retry-after` says.
 * Another 4xx: the subscriber will never take it, so no retry. 5xx or a network error: retried
 * with backoff. The signal aborts the request when the job is cancelled or times out.
 */
export const deliver: Executor<Env> = async (delivery: Delivery, { signal, attempt, env }) => {
  const body = JSON.stringify(delivery.event);
  const response = await fetch(delivery.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": delivery.eventId,
      "webhook-topic": delivery.topic,
      "webhook-attempt": String(attempt),
      "webhook-signature": await sign(env.WEBHOOK_SECRET, `${delivery.eventId}.${body}`),
    },
    body,
    signal,
  });
  await response.body?.cancel(); // only the status matters
  if (response.ok) return { status: response.status, attempt };
  if (response.status === 429) throw new RetryAfterError("subscriber busy", retryAfterMs(response.headers.get("retry-after")));
  if (response.status < 500) throw new NonRetryableError(`subscriber refused the event: HTTP ${response.status}`);
  throw new Error(`subscriber failed: HTTP ${response.status}`);
};

/** `v1=<hex HMAC-SHA256 of "<event id>.<body>">`, the scheme subscribers verify. */
export async function sign(secret: string | undefined, message: string): Promise<string> {
  if (!secret) throw new NonRetryableError("WEBHOOK_SECRET is not set: refusing to send unsigned events");
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
  return `v1=${Array.from(mac, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

function retryAfterMs(header: string | null): number {
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 60_000;
}
