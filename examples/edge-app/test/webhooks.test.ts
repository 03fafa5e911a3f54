import { describe, expect, it } from "vitest";
import { call, deliveries, eventually, publish, settledJob } from "./helpers.js";

/** A signature as a subscriber checks it, with the secret vitest.config.ts gives the app. */
async function verify(signature: string, eventId: string, body: string): Promise<boolean> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode("webhook-secret"), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const mac = Uint8Array.from(signature.replace(/^v1=/, "").match(/../g) ?? [], (hex) => Number.parseInt(hex, 16));
  return crypto.subtle.verify("HMAC", key, mac, new TextEncoder().encode(`${eventId}.${body}`));
}

describe("POST /webhooks/:topic", () => {
  it("delivers the event, signed, to every subscriber of its topic", async () => {
    const eventId = crypto.randomUUID();
    const { status, body } = await publish("orders", { order: 42, total: "19.90" }, eventId);
    expect(status).toBe(202);
    expect(body.eventId).toBe(eventId);
    expect(body.deliveries.map((d: { status: string }) => d.status)).toEqual(["queued", "queued"]);

    for (const { id } of body.deliveries) {
      const job = await settledJob("orders", id);
      expect(job).toMatchObject({ outcome: "completed", attempts: 1, result: { status: 200, attempt: 1 } });
    }
    const arrived = await deliveries(eventId);
    expect(arrived.map((d) => d.url).sort()).toEqual(["https://billing.test/ok", "https://crm.test/ok"]);
    for (const delivery of arrived) {
      expect(delivery).toMatchObject({ topic: "orders", attempt: 1, body: '{"order":42,"total":"19.90"}', status: 200 });
      expect(await verify(delivery.signature, eventId, delivery.body)).toBe(true);
    }
  });

  it("answers a repeated event as a duplicate and enqueues nothing new", async () => {
    const eventId = crypto.randomUUID();
    const first = await publish("orders", { order: 7 }, eventId);
    const again = await publish("orders", { order: 7 }, eventId);
    expect(again.status).toBe(202);
    expect(again.body.deliveries).toEqual(first.body.deliveries.map((d: { id: string }) => ({ id: d.id, status: "duplicate" })));
    const { body } = await call("GET", "/v1/lanes/orders/jobs?limit=500");
    expect(body.jobs.filter((job: { id: string }) => job.id.startsWith(`${eventId}.`))).toHaveLength(2);
  });

  it("retries a subscriber that answers 5xx until it takes the event", async () => {
    const eventId = crypto.randomUUID();
    const { body } = await publish("invoices", { invoice: "INV-9" }, eventId);
    const job = await settledJob("invoices", body.deliveries[0].id);
    expect(job).toMatchObject({ outcome: "completed", attempts: 3, result: { status: 200, attempt: 3 } });
    expect((await deliveries(eventId)).map((d) => [d.attempt, d.status])).toEqual([
      [1, 503],
      [2, 503],
      [3, 200],
    ]);
  });

  it("gives up at once on a subscriber that refuses the event with a 4xx", async () => {
    const eventId = crypto.randomUUID();
    const { body } = await publish("leads", { lead: 1 }, eventId);
    const job = await settledJob("leads", body.deliveries[0].id);
    expect(job).toMatchObject({ outcome: "failed", attempts: 1, error: "subscriber refused the event: HTTP 410" });
    expect(await deliveries(eventId)).toHaveLength(1);
  });

  it("aborts the request in flight when its delivery is cancelled", async () => {
    const eventId = crypto.randomUUID();
    const { body } = await publish("shipments", { parcel: "P-1" }, eventId);
    const id: string = body.deliveries[0].id;
    await eventually(async () => expect(await deliveries(eventId)).toHaveLength(1));

    const cancel = await call("POST", `/v1/lanes/shipments/jobs/${id}/cancel`, { json: { reason: "parcel lost" } });
    expect(cancel.status).toBe(202);
    expect(cancel.body.status).toBe("cancelling");
    expect(await settledJob("shipments", id)).toMatchObject({ outcome: "cancelled" });
    await eventually(async () => expect((await deliveries(eventId))[0]).toMatchObject({ aborted: true, status: null }));
  });
});

describe("refusals", () => {
  it("refuses a topic nobody subscribes to with 404, enqueueing nothing", async () => {
    const { status, body } = await publish("unheard-of", { x: 1 });
    expect(status).toBe(404);
    expect(body.error.code).toBe("not_found");
    expect((await call("GET", "/v1/lanes/unheard-of")).body.counts.queued).toBe(0);
  });

  it("refuses a missing or wrong ingest token with 401", async () => {
    const missing = await call("POST", "/webhooks/orders", { token: null, json: { x: 1 } });
    const wrong = await call("POST", "/webhooks/orders", { token: "api-token", json: { x: 1 } });
    expect([missing.status, wrong.status]).toEqual([401, 401]);
  });

  it("refuses a body that is not JSON, and an idempotency key no job id can hold, with 400", async () => {
    const notJson = await call("POST", "/webhooks/orders", { token: "ingest-token", body: "order=42", headers: { "content-type": "text/plain" } });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe("invalid_request");
    const badKey = await publish("orders", { x: 1 }, "not a key!");
    expect(badKey.status).toBe(400);
    expect(badKey.body.error.code).toBe("invalid_request");
  });

  it("keeps the queue's /v1 API behind its own token", async () => {
    expect((await call("GET", "/v1/lanes/orders", { token: "ingest-token" })).status).toBe(401);
    expect((await call("GET", "/v1/lanes/orders")).status).toBe(200);
  });
});
