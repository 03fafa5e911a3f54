/**
 * A job waiting on a waitpoint of another object (another lane, or another shard of a sharded lane)
 * that stops waiting otherwise than by hearing it (cancelled, expired, failed by the lane's fail or by
 * another dependency, deleted) withdraws its registration: written in the transaction that settles or
 * deletes it, told right after (or by its lane's alarm, across restarts), applied once by the
 * waitpoint's object, so that its `waiters` drop at once and its settlement tells no one. On manual
 * clocks.
 */
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { lanes } from "../../helpers/dependency-lanes.js";
import { PULL_KIND, post } from "../../helpers/http.js";
import { claimOne, fireAlarm, sql, value, type LaneStub } from "../../helpers/lane.js";
import { restartLane } from "../../helpers/restart.js";
import { keyOn, setupSharded } from "../../helpers/shards.js";
import type { LaneParts } from "../../../src/durable/lane-parts.js";
import { deleteJobs } from "../../../src/durable/store/deletion.js";

const job = async (stub: LaneStub, id: string) => value(await stub.getJob(id));
const count = (stub: LaneStub, table: string) => sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM ${table}`).then((r) => r[0]!.n);
const waiters = async (stub: LaneStub, id: string) => value(await stub.getWaitpoint(id)).waiters;
const partsOf = (lane: unknown) => (lane as { parts: LaneParts }).parts;

/** Runs the waiter lane's alarm and waits until its withdrawals are acknowledged. */
async function withdrawByAlarm(stub: LaneStub): Promise<void> {
  await fireAlarm(stub);
  await runInDurableObject(stub, async () => {});
  await expect.poll(() => count(stub, "waitpoint_withdrawals")).toBe(0);
}

/** Lane A holds waitpoint `w`; job `p` of lane B waits on it (counted once there). */
async function waiting(spec: Record<string, unknown> = {}) {
  const fixture = await lanes(2, "wp-withdraw");
  const [a, b] = fixture.lanes as [{ name: string; stub: LaneStub }, { name: string; stub: LaneStub }];
  value(await a.stub.createWaitpoint({ id: "w" }));
  expect(value(await b.stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ lane: a.name, waitpoint: "w" }], ...spec })).job.state).toBe("blocked");
  expect(await waiters(a.stub, "w")).toBe(1);
  return { clock: fixture.clock, a, b };
}

/** The waitpoint completes: no notice is owed to the job that stopped waiting, which stays as it was. */
async function completesUntold(a: { stub: LaneStub }, b: { stub: LaneStub }, settled: Record<string, unknown>): Promise<void> {
  const completed = value(await a.stub.completeWaitpoint("w", { result: 1 }));
  expect(completed.waitpoint.waiters).toBe(0);
  expect(await count(a.stub, "waitpoint_outbox")).toBe(0);
  expect(await count(a.stub, "waitpoint_waiters")).toBe(0);
  expect(await job(b.stub, "p")).toMatchObject(settled);
  expect(value(await b.stub.info()).counts).toMatchObject({ blocked: 0, queued: 0 });
}

it("a remote waiter cancelled stops counting at once, and the completion tells it nothing", async () => {
  const { a, b } = await waiting();
  expect(value(await b.stub.cancel("p", {})).status).toBe("cancelled");
  expect(await waiters(a.stub, "w")).toBe(0);
  expect(await count(b.stub, "waitpoint_withdrawals")).toBe(0);
  await completesUntold(a, b, { state: "settled", outcome: "cancelled" });
});

it("a remote waiter failed by the lane's fail stops counting at once", async () => {
  const { a, b } = await waiting();
  expect(value(await b.stub.failLane({ reason: "downstream gone" })).failed).toEqual(["p"]);
  expect(await waiters(a.stub, "w")).toBe(0);
  await completesUntold(a, b, { state: "settled", outcome: "failed", error: "downstream gone" });
});

it("a remote waiter purged with its queue stops counting at once", async () => {
  const { a, b } = await waiting({ queue: "q" });
  expect(value(await b.stub.purgeQueue("q")).purged).toBe(1);
  expect(await waiters(a.stub, "w")).toBe(0);
  value(await a.stub.completeWaitpoint("w", { result: 1 }));
  expect(await count(a.stub, "waitpoint_outbox")).toBe(0);
  expect(await count(b.stub, "jobs")).toBe(0);
});

it("a remote waiter that expires is withdrawn by the alarm that expires it", async () => {
  const { clock, a, b } = await waiting({ ttlMs: 1_000 });
  clock.advance(1_000);
  await withdrawByAlarm(b.stub);
  expect(await waiters(a.stub, "w")).toBe(0);
  await completesUntold(a, b, { state: "settled", outcome: "cancelled", error: "expired" });
});

it("a remote waiter failed by another dependency stops counting once its lane's alarm runs", async () => {
  const fixture = await lanes(2, "wp-withdraw");
  const [a, b] = fixture.lanes as [{ name: string; stub: LaneStub }, { name: string; stub: LaneStub }];
  value(await a.stub.createWaitpoint({ id: "w" }));
  value(await b.stub.enqueue({ id: "d", kind: "k-d", maxAttempts: 1 }));
  value(await b.stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ lane: a.name, waitpoint: "w" }, { id: "d" }] }));
  expect(await waiters(a.stub, "w")).toBe(1);
  const claimed = await claimOne(b.stub, { kinds: ["k-d"] });
  value(await b.stub.fail("d", { token: claimed.lease.token, error: "boom" }));
  // The alarm tells p of d (its outbox), which fails it, then withdraws p's registration.
  await withdrawByAlarm(b.stub);
  expect(await job(b.stub, "p")).toMatchObject({ state: "settled", outcome: "failed" });
  expect(await waiters(a.stub, "w")).toBe(0);
  await completesUntold(a, b, { state: "settled", outcome: "failed", error: `dependency ${b.name}/d failed` });
});

it("a withdrawal survives a restart of the waiter's lane and is delivered by its alarm", async () => {
  const { clock, a, b } = await waiting();
  // Cancelled in the lane with no delivery after it (as a crash right after the commit would leave it).
  await runInDurableObject(b.stub, (lane) => value(partsOf(lane).cancels.cancel("p", null)));
  expect(await count(b.stub, "waitpoint_withdrawals")).toBe(1);
  expect(await waiters(a.stub, "w")).toBe(1);
  const restarted = await restartLane(b.name, b.stub, clock);
  expect(await restarted.storedAlarm()).not.toBeNull();
  await withdrawByAlarm(restarted);
  expect(await waiters(a.stub, "w")).toBe(0);
  await completesUntold(a, { stub: restarted }, { state: "settled", outcome: "cancelled" });
});

it("a withdrawal the waitpoint's lane cannot take now does not fail the cancel, and the alarm retries it with backoff", async () => {
  const { clock, a, b } = await waiting();
  // The waitpoint's lane refuses everything for a while: a newer schema, as after a rolled-back deploy.
  await sql(a.stub, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 0)`);
  let holder = await restartLane(a.name, a.stub, clock);
  expect(value(await b.stub.cancel("p", {})).status).toBe("cancelled");
  const [owed] = await sql<{ attempts: number; next_at: number }>(b.stub, `SELECT attempts, next_at FROM waitpoint_withdrawals`);
  expect(owed!.attempts).toBe(1);
  expect(owed!.next_at).toBeGreaterThan(clock.now());
  expect(await b.stub.storedAlarm()).toBe(owed!.next_at);
  await sql(holder, `DELETE FROM schema_migrations WHERE version = 999`);
  holder = await restartLane(a.name, holder, clock);
  expect(await waiters(holder, "w")).toBe(1);
  clock.set(owed!.next_at);
  await withdrawByAlarm(b.stub);
  expect(await waiters(holder, "w")).toBe(0);
  await completesUntold({ stub: holder }, b, { state: "settled", outcome: "cancelled" });
});

