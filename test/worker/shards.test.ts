import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { shardOf } from "../../src/shared/shards.js";
import { call, expectError, get, post, PULL_KIND } from "../helpers/http.js";
import { inject } from "../helpers/lane.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

const patch = (fixture: { base: string }, json: unknown) => call("PATCH", fixture.base, { json });

/** Enqueues over HTTP; the clock moves 1 ms after each, so that enqueue order is creation order. */
async function enqueue(fixture: ShardedFixture, spec: Record<string, unknown> = {}): Promise<any> {
  const answer = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: { n: 1 }, ...spec });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  fixture.clock.advance(1);
  return answer.body.job;
}

/** The ids of the jobs stored on shard i. */
async function idsOn(fixture: ShardedFixture, i: number): Promise<string[]> {
  const page = await fixture.shard(i).listShardPage({ limit: 500 }, 0);
  if (!page.ok) throw new Error(page.error.message);
  return page.value.jobs.map((job) => job.id);
}

describe("shards: the setting", () => {
  it("refuses a count out of range (400) and changes nothing", async () => {
    const fixture = await setupSharded(1);
    for (const shards of [0, 65, 2.5, "4"]) expectError(await patch(fixture, { shards }), 400, "invalid_request");
    expect((await get(fixture.base)).body.shards).toBe(1);
  });

  it("refuses a lane that holds a job (409 lane_not_empty), on any shard, and changes nothing", async () => {
    const one = await setupSharded(1);
    await enqueue(one);
    expectError(await patch(one, { shards: 4 }), 409, "lane_not_empty");
    expect((await get(one.base)).body.shards).toBe(1);

    const four = await setupSharded(4);
    await enqueue(four, { queue: keyOn(3, 4, "q") }); // a job on shard 3 alone
    expect(await idsOn(four, 3)).toHaveLength(1);
    expectError(await patch(four, { shards: 2, concurrency: 7 }), 409, "lane_not_empty");
    const info = (await get(four.base)).body;
    expect(info.shards).toBe(4);
    expect(info.concurrency).toBe(10); // the lane's default, unchanged
  });

  it("answers the lane with its shards listed", async () => {
    const fixture = await setupSharded(4);
    const info = (await get(fixture.base)).body;
    expect(info.shards).toBe(4);
    expect(info.shardList.map((s: any) => s.shard)).toEqual([0, 1, 2, 3]);
  });

  it("goes back to one shard while empty", async () => {
    const fixture = await setupSharded(4);
    const set = await patch(fixture, { shards: 1 });
    expect(set.status).toBe(200);
    expect(set.body.shards).toBe(1);
    expect(set.body.shardList).toBeUndefined();
    const job = await enqueue(fixture, { queue: keyOn(3, 4, "q") });
    expect(await idsOn(fixture, 0)).toEqual([job.id]);
  });
});

