/**
 * A sharded lane's lane-wide settings and operations are what the caller asked for (docs/concepts.md
 * "Sharded lanes"): `concurrency` and `rateLimit.limit` split so that the shards' shares sum to the
 * asked value (a value below one per shard refused), carried over when the count changes; a sweep's
 * `limit` and fail's 500 hold for the whole lane, not per shard.
 */
import { describe, expect, it } from "vitest";
import { call, expectError, get, post, PULL_KIND } from "../helpers/http.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

const patch = (fixture: { base: string }, json: unknown) => call("PATCH", fixture.base, { json });

/** Each shard's own info, shard 0 first. */
async function shares(fixture: ShardedFixture, shards = fixture.shards): Promise<any[]> {
  return Promise.all(Array.from({ length: shards }, async (_, i) => ((await fixture.shard(i).info()) as any).value));
}

describe("shards: a lane's concurrency and rate limit", () => {
  it("refuses a concurrency or rate limit below one per shard (400, saying why) and changes nothing", async () => {
    const fixture = await setupSharded(4);
    const before = (await get(fixture.base)).body;
    const low = expectError(await patch(fixture, { concurrency: 3 }), 400, "invalid_request");
    expect(low.message).toMatch(/4 shards/);
    expect(low.details).toEqual([{ path: ["concurrency"], message: expect.stringMatching(/at least 4/) }]);
    const rate = expectError(await patch(fixture, { rateLimit: { limit: 1, periodMs: 1000 }, paused: true }), 400, "invalid_request");
    expect(rate.details).toEqual([{ path: ["rateLimit", "limit"], message: expect.stringMatching(/at least 4/) }]);
    expect((await get(fixture.base)).body).toEqual(before);
    expect((await shares(fixture)).every((s) => !s.paused && s.rateLimit === null)).toBe(true);
  });

  it("splits them so that the shares sum to the asked value, the remainder to the lowest shards; a GET answers the asked value", async () => {
    const fixture = await setupSharded(4);
    const set = await patch(fixture, { concurrency: 4, rateLimit: { limit: 6, periodMs: 1000 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({ concurrency: 4, rateLimit: { limit: 6, periodMs: 1000 } });
    const each = await shares(fixture);
    expect(each.map((s) => s.concurrency)).toEqual([1, 1, 1, 1]);
    expect(each.map((s) => s.rateLimit.limit)).toEqual([2, 2, 1, 1]);
    expect((await get(fixture.base)).body).toMatchObject({ concurrency: 4, rateLimit: { limit: 6, periodMs: 1000 } });
  });

  it("runs no more at once than the lane's concurrency, whichever shards hold the work", async () => {
    const fixture = await setupSharded(4);
    expect((await patch(fixture, { concurrency: 5 })).status).toBe(200);
    for (let i = 0; i < 4; i++) for (let n = 0; n < 3; n++) expect((await post(`${fixture.base}/jobs`, { kind: PULL_KIND, queue: keyOn(i, 4, `q${n}-`) })).status).toBe(201);
    const claimed = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 100 });
    expect(claimed.body.jobs).toHaveLength(5);
    expect((await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 100 })).body.jobs).toHaveLength(0);
  });

  it("keeps the lane's settings when its shard count changes: the asked values split anew, the others on every shard", async () => {
    const fixture = await setupSharded(1);
    const set = await patch(fixture, { concurrency: 9, rateLimit: { limit: 7, periodMs: 2000 }, paused: true, fairness: "round-robin", retention: { completedMs: 60_000 } });
    expect(set.status).toBe(200);
    const resharded = await patch(fixture, { shards: 4 });
    expect(resharded.status, JSON.stringify(resharded.body)).toBe(200);
    expect(resharded.body).toMatchObject({ shards: 4, concurrency: 9, rateLimit: { limit: 7, periodMs: 2000 }, paused: true, fairness: "round-robin" });
    const each = await shares(fixture, 4);
    expect(each.map((s) => s.concurrency)).toEqual([3, 2, 2, 2]);
    expect(each.map((s) => s.rateLimit)).toEqual([2, 2, 2, 1].map((limit) => ({ limit, periodMs: 2000 })));
    expect(each.every((s) => s.paused && s.fairness === "round-robin" && s.retention.completedMs === 60_000)).toBe(true);
    // And back to one shard: shard 0 holds the whole values again.
    expect((await patch(fixture, { shards: 1 })).body).toMatchObject({ shards: 1, concurrency: 9, rateLimit: { limit: 7, periodMs: 2000 } });
  });

  it("a lane resharded with its default concurrency answers that concurrency, not one per shard summed", async () => {
    const fixture = await setupSharded(4);
    expect((await get(fixture.base)).body.concurrency).toBe(10);
    expect((await shares(fixture)).map((s) => s.concurrency)).toEqual([3, 3, 2, 2]);
  });

  it("refuses a shard count that would leave a shard less than one of the lane's concurrency or rate limit (400), unless the patch raises them", async () => {
    const fixture = await setupSharded(1);
    expect((await patch(fixture, { rateLimit: { limit: 20, periodMs: 1000 } })).status).toBe(200);
    const refused = expectError(await patch(fixture, { shards: 16 }), 400, "invalid_request");
    expect(refused.message).toMatch(/16 shards/);
    expect(refused.details).toEqual([{ path: ["concurrency"], message: expect.stringMatching(/10.*at least 16/) }]);
    expect((await get(fixture.base)).body).toMatchObject({ shards: 1, concurrency: 10 });
    const rate = expectError(await patch(fixture, { shards: 32, concurrency: 32 }), 400, "invalid_request");
    expect(rate.details).toEqual([{ path: ["rateLimit", "limit"], message: expect.stringMatching(/20.*at least 32/) }]);
    expect((await get(fixture.base)).body).toMatchObject({ shards: 1, concurrency: 10 });
    const raised = await patch(fixture, { shards: 16, concurrency: 16 });
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    expect(raised.body).toMatchObject({ shards: 16, concurrency: 16, rateLimit: { limit: 20 } });
  });
});