it("a withdrawal of a deleted job leaves the registration of the job enqueued again under its id", async () => {
  const { a, b } = await waiting();
  // Deleted with no delivery after it, then enqueued again before its withdrawal is told.
  await runInDurableObject(b.stub, (lane, state) => {
    const seq = state.storage.sql.exec<{ seq: number }>("SELECT seq FROM jobs WHERE id = 'p'").one().seq;
    state.storage.transactionSync(() => deleteJobs(state.storage.sql, [{ seq, id: "p" }]));
    partsOf(lane).wake.afterChange();
  });
  expect(value(await b.stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ lane: a.name, waitpoint: "w" }] })).job.state).toBe("blocked");
  await withdrawByAlarm(b.stub);
  expect(await waiters(a.stub, "w")).toBe(1);
  value(await a.stub.completeWaitpoint("w", { result: 2 }));
  expect((await claimOne(b.stub, { kinds: ["k-p"] })).dependencies).toEqual([{ lane: a.name, waitpoint: "w", outcome: "completed", result: 2 }]);
});

it("a withdrawal that arrives after the waitpoint settled changes nothing there, and the job stays cancelled", async () => {
  const { a, b } = await waiting();
  // Settled with its notice not yet delivered; the cancel's withdrawal finds no registration.
  await runInDurableObject(a.stub, (lane) => {
    value(partsOf(lane).waitpoints.complete("w", JSON.stringify("late")));
    partsOf(lane).wake.afterChange();
  });
  expect(value(await b.stub.cancel("p", {})).status).toBe("cancelled");
  expect(await count(b.stub, "waitpoint_withdrawals")).toBe(0);
  expect(await count(a.stub, "waitpoint_outbox")).toBe(1);
  await fireAlarm(a.stub);
  await runInDurableObject(a.stub, async () => {});
  await expect.poll(() => count(a.stub, "waitpoint_outbox")).toBe(0);
  expect(await job(b.stub, "p")).toMatchObject({ state: "settled", outcome: "cancelled" });
  expect(await waiters(a.stub, "w")).toBe(0);
});

