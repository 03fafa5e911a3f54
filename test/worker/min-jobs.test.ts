import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import { ShardRouter } from "../../src/routing/router.js";
import type { PulledJob } from "../../src/shared/job.js";
import { shardObjectName } from "../../src/shared/shards.js";
import { expectError, get, post, PULL_KIND } from "../helpers/http.js";
import { value, type LaneStub } from "../helpers/lane.js";
import { restartLane } from "../helpers/restart.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

async function enqueueOn(fixture: ShardedFixture, shard: number, prefix: string): Promise<string> {
  const answer = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, queue: keyOn(shard, fixture.shards, prefix) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  fixture.clock.advance(1);
  return answer.body.job.id;
}

/** Before a shard's call goes out: a test may break the shard first, and name the stub the call then goes through. */
type Intercept = (shard: number, method: string, stub: LaneStub) => Promise<{ via: LaneStub } | void>;

/**
 * A router over the lane namespace that counts its stubs' calls by method (and lets a test step in
 * before one). `watchesArrived(n)` resolves once the first `n` watches (`awaitWork`) are held by
 * their shards: each watch call is followed, on the stub that sent it, by a round trip (calls on one
 * stub arrive in order, and a shard registers a watch as its call arrives), so nothing is slept on
 * or polled.
 */
function countingRouter(fixture: ShardedFixture, intercept?: Intercept) {
  const calls: Record<string, number> = {};
  const arrivals: Promise<unknown>[] = [];
  let arrived: () => void = () => {};
  const directory = {
    getByName: (name: string) => {
      const stub = env.LANE.getByName(name) as LaneStub;
      const shard = Array.from({ length: fixture.shards }, (_, i) => shardObjectName(fixture.lane, i)).indexOf(name);
      return new Proxy(stub, {
        get: (target, key) => {
          const member = Reflect.get(target, key);
          if (typeof member !== "function" || typeof key !== "string") return member;
          return async (...args: unknown[]) => {
            calls[key] = (calls[key] ?? 0) + 1;
            const via = (await intercept?.(shard, key, target))?.via ?? target;
            const answer = Reflect.apply(Reflect.get(via, key) as (...a: unknown[]) => unknown, via, args);
            if (key === "awaitWork") {
              const arrival = via.info();
              arrival.catch(() => {}); // awaited only by watchesArrived
              arrivals.push(arrival);
              arrived();
            }
            return answer;
          };
        },
      });
    },
  };
  async function watchesArrived(n: number): Promise<void> {
    while (arrivals.length < n) await new Promise<void>((resolve) => (arrived = resolve));
    await Promise.all(arrivals.slice(0, n));
  }
  return { router: new ShardRouter(directory as never), calls, watchesArrived };
}

/** How many sharded-claim watches the shard holds now. */
const watching = (stub: LaneStub) => runInDurableObject(stub, (lane: Lane) => (lane as unknown as { parts: { watchers: { size: number } } }).parts.watchers.size);

const ids = (jobs: PulledJob[]) => jobs.map((j) => j.id).sort();

describe("POST …/claims with minJobs", () => {
  it("refuses minJobs above max (400 naming it) and claims nothing", async () => {
    const fixture = await setupSharded(1);
    await enqueueOn(fixture, 0, "a");
    const refused = expectError(await post(`${fixture.base}/claims`, { max: 2, minJobs: 3, waitMs: 1000 }), 400, "invalid_request");
    expect(JSON.stringify(refused)).toContain("minJobs");
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1, running: 0 });
  });

  it("on a sharded lane, answers with fewer once waitMs has passed", async () => {
    const fixture = await setupSharded(4);
    const id = await enqueueOn(fixture, 2, "a");
    const answer = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 300 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
  });
});

