import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import type { Lane } from "../../src/durable/lane.js";
import type { LaneParts } from "../../src/durable/lane-parts.js";
import { MAX_ACKS, MAX_PAYLOAD_BYTES, MAX_PROGRESS_BYTES } from "../../src/shared/defaults.js";
import { claimOne, enqueue, enqueueAndClaim, expectError, get, post, PULL_KIND, setup, type LaneFixture } from "../helpers/http.js";

const acks = (lane: LaneFixture, items: unknown[]) => post(`${lane.base}/acks`, { acks: items });

/**
 * The situations a lease holder can be in, each set up in a fresh lane, with the ack to send and the
 * single route that would say the same thing. Every one is sent both ways and must answer alike.
 */
/** Job "j", enqueued and claimed: the same id in twin lanes. */
async function claimed(lane: LaneFixture, leaseMs = 30_000) {
  await enqueue(lane, { id: "j" });
  return claimOne(lane, leaseMs);
}

const situations: [string, (lane: LaneFixture) => Promise<{ ack: Record<string, unknown>; route: string; body: Record<string, unknown> }>][] = [
  ["complete with the current token", async (lane) => {
    const job = await claimed(lane);
    return single(job.id, "complete", { token: job.lease.token, result: { n: 1 } });
  }],
  ["complete repeated with the same token", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/complete`, { token: job.lease.token });
    return single(job.id, "complete", { token: job.lease.token });
  }],
  ["fail with a retry, repeated", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/fail`, { token: job.lease.token, error: "boom" });
    return single(job.id, "fail", { token: job.lease.token, error: "boom" });
  }],
  ["fail without retry", async (lane) => {
    const job = await claimed(lane);
    return single(job.id, "fail", { token: job.lease.token, error: "no", retry: false });
  }],
  ["release", async (lane) => {
    const job = await claimed(lane);
    return single(job.id, "release", { token: job.lease.token });
  }],
  ["complete after a release (the attempt is over)", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/release`, { token: job.lease.token });
    return single(job.id, "complete", { token: job.lease.token });
  }],
  ["a stale token after a renew", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/renew`, { token: job.lease.token });
    return single(job.id, "complete", { token: job.lease.token });
  }],
  ["an expired lease", async (lane) => {
    const job = await claimed(lane, 1000);
    lane.clock.advance(1000);
    return single(job.id, "fail", { token: job.lease.token, error: "late" });
  }],
  ["a settled job", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/complete`, { token: job.lease.token });
    return single(job.id, "release", { token: job.lease.token });
  }],
  ["a cancel-requested job", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/cancel`, {});
    return single(job.id, "complete", { token: job.lease.token });
  }],
  ["an unknown job", async () => single("nobody", "complete", { token: "t" })],
  ["progress with the current token", async (lane) => {
    const job = await claimed(lane);
    return single(job.id, "progress", { token: job.lease.token, progress: { done: 3 } });
  }],
  ["progress with a stale token", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/renew`, { token: job.lease.token });
    return single(job.id, "progress", { token: job.lease.token, progress: 1 });
  }],
  ["progress of a cancel-requested job", async (lane) => {
    const job = await claimed(lane);
    await post(`${lane.base}/jobs/${job.id}/cancel`, {});
    return single(job.id, "progress", { token: job.lease.token, progress: 1 });
  }],
  ["progress over 16 KiB", async (lane) => {
    const job = await claimed(lane);
    return single(job.id, "progress", { token: job.lease.token, progress: "x".repeat(MAX_PROGRESS_BYTES) });
  }],
  ["a result over 128 KiB", async (lane) => {
    const job = await claimed(lane);
    return single(job.id, "complete", { token: job.lease.token, result: "x".repeat(MAX_PAYLOAD_BYTES) });
  }],
];

function single(id: string, op: string, body: Record<string, unknown>) {
  return { ack: { op, id, ...body }, route: `jobs/${id}/${op}`, body };
}

describe("batch acks answer each item exactly as its single route would", () => {
  it.each(situations)("%s", async (_what, situation) => {
    const viaAck = await setup();
    const viaRoute = await setup();
    const { ack } = await situation(viaAck);
    const { route, body } = await situation(viaRoute);
    const single = await post(`${viaRoute.base}/${route}`, body);
    const batch = await acks(viaAck, [ack]);
    expect(batch.status).toBe(200);
    const [answer] = batch.body.results;
    expect(answer.id).toBe(ack.id);
    if (single.status === 200) expect(answer).toEqual({ id: ack.id, ok: true });
    else expect(answer).toEqual({ id: ack.id, ok: false, error: { code: single.body.error.code, message: expect.any(String) } });
    // And the job ends up as the single route left its twin.
    if (ack.id !== "nobody") {
      const [a, b] = [await get(`${viaAck.base}/jobs/${ack.id}`), await get(`${viaRoute.base}/jobs/${ack.id}`)];
      const view = (j: any) => ({ state: j.state, outcome: j.outcome, attempts: j.attempts, progress: j.progress });
      expect(view(a.body)).toEqual(view(b.body));
    }
  });
});

describe("batch acks", () => {
  it("apply complete, fail and release of several jobs in one request, answered in request order", async () => {
    const lane = await setup();
    for (const id of ["a", "b", "c", "d"]) await enqueue(lane, { id });
    const claimed = (await post(`${lane.base}/claims`, { kinds: [PULL_KIND], max: 4 })).body.jobs as { id: string; lease: { token: string } }[];
    const token = Object.fromEntries(claimed.map((j) => [j.id, j.lease.token]));
    const answer = await acks(lane, [
      { op: "complete", id: "c", token: token.c, result: "done" },
      { op: "fail", id: "a", token: token.a, error: "boom", retry: false },
      { op: "release", id: "d", token: token.d },
      { op: "complete", id: "b", token: "stale" },
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body.results.map((r: { id: string; ok: boolean; error?: { code: string } }) => [r.id, r.ok, r.error?.code])).toEqual([
      ["c", true, undefined],
      ["a", true, undefined],
      ["d", true, undefined],
      ["b", false, "lease_superseded"],
    ]);
    const jobs = Object.fromEntries(await Promise.all(["a", "b", "c", "d"].map(async (id) => [id, (await get(`${lane.base}/jobs/${id}`)).body])));
    expect(jobs.c).toMatchObject({ state: "settled", outcome: "completed", result: "done" });
    expect(jobs.a).toMatchObject({ state: "settled", outcome: "failed", error: "boom" });
    expect(jobs.d).toMatchObject({ state: "queued", attempts: 0 });
    expect(jobs.b).toMatchObject({ state: "running" });
  });

  it("apply items of one job in request order", async () => {
    const lane = await setup();
    const job = await enqueueAndClaim(lane);
    const answer = await acks(lane, [
      { op: "release", id: job.id, token: job.lease.token },
      { op: "complete", id: job.id, token: job.lease.token },
    ]);
    expect(answer.body.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false]);
    expect((await get(`${lane.base}/jobs/${job.id}`)).body).toMatchObject({ state: "queued" });
  });

  it.each([
    ["an unknown op", { op: "renew", id: "a", token: "t" }, ["acks", 1, "op"]],
    ["a missing token", { op: "complete", id: "a" }, ["acks", 1, "token"]],
    ["a fail without its error", { op: "fail", id: "a", token: "t" }, ["acks", 1, "error"]],
    ["an id that is not a name", { op: "release", id: "no way", token: "t" }, ["acks", 1, "id"]],
    ["an unknown field", { op: "release", id: "a", token: "t", extra: 1 }, ["acks", 1, "extra"]],
  ])("refuse the whole batch for %s, applying nothing", async (_what, bad, path) => {
    const lane = await setup();
    const job = await enqueueAndClaim(lane);
    const error = expectError(await acks(lane, [{ op: "complete", id: job.id, token: job.lease.token }, bad]), 400, "invalid_request");
    expect(error.details.map((d: { path: unknown[] }) => d.path)).toContainEqual(path);
    expect((await get(`${lane.base}/jobs/${job.id}`)).body).toMatchObject({ state: "running" });
  });

  it(`refuse an empty batch and one of more than ${MAX_ACKS} items`, async () => {
    const lane = await setup();
    expectError(await acks(lane, []), 400, "invalid_request");
    const many = Array.from({ length: MAX_ACKS + 1 }, (_, i) => ({ op: "release", id: `j${i}`, token: "t" }));
    expectError(await acks(lane, many), 400, "invalid_request");
    expectError(await post(`${lane.base}/acks`, { acks: "no" }), 400, "invalid_request");
  });

  it("are offered by the RPC client too", async () => {
    const lane = createLaneClient(env.LANE).lane(crypto.randomUUID());
    await lane.enqueue({ id: "a", kind: PULL_KIND });
    const [job] = (await lane.claim({ kinds: [PULL_KIND] })).jobs;
    const answer = await lane.acks({ acks: [{ op: "complete", id: "a", token: job!.lease.token, result: 7 }, { op: "release", id: "zz", token: "t" }] });
    expect(answer.results).toEqual([{ id: "a", ok: true }, { id: "zz", ok: false, error: { code: "job_not_found", message: expect.any(String) } }]);
    expect(await lane.get("a")).toMatchObject({ outcome: "completed", result: 7 });
  });
});

describe("long-poll claims over HTTP", () => {
  it("a held claim is answered by an enqueue", async () => {
    const lane = await setup();
    const held = post(`${lane.base}/claims`, { kinds: [PULL_KIND], waitMs: 20_000 });
    await get(`${lane.base}`);
    await enqueue(lane, { id: "a" });
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.body.jobs.map((j: { id: string }) => j.id)).toEqual(["a"]);
  });

  it("a held claim whose request is aborted claims nothing", async () => {
    const lane = await setup();
    const { exports } = await import("cloudflare:workers");
    const { request } = await import("../helpers/http.js");
    const controller = new AbortController();
    const { runInDurableObject } = await import("cloudflare:test");
    const heldInLane = () => runInDurableObject(lane.stub, (object: Lane) => (object as unknown as { parts: LaneParts }).parts.waiters.size);
    const held = exports.default.fetch(new Request(request("POST", `${lane.base}/claims`, { json: { kinds: [PULL_KIND], waitMs: 20_000 } }), { signal: controller.signal }));
    // Aborted once the lane holds it: before that, none held would not tell the claim gone from the
    // claim not come yet (an abort that outruns its claim: test/durable/attempts/waiters.test.ts).
    await expect.poll(heldInLane, { timeout: 5_000, interval: 20 }).toBe(1);
    controller.abort();
    await held.catch(() => undefined);
    // The abandonment reaches the lane in its own time (a loaded machine took more than one round
    // trip): the job is enqueued once the lane holds the claim no longer.
    await expect.poll(heldInLane, { timeout: 5_000, interval: 20 }).toBe(0);
    await enqueue(lane, { id: "a" });
    expect((await get(`${lane.base}/jobs/a`)).body).toMatchObject({ state: "queued", attempts: 0 });
  });
});
