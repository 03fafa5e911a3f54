import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ShardRouter } from "../../src/routing/router.js";
import { DEFAULT_COMPLETED_RETENTION_MS, DEFAULT_FAILED_RETENTION_MS } from "../../src/shared/defaults.js";
import { call, enqueue, enqueueAndClaim, expectError, get, post, PULL_KIND, setup, T0 } from "../helpers/http.js";

const zeroCounts = { blocked: 0, queued: 0, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 };

describe("a lane", () => {
  it("answers its counts, settings and next wake", async () => {
    const lane = await setup();
    await enqueue(lane);
    await enqueueAndClaim(lane, 5000);
    const answer = await get(lane.base);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      lane: lane.lane,
      counts: { ...zeroCounts, queued: 1, running: 1 },
      paused: false,
      concurrency: 10,
      nextWakeAt: T0 + 5000,
      retention: { completedMs: DEFAULT_COMPLETED_RETENTION_MS, failedMs: DEFAULT_FAILED_RETENTION_MS },
      stats: { enqueued: 2, claimed: 1, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0, deadLettered: 0, waitpointsCompleted: 0, waitpointsTimedOut: 0 },
      oldestDueAt: T0,
      kinds: { [PULL_KIND]: { queued: 1, running: 1 } },
      rateLimit: null,
      fairness: "fifo",
      deadLetter: null,
      shards: 1,
      waitpoints: { pending: 0 },
      queueDefaults: { concurrency: 1, rateLimit: null },
    });
  });

  it("PATCH sets concurrency and pause, and answers the lane as it is now", async () => {
    const lane = await setup();
    const answer = await call("PATCH", lane.base, { json: { concurrency: 3, paused: true } });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ lane: lane.lane, paused: true, concurrency: 3 });
    expect((await get(lane.base)).body).toMatchObject({ paused: true, concurrency: 3 });
  });

  it("a paused lane hands out no claims", async () => {
    const lane = await setup();
    await enqueue(lane);
    await call("PATCH", lane.base, { json: { paused: true } });
    expect((await post(`${lane.base}/claims`)).body).toEqual({ jobs: [] });
  });

  it("PATCH with no body changes nothing", async () => {
    const lane = await setup();
    const answer = await call("PATCH", lane.base);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ paused: false, concurrency: 10 });
  });

  it("PATCH refuses out-of-range and mistyped settings, naming each", async () => {
    const lane = await setup();
    const error = expectError(await call("PATCH", lane.base, { json: { concurrency: 0, paused: "yes" } }), 400, "invalid_request");
    expect(error.details.map((d: { path: unknown[] }) => d.path)).toEqual([["concurrency"], ["paused"]]);
    expect((await get(lane.base)).body).toMatchObject({ paused: false, concurrency: 10 });
  });
});

describe("sweep", () => {
  it("deletes settled jobs settled before the instant, and nothing else", async () => {
    const lane = await setup();
    const old = await enqueue(lane, { id: "old" });
    await post(`${lane.base}/jobs/${old.id}/cancel`);
    lane.clock.advance(1000);
    const recent = await enqueue(lane, { id: "recent" });
    await post(`${lane.base}/jobs/${recent.id}/cancel`);
    await enqueue(lane, { id: "queued" });
    const answer = await post(`${lane.base}/sweep`, { settledBefore: T0 + 500 });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ removed: 1, waitpointsRemoved: 0 });
    expectError(await get(`${lane.base}/jobs/old`), 404, "job_not_found");
    expect((await get(`${lane.base}/jobs/recent`)).status).toBe(200);
  });

  it("requires settledBefore", async () => {
    const lane = await setup();
    expect(expectError(await post(`${lane.base}/sweep`, {}), 400, "invalid_request").details).toEqual([
      { path: ["settledBefore"], message: expect.any(String) },
    ]);
  });
});

describe("the list of lanes", () => {
  it("lists every lane that has had a job, with its counts, page by page", async () => {
    const prefix = `p${crypto.randomUUID()}`;
    const names = [`${prefix}-1`, `${prefix}-2`, `${prefix}-3`];
    for (const name of names) {
      expect((await post(`/v1/lanes/${name}/jobs`, { kind: "email.send" })).status).toBe(201);
    }
    // Cursors are exclusive lane names: start just before this test's lanes, whatever else exists.
    const first = await get(`/v1/lanes?limit=2&cursor=${prefix}-0`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      lanes: [
        { lane: names[0], counts: { ...zeroCounts, queued: 1 } },
        { lane: names[1], counts: { ...zeroCounts, queued: 1 } },
      ],
      cursor: names[1],
    });
    const second = await get(`/v1/lanes?limit=1&cursor=${first.body.cursor}`);
    expect(second.body.lanes).toEqual([{ lane: names[2], counts: { ...zeroCounts, queued: 1 } }]);
  });

  it("answers null as the cursor of the last page", async () => {
    const answer = await get(`/v1/lanes?cursor=zzzzzzzz`);
    expect(answer.body).toEqual({ lanes: [], cursor: null });
  });

  it("refuses an out-of-range limit", async () => {
    expectError(await get(`/v1/lanes?limit=0`), 400, "invalid_request");
  });
});

describe("a lane of one shard", () => {
  it("answers shards: 1, in one object call", async () => {
    const lane = await setup();
    await enqueue(lane);
    expect((await get(lane.base)).body.shards).toBe(1);
    // A router over a namespace that counts the calls its stubs make.
    let calls = 0;
    const counting = {
      getByName: (name: string) => {
        const stub = env.LANE.getByName(name);
        return new Proxy(stub, {
          get: (target, key) => {
            const member = Reflect.get(target, key);
            return typeof member === "function" ? (...args: unknown[]) => (calls++, Reflect.apply(member, target, args)) : member;
          },
        });
      },
    };
    const router = new ShardRouter(counting);
    const info = await router.info(lane.lane);
    expect(info.ok && info.value.shards).toBe(1);
    expect(calls).toBe(1);
    // Asked again, with the count cached: still one call.
    calls = 0;
    expect(((await router.info(lane.lane)) as { value: { shards: number } }).value.shards).toBe(1);
    expect(calls).toBe(1);
  });
});
