import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_BODY_BYTES, MAX_PAYLOAD_BYTES } from "../../src/shared/defaults.js";
import { QueueError } from "../../src/shared/errors.js";
import { createApp } from "../../src/worker/app.js";
import { MAX_BODY_DEPTH } from "../../src/shared/defaults.js";
import { call, enqueue, expectError, get, post, PULL_KIND, read, request, setup, TOKEN } from "../helpers/http.js";

const json = { "content-type": "application/json" };

describe("invalid_request", () => {
  it("lists every problem of a body with its path", async () => {
    const lane = await setup();
    const answer = await post(`${lane.base}/jobs`, { kind: "bad kind", maxAttempts: 0, runAt: 1, delayMs: 1, colour: "red" });
    const error = expectError(answer, 400, "invalid_request");
    expect(error.details).toEqual(
      expect.arrayContaining([
        { path: ["kind"], message: expect.any(String) },
        { path: ["maxAttempts"], message: expect.any(String) },
        { path: ["colour"], message: expect.any(String) },
      ]),
    );
    expect((await get(lane.base)).body.counts.queued).toBe(0);
  });

  it("names a nested problem by its full path", async () => {
    const lane = await setup();
    const error = expectError(await post(`${lane.base}/jobs`, { kind: PULL_KIND, backoff: { baseMs: 10, maxMs: 5 } }), 400, "invalid_request");
    expect(error.details).toEqual([{ path: ["backoff", "maxMs"], message: expect.any(String) }]);
  });

  it("refuses both runAt and delayMs", async () => {
    const lane = await setup();
    const error = expectError(await post(`${lane.base}/jobs`, { kind: PULL_KIND, runAt: 1, delayMs: 1 }), 400, "invalid_request");
    expect(error.details).toEqual([{ path: ["delayMs"], message: expect.any(String) }]);
  });

  it("refuses a lane name that breaks the pattern", async () => {
    for (const lane of ["-lead-dash", "a%20b", "x".repeat(129), "%C3%A9t%C3%A9"]) {
      const error = expectError(await post(`/v1/lanes/${lane}/jobs`, { kind: PULL_KIND }), 400, "invalid_request");
      expect(error.details).toEqual([{ path: ["lane"], message: expect.any(String) }]);
    }
  });

  it("refuses a job id that breaks the pattern", async () => {
    const lane = await setup();
    const error = expectError(await get(`${lane.base}/jobs/${"j".repeat(129)}`), 400, "invalid_request");
    expect(error.details).toEqual([{ path: ["id"], message: expect.any(String) }]);
  });

  it("refuses malformed JSON", async () => {
    const lane = await setup();
    for (const raw of ["{", '{"kind": "a",}', "undefined", "\u00ff"]) {
      const error = expectError(await call("POST", `${lane.base}/jobs`, { raw, headers: json }), 400, "invalid_request");
      expect(error.details).toEqual([{ path: [], message: expect.any(String) }]);
    }
  });

  it("refuses JSON that is not an object", async () => {
    const lane = await setup();
    for (const body of [[], 1, "text", null]) {
      expectError(await post(`${lane.base}/jobs`, body), 400, "invalid_request");
    }
  });

  it("refuses a body nested deeper than 128 levels, which RPC could not carry", async () => {
    const lane = await setup();
    const nest = (depth: number) => `{"kind":"${PULL_KIND}","payload":${"[".repeat(depth - 1)}"[{"${"]".repeat(depth - 1)}}`;
    expect((await call("POST", `${lane.base}/jobs`, { raw: nest(MAX_BODY_DEPTH), headers: json })).status).toBe(201);
    for (const depth of [MAX_BODY_DEPTH + 1, 5000, MAX_BODY_BYTES / 4]) {
      const error = expectError(await call("POST", `${lane.base}/jobs`, { raw: nest(depth), headers: json }), 400, "invalid_request");
      expect(error.message).toContain("deeper");
    }
  });
});

describe("not_found", () => {
  it("answers an unknown route, authenticated or not", async () => {
    expectError(await get("/nope"), 404, "not_found");
    expectError(await get("/v1/nope"), 404, "not_found");
    expectError(await call("DELETE", "/v1/lanes/a/jobs/b"), 404, "not_found");
  });
});

