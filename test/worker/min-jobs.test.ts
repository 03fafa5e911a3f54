import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Claims } from "../../src/durable/attempts/claim.js";
import type { Lane } from "../../src/durable/lane.js";
import type { Watchers } from "../../src/durable/shards/watchers.js";
import { ShardRouter } from "../../src/routing/router.js";
import type { Result } from "../../src/shared/errors.js";
import type { PulledJob } from "../../src/shared/job.js";
import { shardObjectName } from "../../src/shared/shards.js";
import { call, expectError, get, post, PULL_KIND } from "../helpers/http.js";
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

/** Each flush of the shard from now on (shards/watchers.ts `flushed`): how many watches it held, how many counts it took. */
async function flushesOf(stub: LaneStub): Promise<{ watches: number; counts: number }[]> {
  const flushes: { watches: number; counts: number }[] = [];
  await runInDurableObject(stub, (lane: Lane) => {
    const parts = (lane as unknown as { parts: { claims: Claims; watchers: Watchers } }).parts;
    const count = parts.claims.claimableCount.bind(parts.claims);
    const flushed = parts.watchers.flushed.bind(parts.watchers);
    let flush: { watches: number; counts: number } | null = null;
    parts.claims.claimableCount = (...args) => {
      if (flush) flush.counts++;
      return count(...args);
    };
    parts.watchers.flushed = () => {
      flushes.push((flush = { watches: parts.watchers.size, counts: 0 }));
      try {
        flushed();
      } finally {
        flush = null;
      }
    };
  });
  return flushes;
}

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