describe("shards: routing", () => {
  it("puts a job on the shard of its queue, else of its debounce key, else of its id; every job answers the lane", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) {
      const byQueue = await enqueue(fixture, { queue: keyOn(i, 4, "q") });
      const byId = await enqueue(fixture, { id: keyOn(i, 4, "id") });
      const byKey = await enqueue(fixture, { debounce: { key: keyOn(i, 4, "d"), delayMs: 1000 } });
      const generated = await enqueue(fixture);
      expect([byQueue, byId, byKey, generated].map((j) => j.lane)).toEqual([fixture.lane, fixture.lane, fixture.lane, fixture.lane]);
      const here = await idsOn(fixture, i);
      expect(here).toEqual(expect.arrayContaining([byQueue.id, byId.id, byKey.id]));
      expect(await idsOn(fixture, shardOf(generated.id, 4))).toContain(generated.id);
    }
  });

  it("keeps queue order and queue concurrency per queue", async () => {
    const fixture = await setupSharded(4);
    const queues = [0, 1, 2, 3].map((i) => keyOn(i, 4, "user"));
    const enqueued: Record<string, string[]> = {};
    for (let round = 0; round < 3; round++) {
      for (const queue of queues) (enqueued[queue] ??= []).push((await enqueue(fixture, { queue })).id);
    }
    const started: Record<string, string[]> = {};
    for (let round = 0; round < 3; round++) {
      const claimed = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 100 });
      // One running job per queue at a time: each claim takes every queue's head, and only its head.
      expect(claimed.body.jobs).toHaveLength(4);
      for (const job of claimed.body.jobs) {
        (started[job.queue] ??= []).push(job.id);
        expect((await post(`${fixture.base}/jobs/${job.id}/complete`, { token: job.lease.token })).status).toBe(200);
      }
    }
    expect(started).toEqual(enqueued);
  });

  it("keeps an id's idempotency across shards: same spec a duplicate, another queue a conflict", async () => {
    const fixture = await setupSharded(4);
    // An id whose own shard (1) is not its queue's (2): reserved on shard 1.
    const id = keyOn(1, 4, "order");
    const queue = keyOn(2, 4, "q");
    const job = await enqueue(fixture, { id, queue });
    expect(await idsOn(fixture, 2)).toContain(id);
    const again = await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: { n: 1 }, queue });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "duplicate", job: { id, queue } });
    expectError(await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: { n: 1 }, queue: keyOn(3, 4, "q") }), 409, "job_conflict");
    expectError(await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: { n: 1 } }), 409, "job_conflict");
    expectError(await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: { n: 2 }, queue }), 409, "job_conflict");
    expect((await get(fixture.base)).body.counts.queued).toBe(1);
    expect(job.id).toBe(id);
  });

  it("refuses an id used on its own shard when it comes again with a queue elsewhere", async () => {
    const fixture = await setupSharded(4);
    const id = keyOn(0, 4, "plain");
    await enqueue(fixture, { id });
    expectError(await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: { n: 1 }, queue: keyOn(3, 4, "q") }), 409, "job_conflict");
    expect((await get(fixture.base)).body.counts.queued).toBe(1);
  });

  it("enqueues a batch across shards all or nothing, its answers in request order", async () => {
    const fixture = await setupSharded(4);
    const jobs = [0, 1, 2, 3].map((i) => ({ id: `b-${i}`, kind: PULL_KIND, queue: keyOn(i, 4, "q") }));
    const batch = await post(`${fixture.base}/jobs/batch`, { jobs });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.results).toEqual(jobs.map((j) => ({ id: j.id, status: "queued" })));
    // One conflict among them: nothing of this batch is written.
    const mixed = [{ id: "b-new", kind: PULL_KIND, queue: keyOn(1, 4, "q") }, { ...jobs[3]!, queue: keyOn(0, 4, "q") }];
    expectError(await post(`${fixture.base}/jobs/batch`, { jobs: mixed }), 409, "job_conflict");
    expectError(await get(`${fixture.base}/jobs/b-new`), 404, "job_not_found");
    const repeated = await post(`${fixture.base}/jobs/batch`, { jobs });
    expect(repeated.body.results.map((r: any) => r.status)).toEqual(["duplicate", "duplicate", "duplicate", "duplicate"]);
  });

  it("keeps its shard count and id reservations across a restart of its objects", async () => {
    const fixture = await setupSharded(4);
    const id = keyOn(1, 4, "order");
    const queue = keyOn(2, 4, "q");
    await enqueue(fixture, { id, queue });
    for (let i = 0; i < 4; i++) {
      await evictDurableObject(fixture.shard(i));
      await inject(fixture.shard(i), fixture.clock);
    }
    expect((await get(fixture.base)).body.shards).toBe(4);
    expectError(await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: { n: 1 }, queue: keyOn(3, 4, "q") }), 409, "job_conflict");
    expect((await get(`${fixture.base}/jobs/${id}`)).body.queue).toBe(queue);
    expect(await idsOn(fixture, 2)).toEqual([id]);
  });
});