describe("unsupported_media_type", () => {
  it("refuses a body that is not application/json", async () => {
    const lane = await setup();
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const answer = await call("POST", `${lane.base}/jobs`, { raw: `{"kind":"${PULL_KIND}"}`, headers: { "content-type": contentType } });
      expectError(answer, 415, "unsupported_media_type");
    }
    expectError(await call("POST", `${lane.base}/jobs`, { raw: `{"kind":"${PULL_KIND}"}` }), 415, "unsupported_media_type");
    expect((await get(lane.base)).body.counts.queued).toBe(0);
  });

  it("refuses a request with no body where the route requires one", async () => {
    const lane = await setup();
    expectError(await call("POST", `${lane.base}/jobs`), 415, "unsupported_media_type");
    expectError(await call("POST", `${lane.base}/sweep`, { raw: "" }), 415, "unsupported_media_type");
  });

  it("takes an empty body sent as JSON for an empty object", async () => {
    const lane = await setup();
    const error = expectError(await call("POST", `${lane.base}/jobs`, { raw: "", headers: json }), 400, "invalid_request");
    expect(error.details).toEqual([{ path: ["kind"], message: expect.any(String) }]);
  });

  it("refuses a non-JSON content type even where the body is optional", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    expectError(await call("POST", `${lane.base}/jobs/${job.id}/cancel`, { raw: "x", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
    expect((await get(`${lane.base}/jobs/${job.id}`)).body.state).toBe("queued");
  });

  it("accepts a JSON media type with parameters or a +json suffix", async () => {
    const lane = await setup();
    for (const contentType of ["application/json; charset=utf-8", "application/vnd.switchyard+json"]) {
      const answer = await call("POST", `${lane.base}/jobs`, { raw: `{"kind":"${PULL_KIND}"}`, headers: { "content-type": contentType } });
      expect(answer.status).toBe(201);
    }
  });
});

describe("payload_too_large", () => {
  it("refuses a payload over 128 KiB serialized, before the lane", async () => {
    const lane = await setup();
    const payload = "x".repeat(MAX_PAYLOAD_BYTES);
    expectError(await post(`${lane.base}/jobs`, { kind: PULL_KIND, payload }), 413, "payload_too_large");
    expect((await get(lane.base)).body.counts.queued).toBe(0);
  });

  it("accepts a payload of exactly 128 KiB serialized", async () => {
    const lane = await setup();
    const payload = "x".repeat(MAX_PAYLOAD_BYTES - 2);
    expect((await post(`${lane.base}/jobs`, { kind: PULL_KIND, payload })).status).toBe(201);
  });

  it("names the batch item whose payload is too large", async () => {
    const lane = await setup();
    const jobs = [{ kind: PULL_KIND }, { kind: PULL_KIND, payload: "x".repeat(MAX_PAYLOAD_BYTES) }];
    expect(expectError(await post(`${lane.base}/jobs/batch`, { jobs }), 413, "payload_too_large").details).toEqual({ index: 1 });
  });

  it("refuses a body over 1 MiB by its Content-Length", async () => {
    const lane = await setup();
    const raw = JSON.stringify({ kind: PULL_KIND, payload: "x".repeat(MAX_BODY_BYTES) });
    // A batch's body: a single enqueue's may reach 17 MiB where the worker binds PAYLOADS (test/worker/payloads.test.ts).
    const sent = request("POST", `${lane.base}/jobs/batch`, { raw, headers: { ...json, "content-length": String(raw.length) } });
    expect(expectError(await read(await fetchWorker(sent)), 413, "payload_too_large").message).toContain(String(MAX_BODY_BYTES));
  });

  it("refuses a body over 1 MiB that declares no length, by the bytes read", async () => {
    const lane = await setup();
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > MAX_BODY_BYTES) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    // A batch's, as above.
    const streamed = new Request(`http://switchyard.test${lane.base}/jobs/batch`, {
      method: "POST",
      headers: { ...json, authorization: `Bearer ${TOKEN}` },
      body: stream,
    });
    expect(streamed.headers.has("content-length")).toBe(false);
    expect(expectError(await read(await fetchWorker(streamed)), 413, "payload_too_large").message).toContain(String(MAX_BODY_BYTES));
  });
});

describe("internal", () => {
  afterEach(() => vi.restoreAllMocks());

  it("answers 500 internal with no stack, and logs the error as one JSON line", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const app = createApp();
    app.get("/boom", () => {
      throw new Error("kaput at secret place");
    });
    const answer = await read(await app.fetch(new Request("http://x/boom"), env, createExecutionContext()));
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({ error: { code: "internal", message: "internal error" } });
    expect(logged).toHaveBeenCalledTimes(1);
    const line = JSON.parse(logged.mock.calls[0]![0] as string);
    expect(line).toMatchObject({ event: "http.internal_error", method: "GET", path: "/boom", message: "kaput at secret place" });
  });

  it("treats an internal refusal as a bug too: logged, and answered without its message", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const app = createApp();
    app.get("/lane-bug", () => {
      throw new QueueError("internal", "renew cannot be idempotent");
    });
    const answer = await read(await app.fetch(new Request("http://x/lane-bug"), env, createExecutionContext()));
    expect(answer).toMatchObject({ status: 500, body: { error: { code: "internal", message: "internal error" } } });
    expect(logged).toHaveBeenCalledTimes(1);
  });
});

async function fetchWorker(req: Request): Promise<Response> {
  const { exports } = await import("cloudflare:workers");
  return exports.default.fetch(req);
}