describe("a held claim whose client leaves", () => {
  it("on a sharded lane, without minJobs, tells every shard, claims nothing, and its watches stop", async () => {
    const fixture = await setupSharded(4);
    const { router, calls, watchesArrived } = countingRouter(fixture);
    const request = { kinds: [PULL_KIND], max: 10, waitMs: 20_000 };
    const client = new AbortController();
    const held = router.claim(fixture.lane, request, "held-10", client.signal);
    await watchesArrived(fixture.shards);
    client.abort();
    expect(value(await router.abandonClaim(fixture.lane, "held-10"))).toEqual({ released: 0 });
    expect(calls.abandonClaim).toBe(fixture.shards);
    expect(value(await held).jobs).toEqual([]);
    expect(await Promise.all(Array.from({ length: fixture.shards }, (_, s) => watching(fixture.shard(s))))).toEqual([0, 0, 0, 0]);
    await enqueueOn(fixture, 2, "a");
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1, running: 0 });
  });

  it("on a sharded lane, without minJobs, a woken claim that reaches its shard after the client left claims nothing", async () => {
    const fixture = await setupSharded(4);
    // The client leaves, and the lane is told, while the router's woken claim is on its way to the shard.
    const client = new AbortController();
    const { router, watchesArrived } = countingRouter(fixture, async (_shard, key) => {
      if (key !== "claim") return;
      client.abort();
      expect(value(await router.abandonClaim(fixture.lane, "held-12"))).toEqual({ released: 0 });
    });
    const held = router.claim(fixture.lane, { kinds: [PULL_KIND], max: 10, waitMs: 20_000 }, "held-12", client.signal);
    await watchesArrived(fixture.shards);
    await enqueueOn(fixture, 2, "a");
    expect(value(await held).jobs).toEqual([]);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1, running: 0 });
  });

  it.each([
    ["a woken claim", false],
    ["its first look at the shards", true],
    ["the shard that gave the most last time", true],
  ] as const)("on a sharded lane, without minJobs, has what %s took released when its client leaves as it is answered", async (how, dueBefore) => {
    const fixture = await setupSharded(4);
    const sent: string[] = [];
    const { router, watchesArrived } = countingRouter(fixture, async (shard, method) => void sent.push(`${method} ${shard}`));
    const request = { kinds: [PULL_KIND], max: 10, waitMs: 20_000 };
    if (how === "the shard that gave the most last time") {
      // A claim a moment before takes shard 2's job: the next claims go there first.
      await enqueueOn(fixture, 2, "z");
      expect(value(await router.claim(fixture.lane, request, null)).jobs).toHaveLength(1);
    }
    if (dueBefore) await enqueueOn(fixture, 2, "a");
    sent.length = 0;
    const held = router.claim(fixture.lane, request, "held-13");
    if (!dueBefore) {
      await watchesArrived(fixture.shards);
      await enqueueOn(fixture, 2, "a");
    }
    expect(value(await held).jobs).toHaveLength(1);
    // The path under test: the hot shard is claimed before any look, the first look before any claim.
    const first = sent.find((call) => call.startsWith("claim") || call.startsWith("due"));
    expect(first).toBe({ "a woken claim": "due 0", "its first look at the shards": "due 0", "the shard that gave the most last time": "claim 2" }[how]);
    // The answer went nowhere: the client had left, and the front worker tells the lane.
    expect(value(await router.abandonClaim(fixture.lane, "held-13"))).toEqual({ released: 1 });
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1 });
  });

  it("on a sharded lane, without minJobs, claims nothing again on a shard that released what it took when its client left", async () => {
    const fixture = await setupSharded(4);
    const request = { kinds: [PULL_KIND], max: 10, waitMs: 20_000 };
    const client = new AbortController();
    let armed = false;
    // The client leaves, and the lane is told, after the hot shard's claim and before the look at shard 2.
    const { router } = countingRouter(fixture, async (shard, method) => {
      // (Shard 2's look goes out after the lane was told: it sees the released job due.)
      if (!armed || method !== "due" || shard !== 2) return;
      armed = false;
      client.abort();
      expect(value(await router.abandonClaim(fixture.lane, "held-14"))).toEqual({ released: 1 });
    });
    await enqueueOn(fixture, 2, "z");
    expect(value(await router.claim(fixture.lane, request, null)).jobs).toHaveLength(1); // shard 2 is hot now
    await enqueueOn(fixture, 2, "a");
    armed = true;
    await router.claim(fixture.lane, request, "held-14", client.signal);
    expect(client.signal.aborted).toBe(true);
    // The job the hot claim took is queued again, not claimed again under the name its client left.
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1, running: 1 });
  });

  it("on a lane of one shard, without minJobs, is dropped by that shard: it claims nothing", async () => {
    const fixture = await setupSharded(1);
    const { router, calls } = countingRouter(fixture);
    const request = { kinds: [PULL_KIND], max: 10, waitMs: 20_000 };
    const held = router.claim(fixture.lane, request, "held-11");
    expect(value(await router.abandonClaim(fixture.lane, "held-11"))).toEqual({ released: 0 });
    expect(calls.abandonClaim).toBe(1);
    expect(value(await held).jobs).toEqual([]);
    await enqueueOn(fixture, 0, "a");
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1, running: 0 });
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

  it("a shard's flush counts once for the held claims that ask the same, and wakes each of them", async () => {
    const fixture = await setupSharded(2);
    const { router, watchesArrived } = countingRouter(fixture);
    const request = { kinds: [PULL_KIND], max: 2, minJobs: 2, waitMs: 20_000 };
    const leaving = [new AbortController(), new AbortController(), new AbortController()];
    const held = leaving.map((client, i) => router.claim(fixture.lane, request, `held-${7 + i}`, client.signal));
    await watchesArrived(3 * fixture.shards);
    const flushes = await flushesOf(fixture.shard(1));
    const first = await enqueueOn(fixture, 1, "a");
    // Each claim is woken (one more job than it had seen) and watches shard 1 again.
    await watchesArrived(3 * fixture.shards + 3);
    expect(flushes[0]).toEqual({ watches: 3, counts: 1 });
    expect(flushes.every((f) => f.counts <= 1)).toBe(true);
    // Two jobs across the shards: one of the claims takes both; the others are left short.
    const second = await enqueueOn(fixture, 0, "b");
    const taker = await Promise.race(held.map(async (claim, i) => ({ i, jobs: value(await claim).jobs })));
    expect(ids(taker.jobs)).toEqual([first, second].sort());
    for (const client of leaving) client.abort();
    const rest = await Promise.all(held.filter((_, i) => i !== taker.i));
    expect(rest.map((answer) => value(answer).jobs)).toEqual([[], []]);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 0, running: 2 });
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
    const { router, calls } = countingRouter(fixture);
    const request = { kinds: [PULL_KIND], max: 10, minJobs: 3, waitMs: 20_000 };
    const answer = value(await router.claim(fixture.lane, request, "held-4"));
    expect(answer.jobs).toHaveLength(3);
    expect(value(await router.abandonClaim(fixture.lane, "held-4")).released).toBe(3);
    // Every shard is told, the one it claimed nothing from too (a claim of it may still be on its way there).
    expect(calls.abandonClaim).toBe(fixture.shards);
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