describe("shards: by id and by token", () => {
  it("reads, cancels and requeues a job on every shard", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) {
      const queued = await enqueue(fixture, { id: keyOn(i, 4, "a"), queue: keyOn((i + 1) % 4, 4, "q") });
      expect((await get(`${fixture.base}/jobs/${queued.id}`)).body.id).toBe(queued.id);
      const cancelled = await post(`${fixture.base}/jobs/${queued.id}/cancel`, {});
      expect(cancelled.body.status).toBe("cancelled");
      expect((await post(`${fixture.base}/jobs/${queued.id}/requeue`, {})).body.job.state).toBe("queued");
      expect((await get(`${fixture.base}/jobs/${queued.id}/checkpoints`)).body.checkpoints).toEqual([]);
    }
    expectError(await get(`${fixture.base}/jobs/nowhere`), 404, "job_not_found");
  });

  it("routes fenced writes by the token's shard, and answers a forged token as one lane does", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) await enqueue(fixture, { queue: keyOn(i, 4, "q") });
    const claimed = (await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 10 })).body.jobs;
    expect(claimed).toHaveLength(4);
    for (const job of claimed) {
      const shard = shardOf(job.queue, 4);
      // Shard i >= 1 prefixes its tokens `s<i>.`; shard 0's carry no prefix (a base64url token has no
      // ".", though it may start with "s" by chance: one in 64).
      expect(/^s\d+\./.exec(job.lease.token)?.[0] ?? null).toBe(shard === 0 ? null : `s${shard}.`);
      expectError(await post(`${fixture.base}/jobs/${job.id}/complete`, { token: "s3.forged" }), 409, "lease_superseded");
      expectError(await post(`${fixture.base}/jobs/${job.id}/complete`, { token: "forged" }), 409, "lease_superseded");
      const renewed = await post(`${fixture.base}/jobs/${job.id}/renew`, { token: job.lease.token });
      expect(renewed.status).toBe(200);
      const progress = await post(`${fixture.base}/jobs/${job.id}/progress`, { token: renewed.body.lease.token, progress: { p: 1 } });
      expect(progress.status).toBe(200);
      const checkpoint = await call("PUT", `${fixture.base}/jobs/${job.id}/checkpoints/c1`, { json: { token: renewed.body.lease.token, value: 1 } });
      expect(checkpoint.status).toBe(200);
      expect((await post(`${fixture.base}/jobs/${job.id}/complete`, { token: renewed.body.lease.token })).body.job.outcome).toBe("completed");
    }
  });

  it("answers batch acks across shards in request order", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) await enqueue(fixture, { queue: keyOn(i, 4, "q") });
    const claimed = (await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 10 })).body.jobs;
    const acks = [...claimed.map((job: any) => ({ op: "complete", id: job.id, token: job.lease.token })), { op: "complete", id: claimed[0].id, token: "s2.forged" }];
    const answer = await post(`${fixture.base}/acks`, { acks });
    expect(answer.status).toBe(200);
    expect(answer.body.results.map((r: any) => r.id)).toEqual(acks.map((a) => a.id));
    expect(answer.body.results.slice(0, 4).every((r: any) => r.ok)).toBe(true);
    expect(answer.body.results[4]).toMatchObject({ ok: false, error: { code: "job_settled" } });
  });

  it("reads a queue on its shard", async () => {
    const fixture = await setupSharded(4);
    const queue = keyOn(3, 4, "q");
    await enqueue(fixture, { queue });
    await enqueue(fixture, { queue });
    expect((await get(`${fixture.base}/queues/${queue}`)).body.queued).toBe(2);
    expect((await post(`${fixture.base}/queues/${queue}/purge`, {})).body.purged).toBe(2);
  });
});

describe("shards: claims", () => {
  it("claims from every shard, up to max", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) await enqueue(fixture, { id: keyOn(i, 4, "c") });
    const first = (await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 3 })).body.jobs;
    expect(first).toHaveLength(3);
    const rest = (await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 3 })).body.jobs;
    expect(rest).toHaveLength(1);
    expect(new Set([...first, ...rest].map((j: any) => j.id)).size).toBe(4);
    expect((await get(fixture.base)).body.counts.running).toBe(4);
  });

  it("wakes a held claim with a job enqueued on another shard", async () => {
    const fixture = await setupSharded(4);
    const held = post(`${fixture.base}/claims`, { kinds: [PULL_KIND], waitMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the claim is held by now (a real wait, not a poll)
    const job = await enqueue(fixture, { queue: keyOn(3, 4, "q") });
    const answer = await held;
    expect(answer.body.jobs.map((j: any) => j.id)).toEqual([job.id]);
    expect((await get(fixture.base)).body.counts).toMatchObject({ running: 1, queued: 0 });
  });

  it("answers a held claim empty at its deadline, having claimed nothing", async () => {
    const fixture = await setupSharded(4);
    const answer = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], waitMs: 100 });
    expect(answer.body.jobs).toEqual([]);
    expect((await get(fixture.base)).body.stats.claimed).toBe(0);
  });
});

