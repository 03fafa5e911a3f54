/**
 * A job started in its enqueue's turn is one the claim would take: "may start now" is
 * flow/may-start.ts's for the claim, the wake and start-at-once alike. A TTL that has already passed
 * when the job is enqueued (its runAt in the past) is the case where they could part: the claim never
 * hands out an expired job, so neither may start-at-once; the alarm settles it cancelled, "expired".
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { unwrap } from "../../../src/shared/errors.js";
import { setup, START } from "../../helpers/dispatch.js";
import { gate } from "../../helpers/executors.js";
import { row } from "../../helpers/lane.js";

/** Enqueues inside the lane; whether the executor had started before the enqueue answered, and the job's id. */
async function enqueueWatching(stub: DurableObjectStub<Lane>, request: Record<string, unknown>): Promise<{ id: string; startedInTurn: boolean }> {
  const g = gate();
  return runInDurableObject(stub, async (lane: Lane) => {
    const pending = lane.enqueue({ kind: "test.gate", payload: { gate: g.key }, ...request });
    const startedInTurn = g.attempts.length > 0;
    return { id: unwrap(await pending).job.id, startedInTurn };
  });
}

describe("start-at-once asks may-start", () => {
  it("never starts a job whose TTL passed before its enqueue; the alarm settles it expired", async () => {
    const { lane, get } = await setup();
    const { id, startedInTurn } = await enqueueWatching(lane, { runAt: START - 10_000, ttlMs: 1_000 });
    expect(startedInTurn).toBe(false);
    expect(await row(lane, id)).toMatchObject({ state: "queued", attempts: 0, expires_at: START - 9_000 });
    await runDurableObjectAlarm(lane);
    expect(await get(id)).toMatchObject({ state: "settled", outcome: "cancelled", error: "expired", attempts: 0 });
  });

  it("still starts one whose TTL has not passed, however little is left", async () => {
    const { lane } = await setup();
    const { id, startedInTurn } = await enqueueWatching(lane, { runAt: START - 10_000, ttlMs: 10_001 });
    expect(startedInTurn).toBe(true);
    expect(await row(lane, id)).toMatchObject({ state: "running", attempts: 1 });
  });
});
