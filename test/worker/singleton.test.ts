/**
 * `singleton` and `queueDefaults` over HTTP (docs/api.md "Singleton", "The lane", "Queues"), on a
 * lane of one object and on a sharded lane, where a job routes by its queue and so its singleton
 * holds in the one shard that owns the queue.
 */
import { describe, expect, it } from "vitest";
import { call, claimOne, enqueue, expectError, get, post, setup, PULL_KIND } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

const job = (spec: Record<string, unknown>) => ({ kind: PULL_KIND, payload: {}, ...spec });

describe("singleton over HTTP", () => {
  it("answers 200 skipped naming the job that holds the queue, and ?waitMs waits for that job", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a", queue: "q" });
    const claimed = await claimOne(lane);
    const skipped = await post(`${lane.base}/jobs`, job({ id: "b", queue: "q", singleton: "skip" }));
    expect(skipped.status).toBe(200);
    expect(skipped.body).toMatchObject({ status: "skipped", job: { id: "a", state: "running" } });
    const held = post(`${lane.base}/jobs?waitMs=10000`, job({ id: "c", queue: "q", singleton: "skip" }));
    expect((await post(`${lane.base}/jobs/a/complete`, { token: claimed.lease.token, result: 7 })).status).toBe(200);
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: "skipped", job: { id: "a", state: "settled", outcome: "completed", result: 7 } });
    expect((await get(`${lane.base}/jobs?queue=q`)).body.jobs.map((j: { id: string }) => j.id)).toEqual(["a"]);
    expect((await get(lane.base)).body.stats.enqueued).toBe(1);
  });

  it("answers 201 with cancelling for cancel-running, and the lease holder hears 409 job_cancelled", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a", queue: "q" });
    const claimed = await claimOne(lane);
    const answer = await post(`${lane.base}/jobs`, job({ id: "b", queue: "q", singleton: "cancel-running" }));
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ status: "queued", job: { id: "b", state: "queued" }, cancelling: ["a"] });
    expectError(await post(`${lane.base}/jobs/a/renew`, { token: claimed.lease.token }), 409, "job_cancelled");
  });

  it("refuses singleton without a queue or with debounce: 400 naming singleton, nothing enqueued", async () => {
    const lane = await setup();
    for (const body of [job({ singleton: "skip" }), job({ queue: "q", singleton: "skip", debounce: { key: "d", delayMs: 1 } })]) {
      const refused = expectError(await post(`${lane.base}/jobs`, body), 400, "invalid_request");
      expect(JSON.stringify(refused.details)).toContain("singleton");
    }
    const batch = expectError(await post(`${lane.base}/jobs/batch`, { jobs: [job({ queue: "q" }), job({ singleton: "cancel-running" })] }), 400, "invalid_request");
    expect(JSON.stringify(batch.details)).toContain("singleton");
    expect((await get(`${lane.base}/jobs`)).body.jobs).toEqual([]);
  });

  it("holds on a sharded lane, in the shard that owns the queue, whatever shard the id's home is", async () => {
    const lane = await setupSharded(4);
    const queue = keyOn(2, 4, "tenant");
    const first = await post(`${lane.base}/jobs`, job({ id: keyOn(1, 4, "id"), queue, singleton: "skip" }));
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const second = await post(`${lane.base}/jobs`, job({ id: keyOn(3, 4, "id"), queue, singleton: "skip" }));
    expect(second.body).toMatchObject({ status: "skipped", job: { id: first.body.job.id } });
    const batch = await post(`${lane.base}/jobs/batch`, { jobs: [job({ id: "x1", queue, singleton: "skip" }), job({ id: "x2", queue: "other", singleton: "skip" })] });
    expect(batch.body.results).toEqual([{ id: first.body.job.id, status: "skipped" }, { id: "x2", status: "queued" }]);
    // The skipped id names no job: enqueued later without singleton, it is a new job.
    const later = await post(`${lane.base}/jobs`, job({ id: keyOn(3, 4, "id"), queue: "else" }));
    expect(later.status, JSON.stringify(later.body)).toBe(201);
    expect((await get(lane.base)).body.stats.enqueued).toBe(3);
  });
});

describe("queueDefaults over HTTP", () => {
  it("are shown on the lane, merged by PATCH, and a queue's GET and PUT show the effective values", async () => {
    const lane = await setup();
    expect((await get(lane.base)).body.queueDefaults).toEqual({ concurrency: 1, rateLimit: null });
    const set = await call("PATCH", lane.base, { json: { queueDefaults: { concurrency: 4, rateLimit: { limit: 3, periodMs: 1_000 } } } });
    expect(set.status).toBe(200);
    expect(set.body.queueDefaults).toEqual({ concurrency: 4, rateLimit: { limit: 3, periodMs: 1_000 } });
    expect((await call("PATCH", lane.base, { json: { queueDefaults: { concurrency: 2 } } })).body.queueDefaults).toEqual({ concurrency: 2, rateLimit: { limit: 3, periodMs: 1_000 } });
    expect((await get(`${lane.base}/queues/t1`)).body).toMatchObject({ concurrency: 2, rateLimit: { limit: 3, periodMs: 1_000 } });
    expect((await call("PUT", `${lane.base}/queues/t2`, { json: { concurrency: 9 } })).body).toMatchObject({ concurrency: 9, rateLimit: { limit: 3, periodMs: 1_000 } });
  });

  it("refuses a value out of range or an unknown field with 400 naming it, changing nothing", async () => {
    const lane = await setup();
    for (const queueDefaults of [{ concurrency: 0 }, { concurrency: 1001 }, { rateLimit: { limit: 1, periodMs: 1 } }, { weight: 2 }]) {
      const refused = expectError(await call("PATCH", lane.base, { json: { queueDefaults, paused: true } }), 400, "invalid_request");
      expect(JSON.stringify(refused.details)).toContain("queueDefaults");
    }
    const info = (await get(lane.base)).body;
    expect(info).toMatchObject({ paused: false, queueDefaults: { concurrency: 1, rateLimit: null } });
  });

  it("reach every shard of a sharded lane, and carry over a change of the shard count", async () => {
    const lane = await setupSharded(2);
    expect((await call("PATCH", lane.base, { json: { queueDefaults: { concurrency: 3 } } })).status).toBe(200);
    for (const target of [0, 1]) {
      const queue = keyOn(target, 2, "t");
      expect((await get(`${lane.base}/queues/${queue}`)).body.concurrency).toBe(3);
    }
    const resharded = await call("PATCH", lane.base, { json: { shards: 3 } });
    expect(resharded.status, JSON.stringify(resharded.body)).toBe(200);
    expect(resharded.body.queueDefaults).toEqual({ concurrency: 3, rateLimit: null });
    expect((await get(`${lane.base}/queues/${keyOn(2, 3, "t")}`)).body.concurrency).toBe(3);
  });
});
