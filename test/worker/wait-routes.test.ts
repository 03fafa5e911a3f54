/**
 * Waiting for a job over HTTP (docs/api.md "Results"): `GET …/jobs/{id}?waitMs=` and
 * `POST …/jobs?waitMs=`, on one object and on a sharded lane, through the worker's own app.
 */
import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import { MAX_HELD_READS } from "../../src/shared/defaults.js";
import { createApp } from "../../src/worker/app.js";
import { call, claimOne, enqueue, expectError, get, post, PULL_KIND, read, request, setup, TOKEN, type LaneFixture } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

/** A request that has not been answered yet, and whether it has. */
function pending(answer: Promise<{ status: number; body: any }>) {
  const state = { answered: false };
  return { answer: answer.finally(() => (state.answered = true)), state };
}

/** Completes the running job `claimed` over HTTP. */
async function complete(base: string, claimed: { id: string; lease: { token: string } }, result: unknown = { ok: true }): Promise<void> {
  const done = await post(`${base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token, result });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
}

/** How many reads an object holds. */
function heldIn(stub: LaneFixture["stub"]): Promise<number> {
  return runInDurableObject(stub, (lane: Lane) => (lane as unknown as { rpc: { jobWaits: { held: { size: number } } } }).rpc.jobWaits.held.size);
}

const BAD_WAITS = [["text", "abc"], ["negative", "-1"], ["above 30000", "30001"], ["fractional", "1.5"], ["empty", ""], ["exponent", "1e3"]] as const;

describe("GET …/jobs/{id}?waitMs=", () => {
  it("is answered when the job settles, with the settled job", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    const held = pending(get(`${lane.base}/jobs/a?waitMs=20000`));
    const claimed = await claimOne(lane);
    await get(`${lane.base}/jobs/a`);
    expect(held.state.answered).toBe(false);
    await complete(lane.base, claimed, { n: 7 });
    const answer = await held.answer;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: "a", state: "settled", outcome: "completed", result: { n: 7 } });
  });

  it("is answered 200 with the unsettled job once waitMs passes", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    const started = Date.now();
    const answer = await get(`${lane.base}/jobs/a?waitMs=150`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: "a", state: "queued" });
  });

  it("answers at once for a settled job, for waitMs=0, and 404 for an unknown job", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    expect((await get(`${lane.base}/jobs/a?waitMs=0`)).body).toMatchObject({ id: "a", state: "queued" });
    expectError(await get(`${lane.base}/jobs/nope?waitMs=30000`), 404, "job_not_found");
    await complete(lane.base, await claimOne(lane));
    expect((await get(`${lane.base}/jobs/a?waitMs=30000`)).body).toMatchObject({ state: "settled" });
    expect(await heldIn(lane.stub)).toBe(0);
  });

  it.each(BAD_WAITS)("refuses a waitMs that is %s: 400 invalid_request", async (_name, waitMs) => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    const error = expectError(await get(`${lane.base}/jobs/a?waitMs=${waitMs}`), 400, "invalid_request");
    expect(JSON.stringify(error.details)).toContain("waitMs");
  });

  it("a read whose request is aborted leaves nothing held in the lane after its deadline", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    const controller = new AbortController();
    const held = exports.default.fetch(new Request(request("GET", `${lane.base}/jobs/a?waitMs=300`), { signal: controller.signal }));
    await get(`${lane.base}`);
    controller.abort();
    await held.catch(() => undefined);
    await expect.poll(() => heldIn(lane.stub), { timeout: 5_000, interval: 50 }).toBe(0);
  });
});

describe("a lane that holds as many reads as it may", () => {
  it("is asked again by the front worker until the job settles or waitMs passes, never a 5xx", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    await enqueue(lane, { id: "f" });
    const filled = runInDurableObject(lane.stub, (object: Lane) => {
      const waits = (object as unknown as { rpc: { jobWaits: { awaitJob(id: string, waitMs: number): unknown } } }).rpc.jobWaits;
      return Promise.all(Array.from({ length: MAX_HELD_READS }, () => waits.awaitJob("f", 30_000)));
    });
    await get(`${lane.base}`);
    expect(await heldIn(lane.stub)).toBe(MAX_HELD_READS);
    const short = await get(`${lane.base}/jobs/a?waitMs=300`);
    expect(short).toMatchObject({ status: 200, body: { id: "a", state: "queued" } });
    const held = pending(get(`${lane.base}/jobs/a?waitMs=20000`));
    const claimed = await claimOne(lane);
    await complete(lane.base, claimed);
    expect(await held.answer).toMatchObject({ status: 200, body: { id: "a", state: "settled" } });
    // The held reads of f are answered when f settles: nothing is left held.
    await complete(lane.base, await claimOne(lane));
    await filled;
    expect(await heldIn(lane.stub)).toBe(0);
  });
});

describe("POST …/jobs?waitMs=", () => {
  it("enqueues, then answers 201 queued with the job settled", async () => {
    const lane = await setup();
    const answer = await post(`${lane.base}/jobs?waitMs=20000`, { id: "e", kind: "demo.echo", payload: { hi: 1 } });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ status: "queued", job: { id: "e", state: "settled", outcome: "completed", result: { hi: 1 } } });
  });

  it("answers 201 queued with the job as it stands once waitMs passes", async () => {
    const lane = await setup();
    const answer = await post(`${lane.base}/jobs?waitMs=150`, { id: "p", kind: PULL_KIND });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ status: "queued", job: { id: "p", state: "queued" } });
  });

  it("a duplicate answers 200 duplicate, with the job once settled", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    const held = pending(post(`${lane.base}/jobs?waitMs=20000`, { id: "a", kind: PULL_KIND, payload: { n: 1 } }));
    const claimed = await claimOne(lane);
    await get(`${lane.base}/jobs/a`);
    expect(held.state.answered).toBe(false);
    await complete(lane.base, claimed);
    const answer = await held.answer;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: "duplicate", job: { id: "a", state: "settled", outcome: "completed" } });
  });

  it("a debounced enqueue answers 200 debounced, waiting for the job it names", async () => {
    const lane = await setup();
    const first = await post(`${lane.base}/jobs`, { kind: PULL_KIND, debounce: { key: "d", delayMs: 100 } });
    expect(first.status).toBe(201);
    const answer = await post(`${lane.base}/jobs?waitMs=100`, { kind: PULL_KIND, payload: { n: 2 }, debounce: { key: "d", delayMs: 100 } });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: "debounced", job: { id: first.body.job.id, state: "queued", payload: { n: 2 } } });
  });

  it("a refused enqueue answers at once (409), nothing held", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    expectError(await post(`${lane.base}/jobs?waitMs=30000`, { id: "a", kind: PULL_KIND, payload: { other: true } }), 409, "job_conflict");
    expect(await heldIn(lane.stub)).toBe(0);
  });

  it.each(BAD_WAITS)("refuses a waitMs that is %s: 400, nothing enqueued", async (_name, waitMs) => {
    const lane = await setup();
    const error = expectError(await post(`${lane.base}/jobs?waitMs=${waitMs}`, { id: "x", kind: "demo.echo" }), 400, "invalid_request");
    expect(JSON.stringify(error.details)).toContain("waitMs");
    expectError(await get(`${lane.base}/jobs/x`), 404, "job_not_found");
  });
});

describe("waiting on a lane of 4 shards", () => {
  it("a read waits on the shard of the job (a job with a queue: its queue's shard)", async () => {
    const lane = await setupSharded(4);
    const queue = keyOn(3, 4, "q");
    const id = keyOn(1, 4, "id");
    const enq = await post(`${lane.base}/jobs`, { id, kind: PULL_KIND, queue });
    expect(enq.status).toBe(201);
    const held = pending(get(`${lane.base}/jobs/${id}?waitMs=20000`));
    const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
    expect(claimed.body.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
    await get(`${lane.base}/jobs/${id}`);
    expect(held.state.answered).toBe(false);
    expect(await heldIn(lane.shard(3))).toBe(1);
    await complete(lane.base, claimed.body.jobs[0]);
    expect((await held.answer).body).toMatchObject({ id, state: "settled", outcome: "completed" });
  });

  it("an enqueue waits on its job's shard; an unknown job is 404", async () => {
    const lane = await setupSharded(4);
    const ids = [0, 1, 2, 3].map((s) => keyOn(s, 4, "e"));
    const answers = await Promise.all(ids.map((id) => post(`${lane.base}/jobs?waitMs=20000`, { id, kind: "demo.echo", payload: { id } })));
    for (const [i, answer] of answers.entries()) {
      expect(answer.status).toBe(201);
      expect(answer.body).toMatchObject({ status: "queued", job: { id: ids[i], state: "settled", result: { id: ids[i] } } });
    }
    expectError(await get(`${lane.base}/jobs/nope?waitMs=20000`), 404, "job_not_found");
    expect(await call("GET", `${lane.base}/jobs/${ids[2]}?waitMs=1`)).toMatchObject({ status: 200, body: { state: "settled" } });
  });
});

describe("who may wait", () => {
  const keys = JSON.stringify([
    { token: "w-producer", role: "producer" },
    { token: "w-consumer", role: "consumer" },
    { token: "w-viewer", role: "viewer" },
  ]);
  const app = createApp();
  const send = async (method: string, path: string, token: string, json?: unknown) =>
    read(await app.fetch(request(method, path, { token, ...(json === undefined ? {} : { json }) }), { ...env, API_TOKEN: TOKEN, API_KEYS: keys }, createExecutionContext()));

  it("producers and viewers wait on a read; a consumer reads but may not wait (403, nothing held)", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    expect((await send("GET", `${lane.base}/jobs/a?waitMs=50`, "w-producer")).status).toBe(200);
    expect((await send("GET", `${lane.base}/jobs/a?waitMs=50`, "w-viewer")).status).toBe(200);
    expect((await send("GET", `${lane.base}/jobs/a`, "w-consumer")).status).toBe(200);
    expectError(await send("GET", `${lane.base}/jobs/a?waitMs=50`, "w-consumer"), 403, "forbidden");
    expectError(await send("GET", `${lane.base}/jobs/a?waitMs=0`, "w-consumer"), 403, "forbidden");
    expect(await heldIn(lane.stub)).toBe(0);
  });

  it("a producer enqueues and waits; a viewer may do neither", async () => {
    const lane = await setup();
    expect((await send("POST", `${lane.base}/jobs?waitMs=20000`, "w-producer", { id: "e", kind: "demo.echo" })).body).toMatchObject({ status: "queued", job: { state: "settled" } });
    expectError(await send("POST", `${lane.base}/jobs?waitMs=50`, "w-viewer", { id: "v", kind: "demo.echo" }), 403, "forbidden");
  });
});