describe("a sharded lane's held claim with minJobs", () => {
  it("waits without polling: a shard with too few jobs does not answer its watch again and again", async () => {
    const fixture = await setupSharded(4);
    const id = await enqueueOn(fixture, 2, "a");
    const { router, calls } = countingRouter(fixture);
    const answer = value(await router.claim(fixture.lane, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 300 }, "held-1"));
    expect(ids(answer.jobs)).toEqual([id]);
    // One count and one watch a shard, a watch again at most when one answers at its deadline.
    expect((calls.claimable ?? 0) + (calls.awaitWork ?? 0)).toBeLessThanOrEqual(4 * fixture.shards);
  });

  it("counts the claimable jobs of every shard, takes nothing while short, and answers once minJobs are there", async () => {
    const fixture = await setupSharded(4);
    const { router, calls, watchesArrived } = countingRouter(fixture);
    const held = router.claim(fixture.lane, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 20_000 }, "held-2");
    await watchesArrived(fixture.shards);
    expect(await Promise.all(Array.from({ length: fixture.shards }, (_, s) => watching(fixture.shard(s))))).toEqual([1, 1, 1, 1]);
    const first = [await enqueueOn(fixture, 1, "a"), await enqueueOn(fixture, 2, "b")];
    // Each of those shards answers its watch once (one more job than it had seen), and is watched again.
    await watchesArrived(fixture.shards + 2);
    expect(await Promise.all(Array.from({ length: fixture.shards }, (_, s) => watching(fixture.shard(s))))).toEqual([1, 1, 1, 1]);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 2, running: 0 });
    const third = await enqueueOn(fixture, 3, "c");
    expect(ids(value(await held).jobs)).toEqual([...first, third].sort());
    expect((calls.claimable ?? 0) + (calls.awaitWork ?? 0)).toBeLessThanOrEqual(3 * fixture.shards);
  });

  it("gives back what it took when another claim took some between its count and its claim, and waits on", async () => {
    const fixture = await setupSharded(4);
    const first = [await enqueueOn(fixture, 1, "a"), await enqueueOn(fixture, 2, "b"), await enqueueOn(fixture, 3, "c")];
    let stolen: PulledJob[] | null = null;
    let stealing: () => void = () => {};
    const stole = new Promise<void>((resolve) => (stealing = resolve));
    // Another consumer's claim reaches the first shard claimed from just before this claim does.
    const { router } = countingRouter(fixture, async (shard, method, stub) => {
      if (method !== "claim" || stolen !== null) return;
      stolen = value(await stub.claim({ kinds: [PULL_KIND], max: 10 })).jobs;
      stealing();
    });
    const held = router.claim(fixture.lane, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 20_000 }, "held-3");
    await stole;
    expect(stolen!).toHaveLength(1);
    const late = await enqueueOn(fixture, 0, "d");
    const answer = value(await held).jobs;
    const left = first.filter((id) => id !== stolen![0]!.id);
    expect(ids(answer)).toEqual([...left, late].sort());
    // What it took and gave back had its attempt given back: each job is on its first attempt.
    expect(answer.map((j) => j.attempts)).toEqual([1, 1, 1]);
  });

  it("names its hold in its claims: a client that leaves has what it was just given released", async () => {
    const fixture = await setupSharded(4);
    for (const [shard, prefix] of [[1, "a"], [2, "b"], [3, "c"]] as const) await enqueueOn(fixture, shard, prefix);
    const { router } = countingRouter(fixture);
    const answer = value(await router.claim(fixture.lane, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 20_000 }, "held-4"));
    expect(answer.jobs).toHaveLength(3);
    expect(value(await router.abandonClaim(fixture.lane, "held-4")).released).toBe(3);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 3, running: 0 });
  });

  it("gives back what it had taken when its client leaves while it claims, and answers nothing", async () => {
    const fixture = await setupSharded(4);
    for (const [shard, prefix] of [[1, "a"], [2, "b"], [3, "c"]] as const) await enqueueOn(fixture, shard, prefix);
    const leaving = new AbortController();
    // The client leaves as the first shard's claim goes out: that claim still takes its job.
    const { router, calls } = countingRouter(fixture, async (_shard, method) => {
      if (method === "claim") leaving.abort();
    });
    const answer = value(await router.claim(fixture.lane, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 20_000 }, "held-6", leaving.signal));
    expect(answer.jobs).toEqual([]);
    expect(calls.claim).toBe(1);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 3, running: 0 });
  });

  it("counts and claims again across a reset of a shard, never 5xx", async () => {
    const fixture = await setupSharded(4);
    const first = [await enqueueOn(fixture, 1, "a"), await enqueueOn(fixture, 2, "b"), await enqueueOn(fixture, 3, "c")];
    const broken = new Set<string>();
    // The first count on shard 1, and the first claim on shard 2, reach a shard reset under them (a real abort).
    const { router } = countingRouter(fixture, async (shard, method, stub) => {
      const at = `${method}@${shard}`;
      if ((at !== "claimable@1" && at !== "claim@2") || broken.has(at)) return;
      broken.add(at);
      await restartLane(shardObjectName(fixture.lane, shard), stub, fixture.clock);
      return { via: stub };
    });
    const answer = await router.claim(fixture.lane, { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 20_000 }, "held-5");
    expect(broken).toEqual(new Set(["claimable@1", "claim@2"]));
    expect(ids(value(answer).jobs)).toEqual([...first].sort());
  });
});