describe("shards: lane-wide routes", () => {
  it("sums counts, stats and kinds; the earliest oldestDueAt", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 8; i++) await enqueue(fixture, { queue: keyOn(i % 4, 4, `q${i}`) });
    await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 2 });
    const info = (await get(fixture.base)).body;
    expect(info.counts).toMatchObject({ queued: 6, running: 2 });
    expect(info.stats).toMatchObject({ enqueued: 8, claimed: 2 });
    expect(info.kinds[PULL_KIND]).toEqual({ queued: 6, running: 2 });
    expect(info.shardList.reduce((n: number, s: any) => n + s.counts.queued, 0)).toBe(6);
    const lanes = (await get(`/v1/lanes?limit=500`)).body.lanes.filter((l: any) => l.lane === fixture.lane || l.lane.startsWith(`${fixture.lane}#`));
    expect(lanes).toHaveLength(1);
    expect(lanes[0].counts).toMatchObject({ queued: 6, running: 2 });
  });

  it("lists jobs in enqueue order across shards, one cursor, none twice or missed", async () => {
    const fixture = await setupSharded(4);
    const ids: string[] = [];
    for (let i = 0; i < 13; i++) ids.push((await enqueue(fixture, { id: `job-${i}` })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await get(`${fixture.base}/jobs?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.jobs.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.jobs.map((j: any) => j.id));
      cursor = page.body.cursor;
    } while (cursor !== null);
    expect(seen).toEqual(ids);
    expectError(await get(`${fixture.base}/jobs?cursor=c1.5`), 400, "invalid_request");
  });

  it("divides a lane's concurrency and rate limit among its shards, and sums them back", async () => {
    const fixture = await setupSharded(4);
    const set = await patch(fixture, { concurrency: 10, rateLimit: { limit: 5, periodMs: 1000 }, paused: true });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ concurrency: 10, rateLimit: { limit: 5, periodMs: 1000 }, paused: true });
    const shares = await Promise.all([0, 1, 2, 3].map(async (i) => (await fixture.shard(i).info()) as any));
    expect(shares.map((s) => s.value.concurrency)).toEqual([3, 3, 2, 2]);
    expect(shares.map((s) => s.value.rateLimit.limit)).toEqual([2, 1, 1, 1]);
    expect(shares.every((s) => s.value.paused)).toBe(true);
  });

  it("fails and sweeps every shard", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) await enqueue(fixture, { queue: keyOn(i, 4, "q") });
    const failed = await post(`${fixture.base}/fail`, { reason: "stop" });
    expect(failed.body.failed).toHaveLength(4);
    expect(failed.body.more).toBe(false);
    fixture.clock.advance(10);
    const swept = await post(`${fixture.base}/sweep`, { settledBefore: fixture.clock.now() });
    expect(swept.body.removed).toBe(4);
    expect((await get(fixture.base)).body.counts.failed).toBe(0);
  });

  it("sums the history of its shards", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) await enqueue(fixture, { queue: keyOn(i, 4, "q") });
    const history = (await get(`${fixture.base}/history?windowMs=60000`)).body.buckets;
    expect(history.reduce((n: number, b: any) => n + b.enqueued, 0)).toBe(4);
  });

  it("sums the metrics of its shards, series by series", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) await enqueue(fixture, { queue: keyOn(i, 4, "q") });
    await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 1 });
    const text: string = (await get(`${fixture.base}/metrics`)).body;
    const value = (series: string) => Number(text.split("\n").find((line) => line.startsWith(`${series} `))?.split(" ")[1]);
    expect(value(`switchyard_jobs{lane="${fixture.lane}",state="queued"}`)).toBe(3);
    expect(value(`switchyard_jobs{lane="${fixture.lane}",state="running"}`)).toBe(1);
    expect(text.split("\n").filter((line) => line.startsWith("# TYPE switchyard_jobs ")).length).toBe(1);
  });
});
