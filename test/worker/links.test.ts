/**
 * Links for a browser (docs/api.md "Results"): `POST …/jobs/{id}/link` signs an expiring, read-only
 * URL of one job; the URL reads that job (and its stream) without a bearer token, from any origin,
 * and nothing else. Anything that does not verify is a 404 that says nothing about the job.
 */
import { createExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { signLink } from "../../src/worker/signing.js";
import { keyOn, setupSharded } from "../helpers/shards.js";
import { call, enqueue, expectError, get, post, PULL_KIND, read, request, setup, TOKEN, type Answer, type CallOptions, type LaneFixture } from "../helpers/http.js";

/** The workers pool's SIGNING_SECRET (vitest.config.ts). */
const SECRET = "test-signing-secret";
const HOUR_MS = 3_600_000;

const app = createApp();

/** One request through the app with `overrides` of its bindings (`undefined`: that binding unset). */
async function withEnv(overrides: Record<string, string | undefined>, method: string, path: string, options?: CallOptions): Promise<Answer> {
  return read(await app.fetch(request(method, path, options), { ...env, ...overrides }, createExecutionContext()));
}

/** A job and a link to it. */
async function linked(fixture?: LaneFixture, body: unknown = {}): Promise<{ fixture: LaneFixture; job: any; url: string; expiresAt: number }> {
  const lane = fixture ?? (await setup());
  const job = await enqueue(lane);
  const answer = await post(`${lane.base}/jobs/${job.id}/link`, body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return { fixture: lane, job, ...answer.body };
}

/** `url` with one of its path segments (from the end: 0 the signature, 1 expiresAt, 2 id, 3 lane) replaced. */
function changed(url: string, fromEnd: number, value: string): string {
  const parts = url.split("/");
  parts[parts.length - 1 - fromEnd] = value;
  return parts.join("/");
}

function expectNotFound(answer: Answer): void {
  expectError(answer, 404, "not_found");
  expect(answer.headers.get("access-control-allow-origin")).toBe("*");
}

describe("POST …/jobs/{id}/link", () => {
  it("answers a signed path to the job that expires in an hour by default", async () => {
    const before = Date.now();
    const { fixture, job, url, expiresAt } = await linked();
    expect(expiresAt).toBeGreaterThanOrEqual(before + HOUR_MS);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + HOUR_MS);
    expect(url).toBe(`/v1/links/${fixture.lane}/${job.id}/${expiresAt}/${await signLink(SECRET, fixture.lane, job.id, expiresAt)}`);
    expect(url.split("/").at(-1)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("takes ttlMs from 1 s to a day, and an empty body", async () => {
    const fixture = await setup();
    const job = await enqueue(fixture);
    for (const ttlMs of [1_000, 86_400_000]) {
      const before = Date.now();
      const answer = await post(`${fixture.base}/jobs/${job.id}/link`, { ttlMs });
      expect(answer.status).toBe(200);
      expect(answer.body.expiresAt).toBeGreaterThanOrEqual(before + ttlMs);
      expect(answer.body.expiresAt).toBeLessThanOrEqual(Date.now() + ttlMs);
    }
    expect((await post(`${fixture.base}/jobs/${job.id}/link`)).status).toBe(200);
  });

  it("refuses a ttlMs out of range, not an integer, or an unknown field", async () => {
    const fixture = await setup();
    const job = await enqueue(fixture);
    for (const body of [{ ttlMs: 999 }, { ttlMs: 86_400_001 }, { ttlMs: 1500.5 }, { ttlMs: "1000" }, { ttl: 1000 }, []]) {
      expectError(await post(`${fixture.base}/jobs/${job.id}/link`, body), 400, "invalid_request");
    }
  });

  it("answers 404 job_not_found for a job the lane does not hold", async () => {
    const fixture = await setup();
    expectError(await post(`${fixture.base}/jobs/nope/link`, {}), 404, "job_not_found");
  });

  it("answers 503 signing_not_configured without SIGNING_SECRET", async () => {
    const fixture = await setup();
    const job = await enqueue(fixture);
    for (const secret of [undefined, ""]) {
      expectError(await withEnv({ SIGNING_SECRET: secret }, "POST", `${fixture.base}/jobs/${job.id}/link`, { json: {} }), 503, "signing_not_configured");
    }
  });

  it("needs a bearer token, like every /v1 route", async () => {
    const fixture = await setup();
    const job = await enqueue(fixture);
    expectError(await call("POST", `${fixture.base}/jobs/${job.id}/link`, { token: null, json: {} }), 401, "unauthorized");
  });

  it("is allowed to producers and viewers, not to consumers", async () => {
    const fixture = await setup();
    const job = await enqueue(fixture);
    const keys = JSON.stringify([
      { token: "p-token", role: "producer" },
      { token: "v-token", role: "viewer" },
      { token: "c-token", role: "consumer" },
      { token: "other-lane-viewer", role: "viewer", lanes: ["elsewhere"] },
    ]);
    const path = `${fixture.base}/jobs/${job.id}/link`;
    for (const token of ["p-token", "v-token"]) expect((await withEnv({ API_KEYS: keys }, "POST", path, { token, json: {} })).status, token).toBe(200);
    expectError(await withEnv({ API_KEYS: keys }, "POST", path, { token: "c-token", json: {} }), 403, "forbidden");
    expectError(await withEnv({ API_KEYS: keys }, "POST", path, { token: "other-lane-viewer", json: {} }), 403, "forbidden");
  });
});

describe("GET {link}/stream", () => {
  it("streams the job's events as …/jobs/{id}/stream does, without a bearer token, to any origin", async () => {
    const { fixture, job, url } = await linked();
    await post(`${fixture.base}/jobs/${job.id}/cancel`, {});
    const response = await exports.default.fetch(request("GET", `${url}/stream`, { token: null }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const text = await response.text();
    const direct = await (await exports.default.fetch(request("GET", `${fixture.base}/jobs/${job.id}/stream`))).text();
    expect(text).toBe(direct);
    expect(text).toMatch(/^id: 1\nevent: transition\n/);
    expect(text).toContain("event: end\n");
  });

  it("resumes after Last-Event-ID or ?after, as the job's stream does", async () => {
    const { fixture, job, url } = await linked();
    await post(`${fixture.base}/jobs/${job.id}/cancel`, {});
    const after = await (await exports.default.fetch(request("GET", `${url}/stream?after=1`, { token: null }))).text();
    expect(after).not.toContain("id: 1\n");
    expect(after).toContain("event: end\n");
    const resumed = await (await exports.default.fetch(request("GET", `${url}/stream`, { token: null, headers: { "last-event-id": "1" } }))).text();
    expect(resumed).toBe(after);
    expectError(await get(`${url}/stream?after=x`, { token: null }), 400, "invalid_request");
  });

  it("is 404 not_found when the link does not verify, and never reads the stream then", async () => {
    const { url, expiresAt } = await linked();
    expectNotFound(await get(`${changed(url, 1, String(expiresAt + 1))}/stream`, { token: null }));
    expectNotFound(await withEnv({ SIGNING_SECRET: undefined }, "GET", `${url}/stream`, { token: null }));
  });
});

describe("GET {link}", () => {
  it("answers the job as GET …/jobs/{id} does, without a bearer token, to any origin", async () => {
    const { fixture, job, url } = await linked();
    const answer = await get(url, { token: null });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual((await get(`${fixture.base}/jobs/${job.id}`)).body);
    expect(answer.body.id).toBe(job.id);
    expect(answer.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("takes ?waitMs as GET …/jobs/{id} does: a settled job at once, a bad value 400", async () => {
    const { fixture, job, url } = await linked();
    await post(`${fixture.base}/jobs/${job.id}/cancel`, {});
    const held = await get(`${url}?waitMs=30000`, { token: null });
    expect(held.status).toBe(200);
    expect(held.body).toMatchObject({ id: job.id, state: "settled" });
    for (const waitMs of ["30001", "-1", "1.5", "x"]) expectError(await get(`${url}?waitMs=${waitMs}`, { token: null }), 400, "invalid_request");
  });

  it("reads a job of a sharded lane from its own shard", async () => {
    const lane = await setupSharded(4);
    for (let shard = 0; shard < 4; shard++) {
      const id = keyOn(shard, 4, "job");
      expect((await post(`${lane.base}/jobs`, { id, kind: PULL_KIND, payload: { shard } })).status).toBe(201);
      const link = await post(`${lane.base}/jobs/${id}/link`, {});
      expect(link.status).toBe(200);
      expect((await get(link.body.url, { token: null })).body).toMatchObject({ id, lane: lane.lane, payload: { shard } });
    }
    expectError(await post(`${lane.base}/jobs/${keyOn(2, 4, "nobody")}/link`, {}), 404, "job_not_found");
  });

  it("ignores an Authorization header, even a wrong one", async () => {
    const { url } = await linked();
    expect((await get(url, { token: "wrong" })).status).toBe(200);
    expect((await get(url, { token: TOKEN })).status).toBe(200);
  });

  it("answers the job as it stands, settled or not", async () => {
    const { fixture, job, url } = await linked();
    await post(`${fixture.base}/jobs/${job.id}/cancel`, {});
    const answer = await get(url, { token: null });
    expect(answer.body).toMatchObject({ id: job.id, state: "settled", outcome: "cancelled" });
  });

  it("is 404 not_found once expired", async () => {
    const fixture = await setup();
    const job = await enqueue(fixture);
    for (const expiresAt of [Date.now() - 1, Date.now() - HOUR_MS]) {
      const url = `/v1/links/${fixture.lane}/${job.id}/${expiresAt}/${await signLink(SECRET, fixture.lane, job.id, expiresAt)}`;
      expectNotFound(await get(url, { token: null }));
    }
  });

  it("is 404 not_found for a changed lane, id, expiresAt or signature, and for a malformed signature", async () => {
    const { fixture, job, url, expiresAt } = await linked();
    // The same id in another lane: a link to one never reads the other.
    const other = await setup();
    await enqueue(other, { id: job.id });
    const signature = url.split("/").at(-1)!;
    const tampered = [
      changed(url, 3, other.lane),
      changed(url, 2, `${job.id}x`),
      changed(url, 1, String(expiresAt + 1)),
      changed(url, 1, `0${expiresAt}`),
      changed(url, 0, (signature[0] === "A" ? "B" : "A") + signature.slice(1)),
      changed(url, 0, signature.slice(0, 42)),
      changed(url, 0, `${signature}A`),
      changed(url, 0, `${signature.slice(0, 42)}=`),
      changed(url, 0, "x"),
    ];
    for (const path of tampered) expectNotFound(await get(path, { token: null }));
    // The link itself still reads its job.
    expect((await get(url, { token: null })).body.lane).toBe(fixture.lane);
  });

  it("is 404 not_found without SIGNING_SECRET, and answers again once it is back", async () => {
    const { url } = await linked();
    for (const secret of [undefined, ""]) expectNotFound(await withEnv({ SIGNING_SECRET: secret }, "GET", url, { token: null }));
    expect((await withEnv({}, "GET", url, { token: null })).status).toBe(200);
  });

  it("is 404 not_found under another secret (a rotation invalidates every link)", async () => {
    const { url } = await linked();
    expectNotFound(await withEnv({ SIGNING_SECRET: "rotated-secret" }, "GET", url, { token: null }));
  });

  it("answers 503 auth_not_configured when the API has no token (fail closed)", async () => {
    const { url } = await linked();
    for (const apiToken of [undefined, ""]) expectError(await withEnv({ API_TOKEN: apiToken }, "GET", url, { token: null }), 503, "auth_not_configured");
  });

  it("has nothing else under it: other paths and methods are 404 not_found and change nothing", async () => {
    const { fixture, job, url } = await linked();
    for (const path of [`${url}/cancel`, `${url}/stream/x`, `${url}/checkpoints`, `${url}/`, url.split("/").slice(0, -1).join("/"), `/v1/links/${fixture.lane}`, "/v1/links"]) {
      expectNotFound(await get(path, { token: null }));
    }
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      for (const path of [url, `${url}/stream`, `${url}/cancel`]) expectNotFound(await call(method, path, { token: null, json: { token: "x", chunks: [1] } }));
    }
    expectNotFound(await call("POST", `${url}/cancel`, { token: null, raw: "not json", headers: { "content-type": "text/plain" } }));
    const now = await get(`${fixture.base}/jobs/${job.id}`);
    expect(now.body).toMatchObject({ state: "queued", cancelRequested: false, updatedAt: job.updatedAt });
  });

  it("answers a browser's preflight from any origin", async () => {
    const { url } = await linked();
    const answer = await call("OPTIONS", `${url}/stream`, {
      token: null,
      headers: { origin: "https://example.com", "access-control-request-method": "GET", "access-control-request-headers": "last-event-id" },
    });
    expect(answer.status).toBe(204);
    expect(answer.headers.get("access-control-allow-origin")).toBe("*");
    expect(answer.headers.get("access-control-allow-methods")).toContain("GET");
    expect(answer.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("last-event-id");
  });
});