describe("shards: lane-wide operations hold for the whole lane", () => {
  it("a sweep's limit is the most it removes in all", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) for (let n = 0; n < 3; n++) expect((await post(`${fixture.base}/jobs`, { kind: PULL_KIND, queue: keyOn(i, 4, `q${n}-`) })).status).toBe(201);
    expect((await post(`${fixture.base}/fail`, { reason: "stop" })).body.failed).toHaveLength(12);
    fixture.clock.advance(10);
    expect((await post(`${fixture.base}/sweep`, { settledBefore: fixture.clock.now(), limit: 5 })).body).toEqual({ removed: 5, waitpointsRemoved: 0 });
    expect((await get(fixture.base)).body.counts.failed).toBe(7);
    expect((await post(`${fixture.base}/sweep`, { settledBefore: fixture.clock.now(), limit: 100 })).body).toEqual({ removed: 7, waitpointsRemoved: 0 });
    expect((await get(fixture.base)).body.counts.failed).toBe(0);
  });

  it("fail settles at most 500 a call over every shard, running ones first, and says more while any shard holds some", async () => {
    const fixture = await setupSharded(2);
    const jobs = Array.from({ length: 600 }, () => ({ kind: PULL_KIND }));
    expect((await post(`${fixture.base}/jobs/batch`, { jobs })).status).toBe(200);
    const running = (await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 3 })).body.jobs.map((j: any) => j.id);
    expect(running).toHaveLength(3);
    const first = await post(`${fixture.base}/fail`, { reason: "gone" });
    expect(first.status).toBe(200);
    expect(first.body.failed).toHaveLength(500);
    expect(new Set(first.body.failed).size).toBe(500);
    expect(first.body.failed.slice(0, 3).sort()).toEqual([...running].sort());
    expect(first.body.more).toBe(true);
    const second = await post(`${fixture.base}/fail`, { reason: "gone" });
    expect(second.body.failed).toHaveLength(100);
    expect(second.body.more).toBe(false);
    expect((await get(fixture.base)).body.counts).toMatchObject({ failed: 600, queued: 0, running: 0 });
  });
});
