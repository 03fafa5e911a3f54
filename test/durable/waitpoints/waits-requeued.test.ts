/**
 * A job cancelled while it waits on a waitpoint, then requeued before the waitpoint settles: its
 * earlier wait has not heard, so the next attempt's wait blocks it on that wait again (the
 * settlement tells it there) instead of queueing it at once, which made the lane claim it and wait
 * again forever. In process (`ctx.waitFor`) and through the fenced wait route, on a manual clock.
 */
import { describe, expect, it } from "vitest";
import { setup as inProcess } from "../../helpers/dispatch.js";
import { transitions } from "../../helpers/executors.js";
import { claimOne, enqueueAndClaim, get, post, setup, type LaneFixture } from "../../helpers/http.js";
import { value } from "../../helpers/lane.js";
import { setupSharded } from "../../helpers/shards.js";
import { shardOf } from "../../../src/shared/shards.js";

const waitOn = (lane: LaneFixture, id: string, body: unknown) => post(`${lane.base}/jobs/${id}/wait`, body);

/** What `run` answers, or a rejection naming `what` once `ms` passed (a spinning lane never answers). */
async function within<T>(run: () => Promise<T>, what: string, ms = 3_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not answer in ${ms} ms`)), ms)));
  return Promise.race([run(), late]).finally(() => clearTimeout(timer));
}

describe("a waiting job cancelled then requeued", () => {
  it("in process: waits again on its unheard wait, runs once when the waitpoint completes, and completes with its result", async () => {
    const { lane, enqueue, get: job, waitFor, settled } = await inProcess();
    await enqueue({ id: "again", kind: "demo.approval", maxAttempts: 1 });
    await waitFor("again", (e) => e.from === "running" && e.to === "blocked");
    value(await lane.cancel("again"));
    const before = transitions("again").length;
    value(await within(async () => await lane.requeue("again"), "requeue"));
    await waitFor("again", (e) => e.from === "running" && e.to === "blocked" && transitions("again").indexOf(e) >= before);
    const blocked = await job("again");
    expect(blocked).toMatchObject({ state: "blocked", attempts: 0, generation: 2 });
    expect(value(await lane.getWaitpoint("again.approval"))).toMatchObject({ state: "pending", waiters: 1 });
    value(await within(async () => await lane.completeWaitpoint("again.approval", { result: "yes" }), "completion"));
    expect(await settled("again")).toMatchObject({ outcome: "completed", result: { approved: "yes" }, attempts: 1, generation: 3 });
  });

  it("through the wait route: the next attempt's wait blocks the job, and the completion releases it with the result", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    expect((await waitOn(lane, claimed.id, { token: claimed.lease.token, waitpoint: "ok-1" })).body.job.state).toBe("blocked");
    expect((await post(`${lane.base}/jobs/${claimed.id}/cancel`)).status).toBe(200);
    expect((await post(`${lane.base}/jobs/${claimed.id}/requeue`)).status).toBe(200);
    const next = await claimOne(lane);
    expect(next.id).toBe(claimed.id);
    const waited = await waitOn(lane, next.id, { token: next.lease.token, waitpoint: "ok-1" });
    expect(waited.status, JSON.stringify(waited.body)).toBe(200);
    expect(waited.body.job).toMatchObject({ state: "blocked", attempts: 0 });
    expect(waited.body.waitpoint).toMatchObject({ state: "pending", waiters: 1 });
    expect((await get(lane.base)).body.counts).toMatchObject({ blocked: 1, queued: 0 });
    expect((await post(`${lane.base}/waitpoints/ok-1/complete`, { result: { n: 1 } })).status).toBe(200);
    const last = await claimOne(lane);
    expect(last).toMatchObject({ id: claimed.id, attempts: 1 });
    expect(last.dependencies).toEqual([{ lane: lane.lane, waitpoint: "ok-1", outcome: "completed", result: { n: 1 } }]);
    expect((await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: last.lease.token, result: "done" })).status).toBe(200);
  });
});

it("on a 4-shard lane: a job cancelled and requeued while it waits on a waitpoint of another shard waits again, and its completion releases it", async () => {
  const lane = await setupSharded(4);
  let id = "far-0";
  for (let n = 1; shardOf(`${id}.approval`, 4) === shardOf(id, 4); n++) id = `far-${n}`;
  const state = async () => (await get(`${lane.base}/jobs/${id}`)).body;
  expect((await post(`${lane.base}/jobs`, { id, kind: "demo.approval", maxAttempts: 1 })).status).toBe(201);
  await expect.poll(async () => (await state()).state).toBe("blocked");
  expect((await post(`${lane.base}/jobs/${id}/cancel`)).status).toBe(200);
  expect((await post(`${lane.base}/jobs/${id}/requeue`)).status).toBe(200);
  await expect.poll(async () => (await state()).state).toBe("blocked");
  const blocked = await state();
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect((await state()).generation).toBe(blocked.generation);
  expect((await post(`${lane.base}/waitpoints/${id}.approval/complete`, { result: "ok" })).status).toBe(200);
  await expect.poll(state).toMatchObject({ state: "settled", outcome: "completed", result: { approved: "ok" }, attempts: 1 });
});
