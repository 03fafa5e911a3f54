/**
 * A debounce key across shards (docs/concepts.md "Sharded lanes"): a key is one queued job of the
 * lane whatever the queues of its requests, as in one object. Two enqueues of one key with queues on
 * two shards: the second answers 200 `debounced` naming the first's job, which now has the second
 * request's kind, payload and queue; once the key's job has started, the next enqueue makes a new job.
 */
import { describe, expect, it } from "vitest";
import { get, post, PULL_KIND } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

const SHARDS = 4;

/** The lane's counts summed over its shards, and its stats (GET /v1/lanes/{lane}). */
async function lane(base: string): Promise<{ counts: Record<string, number>; stats: Record<string, number> }> {
  const answer = await get(base);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

describe("shards: one debounce key, two queues on two shards", () => {
  it("the second enqueue debounces the first's job, which takes the second's queue", async () => {
    const fixture = await setupSharded(SHARDS);
    const qa = keyOn(1, SHARDS, "qa");
    const qb = keyOn(2, SHARDS, "qb");
    const debounce = { key: keyOn(3, SHARDS, "key"), delayMs: 1000 };
    const first = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: { n: 1 }, queue: qa, debounce });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const second = await post(`${fixture.base}/jobs`, { kind: "other.kind", payload: { n: 2 }, queue: qb, debounce });
    expect([second.status, second.body.status], JSON.stringify(second.body)).toEqual([200, "debounced"]);
    expect(second.body.job.id).toBe(first.body.job.id);
    expect(second.body.job).toMatchObject({ kind: "other.kind", payload: { n: 2 }, queue: qb, state: "queued" });

    const read = await get(`${fixture.base}/jobs/${first.body.job.id}`);
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body).toMatchObject({ queue: qb, payload: { n: 2 } });
    const { counts, stats } = await lane(fixture.base);
    expect(counts.queued).toBe(1);
    expect(stats).toMatchObject({ enqueued: 1, debounced: 1 });
    const listed = await get(`${fixture.base}/jobs?limit=10`);
    expect(listed.body.jobs.map((job: { id: string; queue: string }) => [job.id, job.queue])).toEqual([[first.body.job.id, qb]]);
  });

  it("a third enqueue back on the first queue debounces the same job again", async () => {
    const fixture = await setupSharded(SHARDS);
    const queues = [keyOn(0, SHARDS, "qa"), keyOn(2, SHARDS, "qb"), keyOn(0, SHARDS, "qa")];
    const debounce = { key: keyOn(1, SHARDS, "key"), delayMs: 1000 };
    const answers = [];
    for (const [n, queue] of queues.entries()) answers.push(await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: { n }, queue, debounce }));
    expect(answers.map((a) => `${a.status} ${a.body.status}`)).toEqual(["201 queued", "200 debounced", "200 debounced"]);
    expect(new Set(answers.map((a) => a.body.job.id)).size).toBe(1);
    expect((await lane(fixture.base)).counts.queued).toBe(1);
  });

  it("once the key's job has started, the next enqueue with the key makes a new job", async () => {
    const fixture = await setupSharded(SHARDS);
    const debounce = { key: keyOn(3, SHARDS, "key"), delayMs: 0 };
    const first = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: {}, queue: keyOn(1, SHARDS, "qa"), debounce });
    expect(first.status).toBe(201);
    const claimed = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 1 });
    expect(claimed.body.jobs.map((job: { id: string }) => job.id)).toEqual([first.body.job.id]);
    const second = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: {}, queue: keyOn(2, SHARDS, "qb"), debounce });
    expect([second.status, second.body.status]).toEqual([201, "queued"]);
    expect(second.body.job.id).not.toBe(first.body.job.id);
    const { counts } = await lane(fixture.base);
    expect([counts.queued, counts.running]).toEqual([1, 1]);
  });

  it("one key and one queue debounce on their one shard as before", async () => {
    const fixture = await setupSharded(SHARDS);
    const queue = keyOn(2, SHARDS, "qa");
    const debounce = { key: keyOn(0, SHARDS, "key"), delayMs: 1000 };
    const first = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: { n: 1 }, queue, debounce });
    const second = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: { n: 2 }, queue, debounce });
    expect([first.status, second.status, second.body.status]).toEqual([201, 200, "debounced"]);
    expect(second.body.job.id).toBe(first.body.job.id);
    expect((await lane(fixture.base)).counts.queued).toBe(1);
  });
});