it("on a 4-shard lane a job cancelled while its attempt waits on a waitpoint of another shard stops counting there at once", async () => {
  const lane = await setupSharded(4);
  const id = keyOn(0, 4, "job");
  const waitpoint = keyOn(2, 4, "gate");
  expect((await post(`${lane.base}/jobs`, { id, kind: PULL_KIND })).status).toBe(201);
  const token = (await post(`${lane.base}/claims`, { kinds: [PULL_KIND] })).body.jobs[0].lease.token;
  expect((await post(`${lane.base}/jobs/${id}/wait`, { token, waitpoint })).body.job.state).toBe("blocked");
  expect(await waiters(lane.shard(2), waitpoint)).toBe(1);
  expect((await post(`${lane.base}/jobs/${id}/cancel`)).status).toBe(200);
  expect(await waiters(lane.shard(2), waitpoint)).toBe(0);
  expect((await post(`${lane.base}/waitpoints/${waitpoint}/complete`, { result: "yes" })).body.waitpoint.waiters).toBe(0);
  expect(await count(lane.shard(2), "waitpoint_outbox")).toBe(0);
  expect(await job(lane.shard(0), id)).toMatchObject({ state: "settled", outcome: "cancelled" });
});

it("on a 4-shard lane a job whose dependsOn names a waitpoint of another shard, purged, stops counting there at once", async () => {
  const lane = await setupSharded(4);
  const id = keyOn(1, 4, "job");
  const waitpoint = keyOn(3, 4, "gate");
  expect((await post(`${lane.base}/waitpoints`, { id: waitpoint })).status).toBe(201);
  expect((await post(`${lane.base}/jobs`, { id, kind: PULL_KIND, queue: "q", dependsOn: [{ waitpoint }] })).body.job.state).toBe("blocked");
  expect(await waiters(lane.shard(3), waitpoint)).toBe(1);
  const purged = await post(`${lane.base}/queues/q/purge`);
  expect(purged.status, JSON.stringify(purged.body)).toBe(200);
  expect(await waiters(lane.shard(3), waitpoint)).toBe(0);
  expect((await post(`${lane.base}/waitpoints/${waitpoint}/complete`)).body.waitpoint.waiters).toBe(0);
  expect(await count(lane.shard(3), "waitpoint_outbox")).toBe(0);
});

it("on a 4-shard lane a job cancelled, requeued and waiting again on the same waitpoint withdraws its new registration when cancelled again", async () => {
  const lane = await setupSharded(4);
  const id = keyOn(0, 4, "job");
  const waitpoint = keyOn(3, 4, "gate");
  expect((await post(`${lane.base}/jobs`, { id, kind: PULL_KIND })).status).toBe(201);
  const waitAgain = async () => {
    const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
    expect(claimed.body.jobs, JSON.stringify(await job(lane.shard(0), id))).toHaveLength(1);
    expect((await post(`${lane.base}/jobs/${id}/wait`, { token: claimed.body.jobs[0].lease.token, waitpoint })).body.job.state).toBe("blocked");
    expect(await waiters(lane.shard(3), waitpoint)).toBe(1);
    expect((await post(`${lane.base}/jobs/${id}/cancel`)).status).toBe(200);
    expect(await waiters(lane.shard(3), waitpoint)).toBe(0);
  };
  await waitAgain();
  expect((await post(`${lane.base}/jobs/${id}/requeue`)).status).toBe(200);
  // Its earlier wait is unheard: the next one waits on it again, registered anew under its own token.
  await waitAgain();
  expect(await count(lane.shard(3), "waitpoint_waiters")).toBe(0);
});
