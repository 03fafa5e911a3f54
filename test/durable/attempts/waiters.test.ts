import { describe, expect, it } from "vitest";
import { MAX_CLAIM, MAX_CLAIM_WAITERS } from "../../../src/shared/defaults.js";
import type { ClaimedJob } from "../../../src/shared/job.js";
import { claimOne, enqueue, fireAlarm, refusal, row, setup, value } from "../../helpers/lane.js";
import { hold, stillHeld } from "../../helpers/held-claims.js";

const ids = (jobs: ClaimedJob[]) => jobs.map((j) => j.id);
const WAIT = { waitMs: 20_000, max: 10 };

describe("a held claim is answered the moment a job becomes claimable", () => {
  it("by an enqueue", async () => {
    const { stub } = await setup();
    const held = hold(stub, WAIT);
    expect(await stillHeld(stub, held)).toBe(true);
    await enqueue(stub, { id: "a" });
    const jobs = await held.answer;
    expect(ids(jobs)).toEqual(["a"]);
    expect(jobs[0]).toMatchObject({ state: "running", lease: { token: expect.any(String), generation: 1 } });
  });

  it("by a release", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    const held = hold(stub, WAIT);
    expect(await stillHeld(stub, held)).toBe(true);
    value(await stub.release("a", { token: lease.token }));
    expect(ids(await held.answer)).toEqual(["a"]);
  });

  it("by a retry coming due (the alarm)", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.fail("a", { token: lease.token, error: "x", retryAfterMs: 5_000 }));
    const held = hold(stub, WAIT);
    expect(await stillHeld(stub, held)).toBe(true);
    clock.advance(5_000);
    await fireAlarm(stub);
    expect(ids(await held.answer)).toEqual(["a"]);
  });

  it("by a recovery of an expired lease (the alarm)", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    await claimOne(stub, { leaseMs: 1_000 });
    const held = hold(stub, WAIT);
    clock.advance(1_000);
    await fireAlarm(stub);
    const jobs = await held.answer;
    expect(jobs.map((j) => [j.id, j.lease.generation])).toEqual([["a", 2]]);
  });

  it("by a resume of a paused lane", async () => {
    const { stub } = await setup();
    value(await stub.configure({ paused: true }));
    await enqueue(stub, { id: "a" });
    const held = hold(stub, WAIT);
    expect(await stillHeld(stub, held)).toBe(true);
    value(await stub.configure({ paused: false }));
    expect(ids(await held.answer)).toEqual(["a"]);
  });

  it("by a freed concurrency slot", async () => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: 1 }));
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    const { lease } = await claimOne(stub);
    const held = hold(stub, WAIT);
    expect(await stillHeld(stub, held)).toBe(true);
    value(await stub.complete("a", { token: lease.token }));
    expect(ids(await held.answer)).toEqual(["b"]);
  });
});

