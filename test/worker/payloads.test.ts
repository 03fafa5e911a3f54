import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/shared/clock.js";
import { MAX_BODY_BYTES } from "../../src/shared/defaults.js";
import { MAX_HELD_BODY_BYTES } from "../../src/shared/payload-ref.js";
import { inject } from "../helpers/lane.js";
import { PAYLOADS_LANE_PREFIX } from "../helpers/test-worker.js";
import { PULL_KIND, T0, expectError, get, post, request, read } from "../helpers/http.js";

/** A lane that sees the PAYLOADS bucket (its name's prefix: test-worker.ts). */
async function setup() {
  const lane = `${PAYLOADS_LANE_PREFIX}${crypto.randomUUID()}`;
  await inject(env.LANE.getByName(lane), new ManualClock(T0));
  return { lane, base: `/v1/lanes/${lane}` };
}

/** A payload whose JSON is about `mib` MiB, with some characters that JSON escapes. */
const big = (mib: number) => ({ text: "é\"x".repeat(Math.floor((mib * 1024 * 1024) / 5)), n: 1 });

describe("big payloads over HTTP", () => {
  it("enqueues a 2 MiB payload, answers it whole, leaves it out of a list and streams it from …/payload", async () => {
    const { base } = await setup();
    const payload = big(2);
    const created = await post(`${base}/jobs`, { id: "a", kind: PULL_KIND, payload });
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(201);
    expect(created.body.job.payload).toEqual(payload);
    expect(created.body.job.payloadRef).toBeNull();
    expect((await get(`${base}/jobs/a`)).body.payload).toEqual(payload);
    const listed = (await get(`${base}/jobs`)).body.jobs[0];
    expect(listed.payload).toBeNull();
    expect(listed.payloadRef).toEqual({ bytes: new TextEncoder().encode(JSON.stringify(payload)).byteLength });
    const streamed = await exports.default.fetch(request("GET", `${base}/jobs/a/payload`));
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toBe("application/json");
    expect(await streamed.text()).toBe(JSON.stringify(payload));
    expect((await read(await exports.default.fetch(request("GET", `${base}/jobs/a/result`)))).body).toBeNull();
  });

  it("completes with a 2 MiB result, streamed from …/result; a small payload streams from the row", async () => {
    const { base } = await setup();
    expect((await post(`${base}/jobs`, { id: "a", kind: PULL_KIND, payload: { b: [1, 2] } })).status).toBe(201);
    const [claimed] = (await post(`${base}/claims`, { kinds: [PULL_KIND] })).body.jobs;
    const result = big(2);
    const done = await post(`${base}/jobs/a/complete`, { token: claimed.lease.token, result });
    expect(done.status).toBe(200);
    expect(done.body.job.result).toEqual(result);
    expect((await get(`${base}/jobs`)).body.jobs[0].resultRef).toEqual({ bytes: expect.any(Number) });
    expect(await (await exports.default.fetch(request("GET", `${base}/jobs/a/result`))).text()).toBe(JSON.stringify(result));
    expect(await (await exports.default.fetch(request("GET", `${base}/jobs/a/payload`))).text()).toBe('{"b":[1,2]}');
  });

  it("takes a single enqueue's body up to 17 MiB, other bodies up to 1 MiB (413 naming the limit)", async () => {
    const { base } = await setup();
    const batch = await post(`${base}/jobs/batch`, { jobs: [{ kind: PULL_KIND, payload: "x".repeat(MAX_BODY_BYTES) }] });
    expect(expectError(batch, 413, "payload_too_large").message).toContain(String(MAX_BODY_BYTES));
    const huge = await post(`${base}/jobs`, { kind: PULL_KIND, payload: "x".repeat(MAX_HELD_BODY_BYTES) });
    expect(expectError(huge, 413, "payload_too_large").message).toContain(String(MAX_HELD_BODY_BYTES));
    expect((await get(`${base}/jobs`)).body.jobs).toEqual([]);
  });

  it("answers 404 job_not_found for the payload or result of an unknown job", async () => {
    const { base } = await setup();
    expectError(await get(`${base}/jobs/nope/payload`), 404, "job_not_found");
    expectError(await get(`${base}/jobs/nope/result`), 404, "job_not_found");
  });
});
