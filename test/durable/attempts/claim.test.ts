import { describe, expect, it } from "vitest";
import { DEFAULT_LEASE_MS } from "../../../src/shared/defaults.js";
import type { ClaimedJob } from "../../../src/shared/job.js";
import { T0, claim, claimOne, enqueue, refusal, rows, setup, value } from "../../helpers/lane.js";

const ids = (jobs: ClaimedJob[]) => jobs.map((j) => j.id);

describe("claim", () => {
  it("leases a due job: a fresh token, generation + 1, one attempt spent", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const job = await claimOne(stub);
    expect(job).toMatchObject({
      id: "a",
      state: "running",
      attempts: 1,
      generation: 1,
      lease: { token: "tok-1", generation: 1, expiresAt: T0 + DEFAULT_LEASE_MS },
    });
    expect(await rows(stub)).toEqual([
      expect.objectContaining({ id: "a", state: "running", lease_token: "tok-1", lease_until: T0 + DEFAULT_LEASE_MS, claimed_at: T0 }),
    ]);
  });

  it("never shows the token to a reader", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await claimOne(stub, { leaseMs: 5_000 });
    expect(value(await stub.getJob("a")).lease).toEqual({ generation: 1, expiresAt: T0 + 5_000 });
    expect(JSON.stringify(value(await stub.listJobs({})))).not.toContain("tok-1");
  });

  it("answers no jobs when nothing is due", async () => {
    const { stub } = await setup();
    expect(await claim(stub)).toEqual([]);
  });

  it("does not claim a job before its runAt, and does at it", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", delayMs: 1_000 });
    clock.advance(999);
    expect(await claim(stub)).toEqual([]);
    clock.advance(1);
    expect(ids(await claim(stub))).toEqual(["a"]);
  });

  it("claims higher priority first, then enqueue order among equals", async () => {
    const { stub } = await setup();
    for (const [id, priority] of [["a", 0], ["b", 5], ["c", 0], ["d", 5], ["e", -3], ["f", 0]] as const) {
      await enqueue(stub, { id, priority });
    }
    expect(ids(await claim(stub, { max: 3 }))).toEqual(["b", "d", "a"]);
    expect(ids(await claim(stub))).toEqual(["c", "f", "e"]);
  });

  it("claims no more than max", async () => {
    const { stub } = await setup();
    for (let i = 0; i < 5; i++) await enqueue(stub, {});
    expect(await claim(stub, { max: 2 })).toHaveLength(2);
    expect(await claim(stub, { max: 1 })).toHaveLength(1);
  });

  it("claims one job by default", async () => {
    const { stub } = await setup();
    for (let i = 0; i < 3; i++) await enqueue(stub, {});
    expect(value(await stub.claim()).jobs).toHaveLength(1);
  });

  it("claims only the kinds asked for", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", kind: "x" });
    await enqueue(stub, { id: "b", kind: "y" });
    await enqueue(stub, { id: "c", kind: "z" });
    expect(ids(await claim(stub, { kinds: ["z", "x"] }))).toEqual(["a", "c"]);
  });

  it.each([
    ["max 0", { max: 0 }],
    ["max 101", { max: 101 }],
    ["leaseMs 99", { leaseMs: 99 }],
    ["leaseMs over an hour", { leaseMs: 3_600_001 }],
    ["an empty kinds list", { kinds: [] }],
    ["a kind outside the name pattern", { kinds: ["a b"] }],
  ])("refuses %s as invalid_request, claiming nothing", async (_what, request) => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    refusal(await stub.claim(request), "invalid_request");
    expect((await rows(stub))[0]!.state).toBe("queued");
  });
});

describe("concurrency", () => {
  it("never runs more jobs than the lane's concurrency", async () => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: 2 }));
    for (let i = 0; i < 5; i++) await enqueue(stub, { id: `j${i}` });
    const first = await claim(stub, { max: 5 });
    expect(ids(first)).toEqual(["j0", "j1"]);
    expect(await claim(stub)).toEqual([]);
    value(await stub.complete("j0", { token: first[0]!.lease.token }));
    expect(ids(await claim(stub))).toEqual(["j2"]);
    expect(value(await stub.info()).counts.running).toBe(2);
  });

  it("starts nothing while more run than a lowered concurrency, and lets them run on", async () => {
    const { stub } = await setup();
    for (let i = 0; i < 4; i++) await enqueue(stub, { id: `j${i}` });
    const running = await claim(stub, { max: 3 });
    value(await stub.configure({ concurrency: 1 }));
    expect(await claim(stub)).toEqual([]);
    value(await stub.complete("j0", { token: running[0]!.lease.token }));
    value(await stub.complete("j1", { token: running[1]!.lease.token }));
    expect(await claim(stub)).toEqual([]);
    value(await stub.complete("j2", { token: running[2]!.lease.token }));
    expect(ids(await claim(stub))).toEqual(["j3"]);
  });
});

describe("pause", () => {
  it("starts nothing while paused; what runs, runs on; resuming starts again", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    const a = await claimOne(stub);
    value(await stub.configure({ paused: true }));
    expect(await claim(stub)).toEqual([]);
    const renewed = value(await stub.renew("a", { token: a.lease.token }));
    value(await stub.complete("a", { token: renewed.lease.token }));
    expect(await claim(stub)).toEqual([]);
    value(await stub.configure({ paused: false }));
    expect(ids(await claim(stub))).toEqual(["b"]);
  });
});

describe("queue heads", () => {
  it("never runs two jobs of one queue at once", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q" });
    await enqueue(stub, { id: "c", queue: "r" });
    await enqueue(stub, { id: "d" });
    const first = await claim(stub);
    expect(ids(first)).toEqual(["a", "c", "d"]);
    expect(await claim(stub)).toEqual([]);
    value(await stub.complete("a", { token: first[0]!.lease.token }));
    expect(ids(await claim(stub))).toEqual(["b"]);
  });

  it("runs the queue's head first: highest priority, then enqueue order", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q", priority: 1 });
    await enqueue(stub, { id: "c", queue: "q", priority: 1 });
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await claimOne(stub);
      order.push(job.id);
      value(await stub.complete(job.id, { token: job.lease.token }));
    }
    expect(order).toEqual(["b", "c", "a"]);
  });

  it("lets a head that is not yet due block its queue", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "later", queue: "q", priority: 5, delayMs: 1_000 });
    await enqueue(stub, { id: "now", queue: "q" });
    await enqueue(stub, { id: "free" });
    expect(ids(await claim(stub))).toEqual(["free"]);
    clock.advance(1_000);
    expect(ids(await claim(stub))).toEqual(["later"]);
  });

  it("lets a head of a kind the claimer does not take block its queue", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q", kind: "x" });
    await enqueue(stub, { id: "b", queue: "q", kind: "y" });
    expect(await claim(stub, { kinds: ["y"] })).toEqual([]);
  });

  it("gives a released job its place back at the head of its queue", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q" });
    const a = await claimOne(stub);
    value(await stub.release("a", { token: a.lease.token }));
    expect(ids(await claim(stub))).toEqual(["a"]);
  });

  it("keeps the queue serial through a retry", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", queue: "q" });
    await enqueue(stub, { id: "b", queue: "q" });
    const a = await claimOne(stub);
    value(await stub.fail("a", { token: a.lease.token, error: "x", retryAfterMs: 0 }));
    expect(ids(await claim(stub))).toEqual(["a"]);
  });
});
