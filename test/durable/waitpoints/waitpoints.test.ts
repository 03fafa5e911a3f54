/**
 * Waitpoints in one lane, over RPC with the manual clock: create is idempotent, the first settlement
 * wins exactly once (a completion, or the timeout the alarm finds with no request), a completion
 * before any create is kept, the lane's pending count and stats follow, and retention and sweep drop
 * settled ones (a removed waitpoint is unknown again).
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_COMPLETED_RETENTION_MS, RETENTION_SLACK_MS } from "../../../src/shared/defaults.js";
import { T0, evict, fireAlarm, refusal, setup, sql, value, wake, type LaneStub } from "../../helpers/lane.js";

const info = async (stub: LaneStub) => value(await stub.info());

describe("waitpoints", () => {
  it("creates a pending waitpoint once: the same id again answers it as it is, its timeoutMs ignored", async () => {
    const { stub, name } = await setup();
    const first = value(await stub.createWaitpoint({ id: "order-9.paid", timeoutMs: 60_000 }));
    expect(first).toEqual({
      created: true,
      waitpoint: { id: "order-9.paid", lane: name, state: "pending", result: null, timeoutAt: T0 + 60_000, createdAt: T0, settledAt: null, waiters: 0 },
    });
    const again = value(await stub.createWaitpoint({ id: "order-9.paid", timeoutMs: 5 }));
    expect(again).toEqual({ created: false, waitpoint: first.waitpoint });
    expect((await info(stub)).waitpoints).toEqual({ pending: 1 });
  });

  it("makes an id when none is given, with no timeout", async () => {
    const { stub } = await setup();
    const { waitpoint } = value(await stub.createWaitpoint({}));
    expect(waitpoint.id).toBe("id-1");
    expect(waitpoint.timeoutAt).toBeNull();
    expect(value(await stub.getWaitpoint("id-1"))).toEqual(waitpoint);
  });

  it("answers waitpoint_not_found for an unknown id", async () => {
    const { stub } = await setup();
    refusal(await stub.getWaitpoint("nope"), "waitpoint_not_found");
  });

  it("refuses bad input and changes nothing", async () => {
    const { stub } = await setup();
    refusal(await stub.createWaitpoint({ id: "-bad" }), "invalid_request");
    refusal(await stub.createWaitpoint({ timeoutMs: 0 }), "invalid_request");
    refusal(await stub.createWaitpoint({ timeoutMs: 31_536_000_001 }), "invalid_request");
    refusal(await stub.createWaitpoint({ other: 1 }), "invalid_request");
    refusal(await stub.completeWaitpoint("w", { result: 1, other: 2 }), "invalid_request");
    refusal(await stub.completeWaitpoint("w", { result: "x".repeat(128 * 1024) }), "payload_too_large");
    expect(await sql(stub, `SELECT id FROM waitpoints`)).toEqual([]);
    expect((await info(stub)).waitpoints).toEqual({ pending: 0 });
  });

  it("accepts a schedule fire's wait id <name>@<T>.<wait>", async () => {
    const { stub } = await setup();
    expect(value(await stub.createWaitpoint({ id: "nightly@1795936561938.approval" })).created).toBe(true);
    refusal(await stub.createWaitpoint({ id: "nightly@1795936561938" }), "invalid_request");
  });

  it("completes once: the first completion wins, a second is waitpoint_settled with the waitpoint as it is", async () => {
    const { stub, clock } = await setup();
    value(await stub.createWaitpoint({ id: "w", timeoutMs: 60_000 }));
    clock.advance(10);
    const done = value(await stub.completeWaitpoint("w", { result: { ok: true } }));
    expect(done).toMatchObject({ created: false, waitpoint: { state: "completed", result: { ok: true }, settledAt: T0 + 10, timeoutAt: T0 + 60_000 } });
    clock.advance(10);
    const second = refusal(await stub.completeWaitpoint("w", { result: "other" }), "waitpoint_settled");
    expect(second.details).toEqual({ waitpoint: done.waitpoint });
    expect(value(await stub.getWaitpoint("w"))).toEqual(done.waitpoint);
    expect((await info(stub)).stats).toMatchObject({ waitpointsCompleted: 1, waitpointsTimedOut: 0 });
    expect((await info(stub)).waitpoints).toEqual({ pending: 0 });
  });

  it("keeps a completion that comes before any create: created completed, and a later create answers it", async () => {
    const { stub } = await setup();
    const early = value(await stub.completeWaitpoint("early", {}));
    expect(early).toEqual({ created: true, waitpoint: expect.objectContaining({ state: "completed", result: null, timeoutAt: null, settledAt: T0 }) });
    expect(value(await stub.createWaitpoint({ id: "early", timeoutMs: 1000 }))).toEqual({ created: false, waitpoint: early.waitpoint });
    expect((await info(stub)).waitpoints).toEqual({ pending: 0 });
    expect((await info(stub)).stats.waitpointsCompleted).toBe(1);
  });

  it("times out with no request: its timeoutAt is the wake, the alarm settles it timedOut once", async () => {
    const { stub, clock } = await setup();
    value(await stub.createWaitpoint({ id: "w", timeoutMs: 5000 }));
    expect(await wake(stub)).toBe(T0 + 5000);
    clock.set(T0 + 4999);
    await fireAlarm(stub);
    expect(value(await stub.getWaitpoint("w")).state).toBe("pending");
    clock.set(T0 + 5000);
    await fireAlarm(stub);
    expect(value(await stub.getWaitpoint("w"))).toMatchObject({ state: "timedOut", result: null, settledAt: T0 + 5000, timeoutAt: T0 + 5000 });
    refusal(await stub.completeWaitpoint("w", { result: 1 }), "waitpoint_settled");
    await fireAlarm(stub);
    const { stats, waitpoints } = await info(stub);
    expect(stats).toMatchObject({ waitpointsCompleted: 0, waitpointsTimedOut: 1 });
    expect(waitpoints).toEqual({ pending: 0 });
  });

  it("a completion before the timeout leaves nothing for the alarm to time out", async () => {
    const { stub, clock } = await setup();
    value(await stub.createWaitpoint({ id: "w", timeoutMs: 5000 }));
    value(await stub.completeWaitpoint("w", { result: 7 }));
    clock.set(T0 + 10_000);
    await fireAlarm(stub);
    expect(value(await stub.getWaitpoint("w"))).toMatchObject({ state: "completed", result: 7 });
    expect((await info(stub)).stats).toMatchObject({ waitpointsCompleted: 1, waitpointsTimedOut: 0 });
  });

  it("times out after a restart: the term is read again from the rows", async () => {
    const fixture = await setup();
    value(await fixture.stub.createWaitpoint({ id: "w", timeoutMs: 5000 }));
    await evict(fixture);
    expect(await wake(fixture.stub)).toBe(T0 + 5000);
    fixture.clock.set(T0 + 5000);
    await fireAlarm(fixture.stub);
    expect(value(await fixture.stub.getWaitpoint("w")).state).toBe("timedOut");
  });

  it("keeps a settled waitpoint for retention.completedMs, then removes it: unknown again", async () => {
    const { stub, clock } = await setup();
    value(await stub.completeWaitpoint("w", { result: 1 }));
    value(await stub.createWaitpoint({ id: "open" }));
    expect(await wake(stub)).toBe(T0 + DEFAULT_COMPLETED_RETENTION_MS + RETENTION_SLACK_MS);
    clock.set(T0 + DEFAULT_COMPLETED_RETENTION_MS);
    await fireAlarm(stub);
    expect(value(await stub.getWaitpoint("w")).state).toBe("completed");
    clock.set(T0 + DEFAULT_COMPLETED_RETENTION_MS + RETENTION_SLACK_MS);
    await fireAlarm(stub);
    refusal(await stub.getWaitpoint("w"), "waitpoint_not_found");
    expect(value(await stub.getWaitpoint("open")).state).toBe("pending");
    expect((await info(stub)).stats.waitpointsCompleted).toBe(1);
    expect(await wake(stub)).toBeNull();
    // A completion creates it anew.
    expect(value(await stub.completeWaitpoint("w", { result: 2 })).created).toBe(true);
  });

  it("keeps settled waitpoints when completedMs is null, until a sweep", async () => {
    const { stub, clock } = await setup();
    value(await stub.configure({ retention: { completedMs: null } }));
    value(await stub.completeWaitpoint("old", {}));
    clock.advance(1000);
    value(await stub.completeWaitpoint("new", {}));
    value(await stub.createWaitpoint({ id: "pending" }));
    expect(await wake(stub)).toBeNull();
    clock.advance(DEFAULT_COMPLETED_RETENTION_MS * 2);
    await fireAlarm(stub);
    expect(value(await stub.getWaitpoint("old")).state).toBe("completed");
    expect(value(await stub.sweepWaitpoints({ settledBefore: T0 + 1000 }))).toEqual({ removed: 1 });
    refusal(await stub.getWaitpoint("old"), "waitpoint_not_found");
    expect(value(await stub.sweepWaitpoints({ settledBefore: T0 + 10_000 }))).toEqual({ removed: 1 });
    expect(value(await stub.getWaitpoint("pending")).state).toBe("pending");
    refusal(await stub.sweepWaitpoints({ settledBefore: -1 }), "invalid_request");
  });

  it("refuses to change the shard count while the lane holds a waitpoint, settled or not", async () => {
    const { stub } = await setup();
    value(await stub.completeWaitpoint("w", {}));
    refusal(await stub.configure({ shards: 2 }), "lane_not_empty");
    expect((await stub.shardState()).ok && value(await stub.shardState()).empty).toBe(false);
    value(await stub.sweepWaitpoints({ settledBefore: T0 + 1 }));
    expect(value(await stub.configure({ shards: 2 })).shards).toBe(2);
  });
});