/** How many claims the lane of one shard holds now (attempts/waiters.ts). */
const holding = (stub: LaneStub) => runInDurableObject(stub, (lane: Lane) => (lane as unknown as { parts: { waiters: { size: number } } }).parts.waiters.size);

/** The held claims' answers in the order they come: `next()` is the next one to come. */
function inArrivalOrder(held: Promise<Result<{ jobs: PulledJob[] }>>[]) {
  const pending = new Map(held.map((claim, i) => [i, claim.then((answer) => ({ i, jobs: value(answer).jobs }))]));
  return {
    async next(): Promise<PulledJob[]> {
      const first = await Promise.race(pending.values());
      pending.delete(first.i);
      return first.jobs;
    },
    get left(): number {
      return pending.size;
    },
  };
}

describe("three held claims of one ask (minJobs 2, max 2), six jobs enqueued one by one", () => {
  // waitMs above the test's timeout: a claim that waited out its wait fails the test.
  const request = { kinds: [PULL_KIND], max: 2, minJobs: 2, waitMs: 30_000 };

  it("on a sharded lane whose shard has room for six, every claim is answered with two before its wait ends", async () => {
    const fixture = await setupSharded(2);
    expect((await call("PATCH", fixture.base, { json: { concurrency: 12 } })).status).toBe(200);
    const { router, watchesArrived } = countingRouter(fixture);
    const answers = inArrivalOrder([0, 1, 2].map((i) => router.claim(fixture.lane, request, `held-${20 + i}`)));
    await watchesArrived(3 * fixture.shards);
    const enqueued: string[] = [];
    for (const prefix of ["a", "b", "c", "d", "e", "f"]) enqueued.push(await enqueueOn(fixture, 1, prefix));
    const taken = [await answers.next(), await answers.next(), await answers.next()];
    expect(taken.map((jobs) => jobs.length)).toEqual([2, 2, 2]);
    expect(taken.flatMap(ids).sort()).toEqual([...enqueued].sort());
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 0, running: 6 });
    expect(await Promise.all(Array.from({ length: fixture.shards }, (_, s) => watching(fixture.shard(s))))).toEqual([0, 0]);
  });

  it("on a sharded lane, the third waits while its shard's share of the lane's concurrency leaves one job claimable, and is answered at once when a slot frees", async () => {
    // concurrency 10 on 2 shards: shard 1 runs at most 5 (docs/api.md "Sharded lanes").
    const fixture = await setupSharded(2);
    const { router, watchesArrived } = countingRouter(fixture);
    const answers = inArrivalOrder([0, 1, 2].map((i) => router.claim(fixture.lane, request, `held-${23 + i}`)));
    await watchesArrived(3 * fixture.shards);
    const enqueued: string[] = [];
    for (const prefix of ["a", "b", "c", "d", "e", "f"]) enqueued.push(await enqueueOn(fixture, 1, prefix));
    const first = await answers.next();
    const second = await answers.next();
    expect([...first, ...second].map((j) => j.id).sort()).toEqual(enqueued.slice(0, 4).sort());
    // Two queued on shard 1, but 4 of its 5 slots run: one claimable, fewer than minJobs.
    expect(value(await fixture.shard(1).claimable(request))).toEqual({ claimable: 1 });
    expect(answers.left).toBe(1);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 2, running: 4 });
    const done = await post(`${fixture.base}/jobs/${first[0]!.id}/complete`, { token: first[0]!.lease.token });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(ids(await answers.next())).toEqual(enqueued.slice(4).sort());
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 0, running: 5 });
  });

  it("on a lane of one shard, every claim is answered with two before its wait ends", async () => {
    const fixture = await setupSharded(1);
    const lane = fixture.shard(0) as LaneStub;
    const answers = inArrivalOrder([0, 1, 2].map((i) => lane.claim(request, `held-${26 + i}`)));
    // Calls on one stub arrive in order: after this round trip the three claims are held.
    await lane.info();
    expect(await holding(lane)).toBe(3);
    const enqueued: string[] = [];
    for (const prefix of ["a", "b", "c", "d", "e", "f"]) enqueued.push(await enqueueOn(fixture, 0, prefix));
    const taken = [await answers.next(), await answers.next(), await answers.next()];
    expect(taken.map((jobs) => jobs.length)).toEqual([2, 2, 2]);
    expect(taken.flatMap(ids).sort()).toEqual([...enqueued].sort());
  });
});