describe("held claims", () => {
  it("are answered in arrival order", async () => {
    const { stub } = await setup();
    const first = hold(stub, { waitMs: 20_000 });
    const second = hold(stub, { waitMs: 20_000 });
    const third = hold(stub, { waitMs: 20_000 });
    expect(await stillHeld(stub, third)).toBe(true);
    await enqueue(stub, { id: "a" });
    expect(ids(await first.answer)).toEqual(["a"]);
    expect(await stillHeld(stub, second)).toBe(true);
    value(await stub.enqueueBatch({ jobs: [{ kind: "k", id: "b" }, { kind: "k", id: "c" }] }));
    expect(ids(await second.answer)).toEqual(["b"]);
    expect(ids(await third.answer)).toEqual(["c"]);
  });

  it("get only their kinds: a later claim of another kind is answered while an earlier one waits on", async () => {
    const { stub } = await setup();
    const wantsX = hold(stub, { ...WAIT, kinds: ["x"] });
    const wantsY = hold(stub, { ...WAIT, kinds: ["y"] });
    await enqueue(stub, { id: "a", kind: "y" });
    expect(ids(await wantsY.answer)).toEqual(["a"]);
    expect(await stillHeld(stub, wantsX)).toBe(true);
    await enqueue(stub, { id: "b", kind: "x" });
    expect(ids(await wantsX.answer)).toEqual(["b"]);
  });

  it("are answered {jobs: []} when waitMs passes, by one timer and no alarm", async () => {
    const { stub } = await setup();
    const started = Date.now();
    const short = hold(stub, { waitMs: 100 });
    const long = hold(stub, { waitMs: 300 });
    expect(await stub.storedAlarm()).toBeNull();
    expect(await short.answer).toEqual([]);
    expect(await stillHeld(stub, long)).toBe(true);
    expect(await long.answer).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it("answers at once when something is claimable, waitMs or not", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    expect(ids(value(await stub.claim({ waitMs: 30_000 })).jobs)).toEqual(["a"]);
  });

  it.each([
    ["waitMs above 30000", { waitMs: 30_001 }],
    ["a negative waitMs", { waitMs: -1 }],
    ["a fractional waitMs", { waitMs: 1.5 }],
  ])("refuses %s as invalid_request", async (_what, request) => {
    const { stub } = await setup();
    refusal(await stub.claim(request), "invalid_request");
  });

  it(`beyond ${MAX_CLAIM_WAITERS} held claims, a claim that would wait is answered at once`, async () => {
    const { stub } = await setup();
    const names = Array.from({ length: MAX_CLAIM_WAITERS }, (_, i) => `h-${i}`);
    const held = names.map((name) => hold(stub, { waitMs: 30_000, kinds: ["never"] }, name));
    expect(await stillHeld(stub, held.at(-1)!)).toBe(true);
    expect(value(await stub.claim({ waitMs: 30_000 })).jobs).toEqual([]);
    await Promise.all(names.map(async (name) => value(await stub.abandonClaim(name))));
    expect((await Promise.all(held.map((h) => h.answer))).flat()).toEqual([]);
  });
});

describe("a client that goes away claims nothing", () => {
  it("a held claim abandoned is dropped: the next job stays queued", async () => {
    const { stub } = await setup();
    const held = hold(stub, WAIT, "gone");
    expect(await stillHeld(stub, held)).toBe(true);
    expect(value(await stub.abandonClaim("gone"))).toEqual({ released: 0 });
    expect(await held.answer).toEqual([]);
    await enqueue(stub, { id: "a" });
    expect(await row(stub, "a")).toMatchObject({ state: "queued", attempts: 0, generation: 0 });
  });

  it("jobs answered to a claim abandoned a moment later are released at once, their attempt given back", async () => {
    const { stub } = await setup();
    const held = hold(stub, WAIT, "late");
    await enqueue(stub, { id: "a" });
    expect(ids(await held.answer)).toEqual(["a"]);
    expect(value(await stub.abandonClaim("late"))).toEqual({ released: 1 });
    expect(await row(stub, "a")).toMatchObject({ state: "queued", attempts: 0, generation: 1 });
    expect(value(await stub.abandonClaim("late"))).toEqual({ released: 0 });
  });

  it("an abandon after the consumer completed the job changes nothing (the fence)", async () => {
    const { stub } = await setup();
    const held = hold(stub, WAIT, "done");
    await enqueue(stub, { id: "a" });
    const [job] = await held.answer;
    value(await stub.complete("a", { token: job!.lease.token }));
    value(await stub.abandonClaim("done"));
    expect(await row(stub, "a")).toMatchObject({ state: "settled", outcome: "completed" });
  });

  it("answers how many it released: not those the consumer completed first", async () => {
    const { stub } = await setup();
    const held = hold(stub, { waitMs: 30_000, max: 3 }, "some");
    value(await stub.enqueueBatch({ jobs: [{ id: "a", kind: "k" }, { id: "b", kind: "k" }, { id: "c", kind: "k" }] }));
    const jobs = await held.answer;
    expect(ids(jobs)).toEqual(["a", "b", "c"]);
    value(await stub.complete("b", { token: jobs[1]!.lease.token }));
    expect(value(await stub.abandonClaim("some"))).toEqual({ released: 2 });
    expect(await row(stub, "a")).toMatchObject({ state: "queued" });
    expect(await row(stub, "b")).toMatchObject({ state: "settled", outcome: "completed" });
    expect(await row(stub, "c")).toMatchObject({ state: "queued" });
  });

  it("a claim that reaches the lane after its abandonment (the client left first) claims nothing and is not held", async () => {
    const { stub } = await setup();
    expect(value(await stub.abandonClaim("early"))).toEqual({ released: 0 });
    expect(value(await stub.claim({ waitMs: 30_000 }, "early")).jobs).toEqual([]);
    await enqueue(stub, { id: "a" });
    expect(value(await stub.claim({ waitMs: 30_000 }, "early")).jobs).toEqual([]);
    expect(await row(stub, "a")).toMatchObject({ state: "queued", attempts: 0, generation: 0 });
  });

  it("jobs a held claim took at once, with no wait, are released when it is abandoned", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    expect(ids(value(await stub.claim({ waitMs: 30_000 }, "quick")).jobs)).toEqual(["a"]);
    expect(value(await stub.abandonClaim("quick"))).toEqual({ released: 1 });
    expect(await row(stub, "a")).toMatchObject({ state: "queued", attempts: 0, generation: 1 });
  });

  it("jobs of every claim made under one name are released when it is abandoned (a sharded lane's held claim may claim a shard twice)", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    expect(ids(value(await stub.claim({ max: 1 }, "twice")).jobs)).toEqual(["a"]);
    expect(ids(value(await stub.claim({ max: 1 }, "twice")).jobs)).toEqual(["b"]);
    expect(value(await stub.abandonClaim("twice"))).toEqual({ released: 2 });
    expect(await row(stub, "a")).toMatchObject({ state: "queued", attempts: 0 });
    expect(await row(stub, "b")).toMatchObject({ state: "queued", attempts: 0 });
  });

  it(`keeps the newest ${MAX_CLAIM} leases a name claimed: a held claim never holds more (a sharded one's rounds give back what they took)`, async () => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: MAX_CLAIM + 1 }));
    value(await stub.enqueueBatch({ jobs: Array.from({ length: MAX_CLAIM + 1 }, (_, i) => ({ kind: "k", id: `j${String(i).padStart(3, "0")}` })) }));
    expect(value(await stub.claim({ max: 1 }, "rounds")).jobs).toHaveLength(1);
    expect(value(await stub.claim({ max: MAX_CLAIM }, "rounds")).jobs).toHaveLength(MAX_CLAIM);
    expect(value(await stub.abandonClaim("rounds"))).toEqual({ released: MAX_CLAIM });
    // The oldest lease was forgotten: its job runs out its lease, then is recovered.
    expect(await row(stub, "j000")).toMatchObject({ state: "running" });
    expect(await row(stub, "j001")).toMatchObject({ state: "queued", attempts: 0 });
  });

  it("a claim that comes under a name after it was abandoned claims nothing, whatever that name had claimed before", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    expect(ids(value(await stub.claim({ max: 1 }, "again")).jobs)).toEqual(["a"]);
    expect(value(await stub.abandonClaim("again"))).toEqual({ released: 1 });
    // A sharded lane's router may still be sending this shard a claim for it: it takes nothing.
    expect(value(await stub.claim({ max: 1 }, "again")).jobs).toEqual([]);
    expect(await row(stub, "a")).toMatchObject({ state: "queued", attempts: 0 });
  });

  it("refuses a hold name that is not one", async () => {
    const { stub } = await setup();
    refusal(await stub.claim({ waitMs: 100 }, "not a name!"), "invalid_request");
    refusal(await stub.abandonClaim(42), "invalid_request");
  });
});
