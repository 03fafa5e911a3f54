/**
 * Flow control at the lane, on a manual clock: the lane's and a queue's token buckets (drawn by the
 * claim, in its transaction), queue concurrency, round-robin fairness, TTL and debounce.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/shared/errors.js";
import { setup as inProcess, START } from "../../helpers/dispatch.js";
import { gate, waitForTransition } from "../../helpers/executors.js";
import { T0, claim, enqueue, evict, fireAlarm, refusal, row, setup, value, wake, type LaneStub } from "../../helpers/lane.js";

const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);

async function enqueueMany(stub: LaneStub, n: number, spec: Record<string, unknown> = {}, prefix = "j"): Promise<string[]> {
  const jobs = Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, kind: "k", ...spec }));
  value(await stub.enqueueBatch({ jobs }));
  return jobs.map((j) => j.id);
}

describe("the lane's rate limit", () => {
  it("starts a burst of `limit`, then one token every periodMs/limit, never more", async () => {
    const { stub, clock } = await setup();
    value(await stub.configure({ rateLimit: { limit: 3, periodMs: 1_000 } }));
    await enqueueMany(stub, 10);
    expect(await claim(stub)).toHaveLength(3);
    expect(await claim(stub)).toHaveLength(0);
    clock.advance(333); // 333 ms refill 999 of the 1,000 units a token is
    expect(await claim(stub)).toHaveLength(0);
    clock.advance(1);
    expect(await claim(stub)).toHaveLength(1);
    clock.advance(5_000); // full again: at most a burst of 3
    expect(await claim(stub)).toHaveLength(3);
    expect(value(await stub.info()).rateLimit).toEqual({ limit: 3, periodMs: 1_000 });
  });

  it("keeps its bucket across a restart", async () => {
    const fixture = await setup();
    const { stub } = fixture;
    value(await stub.configure({ rateLimit: { limit: 2, periodMs: 60_000 } }));
    await enqueueMany(stub, 5);
    expect(await claim(stub)).toHaveLength(2);
    await evict(fixture);
    expect(await claim(stub)).toHaveLength(0);
  });

  it("answers a held claim when the next token comes, on the alarm", async () => {
    const { stub, clock } = await setup();
    value(await stub.configure({ rateLimit: { limit: 1, periodMs: 10_000 } }));
    await enqueueMany(stub, 2);
    expect(await claim(stub)).toHaveLength(1);
    const held = stub.claim({ max: 5, waitMs: 20_000 });
    // The held claim waits for a token: the wake is the next token's instant, and nothing polls before it.
    expect(await wake(stub)).toBe(T0 + 10_000);
    clock.advance(10_000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(ids(value(await held).jobs)).toEqual(["j1"]);
  });

  it("is drawn by in-process starts and pull claims alike", async () => {
    const { lane, clock, enqueue: put, inside } = await inProcess();
    unwrap(await lane.configure({ rateLimit: { limit: 2, periodMs: 1_000 } }));
    const g = gate();
    for (let i = 0; i < 4; i++) await put({ id: `g${i}`, kind: "test.gate", payload: { gate: g.key } });
    await inside(() => g.started(2));
    expect(g.attempts).toHaveLength(2); // the burst
    await put({ id: "pulled", kind: "email.send" });
    expect(unwrap(await lane.claim({ max: 5 })).jobs).toEqual([]); // no token left for a consumer either
    expect(unwrap(await lane.info()).nextWakeAt).toBe(T0 + 500);
    clock.advance(500);
    await runDurableObjectAlarm(lane);
    await inside(() => g.started(3));
    expect(g.attempts).toHaveLength(3);
    expect(unwrap(await lane.claim({ max: 5 })).jobs).toEqual([]);
  });

  it("removed (null), it lets everything due start", async () => {
    const { stub } = await setup();
    value(await stub.configure({ rateLimit: { limit: 1, periodMs: 60_000 } }));
    await enqueueMany(stub, 4);
    expect(await claim(stub)).toHaveLength(1);
    value(await stub.configure({ rateLimit: null }));
    expect(await claim(stub)).toHaveLength(3);
    expect(value(await stub.info()).rateLimit).toBeNull();
  });
});

describe("queue concurrency", () => {
  it("runs up to `concurrency` of a queue's jobs at once, in the queue's order", async () => {
    const { stub } = await setup();
    expect(value(await stub.putQueue("q", { concurrency: 3 }))).toMatchObject({ queue: "q", concurrency: 3, running: 0, queued: 0 });
    await enqueueMany(stub, 5, { queue: "q" });
    const first = await claim(stub);
    expect(ids(first)).toEqual(["j0", "j1", "j2"]);
    expect(await claim(stub)).toEqual([]);
    expect(value(await stub.queueInfo("q"))).toMatchObject({ running: 3, queued: 2, concurrency: 3 });
    value(await stub.complete("j1", { token: first[1]!.lease.token }));
    expect(ids(await claim(stub))).toEqual(["j3"]);
  });

  it("defaults to 1: a queue never configured is a serial key", async () => {
    const { stub } = await setup();
    await enqueueMany(stub, 3, { queue: "s" });
    expect(ids(await claim(stub))).toEqual(["j0"]);
    expect(value(await stub.queueInfo("s"))).toMatchObject({ concurrency: 1, rateLimit: null, running: 1, queued: 2 });
  });

  it("keeps a queue's settings after its jobs are gone", async () => {
    const { stub, clock } = await setup();
    value(await stub.putQueue("q", { concurrency: 4, rateLimit: { limit: 5, periodMs: 1_000 } }));
    await enqueue(stub, { id: "a", queue: "q" });
    const [job] = await claim(stub);
    value(await stub.complete("a", { token: job!.lease.token }));
    value(await stub.sweep({ settledBefore: clock.now() + 1 }));
    clock.advance(120_000);
    await fireAlarm(stub); // the housekeeping drops rows of queues with neither jobs nor settings
    expect(value(await stub.queueInfo("q"))).toMatchObject({ concurrency: 4, rateLimit: { limit: 5, periodMs: 1_000 }, running: 0, queued: 0 });
  });

  it("with a rate limit, starts no more of the queue's jobs than its bucket holds", async () => {
    const { stub, clock } = await setup();
    value(await stub.putQueue("q", { concurrency: 10, rateLimit: { limit: 2, periodMs: 1_000 } }));
    await enqueueMany(stub, 5, { queue: "q" });
    await enqueueMany(stub, 2, {}, "free");
    expect(ids(await claim(stub))).toEqual(["j0", "j1", "free0", "free1"]);
    expect(await claim(stub)).toEqual([]);
    clock.advance(500);
    expect(ids(await claim(stub))).toEqual(["j2"]);
  });

  it("asks the alarm for a rate-limited queue's next token while its jobs wait", async () => {
    const { stub, clock } = await setup();
    value(await stub.putQueue("q", { concurrency: 5, rateLimit: { limit: 1, periodMs: 4_000 } }));
    await enqueueMany(stub, 2, { queue: "q" });
    expect(await claim(stub)).toHaveLength(1);
    const held = stub.claim({ max: 5, waitMs: 20_000 });
    expect(await wake(stub)).toBe(T0 + 4_000);
    clock.advance(4_000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(ids(value(await held).jobs)).toEqual(["j1"]);
  });
});

describe("round-robin fairness", () => {
  it("starts the single job of a queue behind another queue's backlog first; fifo starts the backlog", async () => {
    for (const fairness of ["fifo", "round-robin"] as const) {
      const { stub } = await setup();
      value(await stub.configure({ fairness }));
      value(await stub.putQueue("big", { concurrency: 100 }));
      await enqueueMany(stub, 20, { queue: "big" }, "big");
      await enqueue(stub, { id: "small", queue: "small" });
      const first = ids(await claim(stub, { max: 3 }));
      if (fairness === "fifo") expect(first).toEqual(["big0", "big1", "big2"]);
      else expect(first).toEqual(["big0", "small", "big1"]);
    }
  });

  it("takes turns: the queue that started least recently goes first; jobs outside any queue are one queue", async () => {
    const { stub, clock } = await setup();
    value(await stub.configure({ fairness: "round-robin", concurrency: 100 }));
    for (const q of ["a", "b"]) value(await stub.putQueue(q, { concurrency: 10 }));
    await enqueueMany(stub, 3, { queue: "a" }, "a");
    await enqueueMany(stub, 3, { queue: "b" }, "b");
    await enqueueMany(stub, 3, {}, "n");
    const next = async (max: number) => {
      clock.advance(1); // a start's instant is what the turns are taken by
      return ids(await claim(stub, { max }));
    };
    expect(await next(1)).toEqual(["a0"]);
    expect(await next(1)).toEqual(["b0"]);
    expect(await next(1)).toEqual(["n0"]);
    expect(await next(1)).toEqual(["a1"]);
    // One job a queue a round, least recent start first; queues started in the same instant by enqueue order.
    expect(await next(5)).toEqual(["b1", "n1", "a2", "b2", "n2"]);
    expect(value(await stub.info()).fairness).toBe("round-robin");
  });

  it("still starts higher priority first", async () => {
    const { stub } = await setup();
    value(await stub.configure({ fairness: "round-robin" }));
    await enqueue(stub, { id: "low", queue: "a" });
    await enqueue(stub, { id: "high", queue: "b", priority: 5 });
    expect(ids(await claim(stub, { max: 1 }))).toEqual(["high"]);
  });
});

describe("TTL", () => {
  it("never hands out a job past its expiry, even before the alarm settles it; the alarm settles it cancelled, expired", async () => {
    const { stub, clock } = await setup();
    const job = value(await stub.enqueue({ id: "t", kind: "k", ttlMs: 1_000 })).job;
    expect(job.expiresAt).toBe(T0 + 1_000);
    expect(await wake(stub)).toBe(T0 + 1_000);
    clock.advance(1_000);
    expect(await claim(stub)).toEqual([]); // the alarm has not run yet
    expect(await fireAlarm(stub)).toBe(true);
    expect(value(await stub.getJob("t"))).toMatchObject({ state: "settled", outcome: "cancelled", error: "expired", settledAt: T0 + 1_000 });
    expect(value(await stub.info()).stats).toMatchObject({ expired: 1, cancelled: 1 });
  });

  it("runs from runAt: a delayed job expires at runAt + ttlMs", async () => {
    const { stub } = await setup();
    expect(value(await stub.enqueue({ kind: "k", delayMs: 5_000, ttlMs: 1_000 })).job.expiresAt).toBe(T0 + 6_000);
  });

  it("holds only until the first start: a retried job is not expired", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "t", ttlMs: 1_000 });
    const [job] = await claim(stub);
    value(await stub.fail("t", { token: job!.lease.token, error: "again", retryAfterMs: 0 }));
    clock.advance(2_000);
    await fireAlarm(stub);
    expect(ids(await claim(stub))).toEqual(["t"]);
  });

  it("settles expired jobs in bounded batches, the wake asking again at once while more are due", async () => {
    const { stub, clock } = await setup();
    await enqueueMany(stub, 1_000, { ttlMs: 10 });
    await enqueueMany(stub, 200, { ttlMs: 10 }, "more");
    clock.advance(10);
    expect(await fireAlarm(stub)).toBe(true);
    expect(value(await stub.info()).stats.expired).toBe(500);
    expect(await wake(stub)).toBe(clock.now());
    await fireAlarm(stub);
    await fireAlarm(stub);
    expect(value(await stub.info()).stats.expired).toBe(1_200);
  });
});

describe("debounce", () => {
  const debounce = { key: "reindex", delayMs: 1_000 };

  it("replaces the queued job of its key in place and pushes its runAt; counts in stats.debounced", async () => {
    const { stub, clock } = await setup();
    const first = value(await stub.enqueue({ kind: "k", payload: { n: 1 }, debounce }));
    expect(first).toMatchObject({ status: "queued", job: { runAt: T0 + 1_000 } });
    clock.advance(600);
    const second = value(await stub.enqueue({ kind: "k2", payload: { n: 2 }, debounce }));
    expect(second).toMatchObject({ status: "debounced", job: { id: first.job.id, kind: "k2", payload: { n: 2 }, runAt: T0 + 1_600 } });
    expect(value(await stub.info())).toMatchObject({ counts: { queued: 1 }, stats: { debounced: 1, enqueued: 1 } });
  });

  it("never pushes runAt past the first enqueue + maxDelayMs", async () => {
    const { stub, clock } = await setup();
    const capped = { key: "k", delayMs: 1_000, maxDelayMs: 1_500 };
    value(await stub.enqueue({ kind: "k", debounce: capped }));
    clock.advance(800);
    expect(value(await stub.enqueue({ kind: "k", debounce: capped })).job.runAt).toBe(T0 + 1_500);
  });

  it("makes a new job once the debounced one has started", async () => {
    const { stub, clock } = await setup();
    value(await stub.enqueue({ id: "first", kind: "k", debounce }));
    clock.advance(1_000);
    expect(ids(await claim(stub))).toEqual(["first"]);
    const next = value(await stub.enqueue({ kind: "k", debounce }));
    expect(next.status).toBe("queued");
    expect(next.job.id).not.toBe("first");
  });

  it("answers a request whose own id exists as any enqueue of that id; a new id names a new job only", async () => {
    const { stub } = await setup();
    value(await stub.enqueue({ id: "first", kind: "k", debounce }));
    expect(value(await stub.enqueue({ id: "first", kind: "k", debounce })).status).toBe("duplicate");
    const other = value(await stub.enqueue({ id: "second", kind: "k", debounce }));
    expect(other).toMatchObject({ status: "debounced", job: { id: "first" } });
    expect(await row(stub, "second")).toBeUndefined();
  });

  it("in a batch, each debounced item replaces its key's job, all or nothing", async () => {
    const { stub } = await setup();
    const answer = value(await stub.enqueueBatch({ jobs: [{ id: "a", kind: "k", debounce }, { id: "b", kind: "k", debounce }, { id: "c", kind: "k" }] }));
    expect(answer.results).toEqual([{ id: "a", status: "queued" }, { id: "a", status: "debounced" }, { id: "c", status: "queued" }]);
    refusal(await stub.enqueueBatch({ jobs: [{ id: "d", kind: "k", debounce }, { id: "c", kind: "other" }] }), "job_conflict");
    expect(value(await stub.info()).stats.debounced).toBe(1);
  });
});

describe("round-robin in process", () => {
  it("starts a queue's single job among another queue's backlog, through the dispatcher", async () => {
    const { lane, enqueue: put, inside } = await inProcess({ concurrency: 1 });
    unwrap(await lane.configure({ fairness: "round-robin" }));
    unwrap(await lane.putQueue("big", { concurrency: 10 }));
    const g = gate();
    for (let i = 0; i < 5; i++) await put({ id: `big${i}`, kind: "test.gate", queue: "big", payload: { gate: g.key } });
    await put({ id: "small", kind: "test.gate", queue: "small", payload: { gate: g.key } });
    const first = await inside(() => g.started(1));
    expect(first.ctx.job.id).toBe("big0");
    await inside(() => first.open());
    const second = await inside(() => g.started(2));
    expect(second.ctx.job.id).toBe("small");
    await inside(() => second.open());
    await runInDurableObject(lane, () => waitForTransition("small", (e) => e.to === "settled"));
  });
});

describe("the lane's rate limit over a backlog, in process", () => {
  it("wakes for the next token after a pump that the bucket cut short, and starts one job a token", async () => {
    const { lane, clock, waitFor } = await inProcess({ concurrency: 50 });
    unwrap(await lane.configure({ rateLimit: { limit: 10, periodMs: 1_000 } }));
    // Executors that answer at once: the burst completes within the pump's own flush.
    unwrap(await lane.enqueueBatch({ jobs: Array.from({ length: 30 }, (_, i) => ({ id: `b${i}`, kind: "demo.echo" })) }));
    await waitFor("b9", (e) => e.to === "settled");
    expect(unwrap(await lane.info()).counts).toMatchObject({ completed: 10, queued: 20 });
    expect(await wake(lane as unknown as LaneStub)).toBe(START + 100);
    clock.advance(100);
    await runDurableObjectAlarm(lane);
    await waitFor("b10", (e) => e.to === "settled");
    expect(unwrap(await lane.info()).counts).toMatchObject({ completed: 11, queued: 19 });
    expect(await wake(lane as unknown as LaneStub)).toBe(START + 200);
  });
});
