import { describe, expect, it } from "vitest";
import { expectError, get, post, PULL_KIND } from "../helpers/http.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

async function enqueueOn(fixture: ShardedFixture, shard: number, prefix: string): Promise<string> {
  const answer = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, queue: keyOn(shard, fixture.shards, prefix) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  fixture.clock.advance(1);
  return answer.body.job.id;
}

/** A real wait, not a poll: the held claim has reached the lane by then. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("POST …/claims with minJobs", () => {
  it("refuses minJobs above max (400 naming it) and claims nothing", async () => {
    const fixture = await setupSharded(1);
    await enqueueOn(fixture, 0, "a");
    const refused = expectError(await post(`${fixture.base}/claims`, { max: 2, minJobs: 3, waitMs: 1000 }), 400, "invalid_request");
    expect(JSON.stringify(refused)).toContain("minJobs");
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1, running: 0 });
  });

  it("on a sharded lane, counts the claimable jobs of every shard, and answers once minJobs are there", async () => {
    const fixture = await setupSharded(4);
    const held = post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 5_000 });
    await pause(50);
    const ids = [await enqueueOn(fixture, 1, "a"), await enqueueOn(fixture, 2, "b")];
    await pause(100);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 2, running: 0 });
    ids.push(await enqueueOn(fixture, 3, "c"));
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.body.jobs.map((j: { id: string }) => j.id).sort()).toEqual([...ids].sort());
  });

  it("on a sharded lane, answers with fewer once waitMs has passed", async () => {
    const fixture = await setupSharded(4);
    const id = await enqueueOn(fixture, 2, "a");
    const sent = Date.now();
    const answer = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 300 });
    expect(Date.now() - sent).toBeGreaterThanOrEqual(290);
    expect(answer.body.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
  });
});
