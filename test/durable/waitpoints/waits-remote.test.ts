/**
 * Jobs that wait on a waitpoint of another object (another lane, or another shard of a sharded lane):
 * the enqueue registers the waiter with the waitpoint's object, which proves it exists and answers its
 * settlement when it has one; the settlement writes a notice per waiter into that object's outbox,
 * delivered by its alarm (across restarts) and applied once by the waiter's lane. On manual clocks.
 */
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { OUTBOX_IN_FLIGHT_MS } from "../../../src/shared/defaults.js";
import { lanes } from "../../helpers/dependency-lanes.js";
import { PULL_KIND, get, post } from "../../helpers/http.js";
import { shardOf } from "../../../src/shared/shards.js";
import { claimOne, fireAlarm, refusal, row, sql, value, type LaneStub } from "../../helpers/lane.js";
import { restartLane } from "../../helpers/restart.js";
import type { LaneParts } from "../../../src/durable/lane-parts.js";
import type { WaitpointOutboxHost } from "../../../src/durable/waits/waitpoint-outbox.js";
import { keyOn, setupSharded } from "../../helpers/shards.js";

const job = async (stub: LaneStub, id: string) => value(await stub.getJob(id));
const count = (stub: LaneStub, table: string) => sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM ${table}`).then((r) => r[0]!.n);

/** Runs the alarm of the waitpoint's object and waits until its notices are acknowledged. */
async function deliver(stub: LaneStub): Promise<void> {
  await fireAlarm(stub);
  await runInDurableObject(stub, async () => {});
  await expect.poll(() => count(stub, "waitpoint_outbox")).toBe(0);
}

it("a job of lane B waits on a waitpoint of lane A, counted among its waiters, and is released with its result", async () => {
  const { lanes: [a, b] } = await lanes(2, "wp-remote");
  value(await a!.stub.createWaitpoint({ id: "order.paid" }));
  const enqueued = value(await b!.stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ lane: a!.name, waitpoint: "order.paid" }] }));
  expect(enqueued.job.state).toBe("blocked");
  expect(value(await a!.stub.getWaitpoint("order.paid")).waiters).toBe(1);

  value(await a!.stub.completeWaitpoint("order.paid", { result: { paid: 42 } }));
  // Told before the completion answers, as a waiter in its own lane is: no alarm has run.
  expect((await job(b!.stub, "p")).state).toBe("queued");
  expect(await count(a!.stub, "waitpoint_outbox")).toBe(0);
  expect(value(await a!.stub.getWaitpoint("order.paid")).waiters).toBe(0);
  expect((await claimOne(b!.stub, { kinds: ["k-p"] })).dependencies).toEqual([{ lane: a!.name, waitpoint: "order.paid", outcome: "completed", result: { paid: 42 } }]);
});

it("a completion flushes before it tells its waiters elsewhere: a held claim takes the job it released here while the tell to a slow lane is pending", async () => {
  const { lanes: [a, b] } = await lanes(2, "wp-remote");
  value(await a!.stub.createWaitpoint({ id: "w" }));
  value(await a!.stub.enqueue({ id: "here", kind: "k-here", dependsOn: [{ waitpoint: "w" }] }));
  value(await b!.stub.enqueue({ id: "there", kind: "k-there", dependsOn: [{ lane: a!.name, waitpoint: "w" }] }));
  // Held before the completion arrives (calls on one stub arrive in order).
  const held = a!.stub.claim({ kinds: ["k-here"], waitMs: 30_000 });
  // A's notices reach the waiter's lane only once the test lets them (made and let go in A's I/O context).
  let release!: () => void;
  await runInDurableObject(a!.stub, (lane) => {
    const outbox = (lane as unknown as { parts: { waitpointOutbox: { host: WaitpointOutboxHost; tellNowMaxMs: number } } }).parts.waitpointOutbox;
    const host = outbox.host;
    // Held by the test, not by the bound: on a loaded machine the test's steps may take longer than the real 2 s.
    outbox.tellNowMaxMs = 60_000;
    const peer = host.peer.bind(host);
    const slow = new Promise<void>((resolve) => (release = resolve));
    // Only the notices' delivery goes through this peer here.
    host.peer = (name) => ({ notifyWaitpointWaiters: (notices: unknown) => slow.then(() => peer(name).notifyWaitpointWaiters(notices)) }) as ReturnType<typeof peer>;
  });
  let answered = false;
  const completing = a!.stub.completeWaitpoint("w", { result: 1 }).then((answer) => ((answered = true), answer));
  // The held claim's answer does not wait for the tell: the completion has not answered yet (before
  // the fix the claim was answered only once the completion stopped waiting, after TELL_NOW_MAX_MS).
  expect(value(await held).jobs.map((j) => j.id)).toEqual(["here"]);
  expect(answered).toBe(false);
  expect((await job(b!.stub, "there")).state).toBe("blocked");
  await runInDurableObject(a!.stub, () => release());
  expect(value(await completing).waitpoint.state).toBe("completed");
  // Still told before the completion answered.
  expect((await job(b!.stub, "there")).state).toBe("queued");
  expect(await count(a!.stub, "waitpoint_outbox")).toBe(0);
});

it("a remote waitpoint's timeout fails its waiter under policy fail and queues it under ignore", async () => {
  const { clock, lanes: [a, b] } = await lanes(2, "wp-remote");
  value(await a!.stub.createWaitpoint({ id: "w", timeoutMs: 1_000 }));
  value(await b!.stub.enqueue({ id: "f", kind: "k-f", dependsOn: [{ lane: a!.name, waitpoint: "w" }] }));
  value(await b!.stub.enqueue({ id: "i", kind: "k-i", dependsOn: [{ lane: a!.name, waitpoint: "w" }], dependencyFailure: "ignore" }));
  expect(value(await a!.stub.getWaitpoint("w")).waiters).toBe(2);
  clock.advance(1_000);
  await fireAlarm(a!.stub); // times it out
  expect(value(await a!.stub.getWaitpoint("w")).state).toBe("timedOut");
  await deliver(a!.stub);
  expect(await job(b!.stub, "f")).toMatchObject({ state: "settled", outcome: "failed", error: `waitpoint ${a!.name}/w timedOut`, attempts: 0 });
  expect((await job(b!.stub, "i")).state).toBe("queued");
  expect((await claimOne(b!.stub, { kinds: ["k-i"] })).dependencies).toEqual([{ lane: a!.name, waitpoint: "w", outcome: "timedOut", result: null }]);
});

it("a remote waitpoint settled before the enqueue counts at once, and leaves no waiter behind", async () => {
  const { clock, lanes: [a, b] } = await lanes(2, "wp-remote");
  value(await a!.stub.completeWaitpoint("done", { result: 7 }));
  value(await a!.stub.createWaitpoint({ id: "late", timeoutMs: 10 }));
  clock.advance(10);
  await fireAlarm(a!.stub);
  expect(value(await b!.stub.enqueue({ id: "q", kind: "k-q", dependsOn: [{ lane: a!.name, waitpoint: "done" }] })).job.state).toBe("queued");
  expect((await claimOne(b!.stub, { kinds: ["k-q"] })).dependencies).toEqual([{ lane: a!.name, waitpoint: "done", outcome: "completed", result: 7 }]);
  const failed = value(await b!.stub.enqueue({ id: "x", kind: "k-x", dependsOn: [{ lane: a!.name, waitpoint: "late" }] }));
  expect(failed.job).toMatchObject({ state: "settled", outcome: "failed", error: `waitpoint ${a!.name}/late timedOut` });
  expect(await count(a!.stub, "waitpoint_waiters")).toBe(0);
  expect(value(await a!.stub.getWaitpoint("done")).waiters).toBe(0);
});

it("a remote waitpoint that does not exist refuses the enqueue with dependency_not_found, nothing left in either lane", async () => {
  const { lanes: [a, b] } = await lanes(2, "wp-remote");
  value(await a!.stub.createWaitpoint({ id: "there" }));
  const error = refusal(await b!.stub.enqueue({ id: "p", kind: "k", dependsOn: [{ lane: a!.name, waitpoint: "there" }, { lane: a!.name, waitpoint: "gone" }] }), "dependency_not_found");
  expect(error.details).toEqual({ dependencies: [{ lane: a!.name, waitpoint: "gone" }] });
  expect(await row(b!.stub, "p")).toBeUndefined();
  // The registration the existing one took is withdrawn: no waiter, no notice once it settles.
  expect(await count(a!.stub, "waitpoint_waiters")).toBe(0);
  expect(value(await a!.stub.getWaitpoint("there")).waiters).toBe(0);
  value(await a!.stub.completeWaitpoint("there", { result: 1 }));
  expect(await count(a!.stub, "waitpoint_outbox")).toBe(0);
  expect(await count(b!.stub, "jobs")).toBe(0);
});

it("a notice survives a restart of the waitpoint's lane between the settlement and its delivery", async () => {
  const { clock, lanes: [a, b] } = await lanes(2, "wp-remote");
  value(await a!.stub.createWaitpoint({ id: "w" }));
  value(await b!.stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ lane: a!.name, waitpoint: "w" }] }));
  // Settled in the lane with no delivery after it (as a crash right after the commit would leave it).
  await runInDurableObject(a!.stub, (lane) => value((lane as unknown as { parts: LaneParts }).parts.waitpoints.complete("w", JSON.stringify("kept"))));
  expect(await count(a!.stub, "waitpoint_outbox")).toBe(1);
  const restarted = await restartLane(a!.name, a!.stub, clock);
  // Kept from retention and sweep while its waiter is untold.
  clock.advance(10);
  expect(value(await restarted.sweepWaitpoints({ settledBefore: clock.now() }))).toEqual({ removed: 0 });
  expect(await restarted.storedAlarm()).not.toBeNull();
  await deliver(restarted);
  expect((await claimOne(b!.stub, { kinds: ["k-p"] })).dependencies).toEqual([{ lane: a!.name, waitpoint: "w", outcome: "completed", result: "kept" }]);
  expect(value(await restarted.sweepWaitpoints({ settledBefore: clock.now() }))).toEqual({ removed: 1 });
});

it("a notice told twice applies once, and the settlement told after it is acknowledged as a repeat", async () => {
  const { clock, lanes: [a, b] } = await lanes(2, "wp-remote");
  value(await a!.stub.createWaitpoint({ id: "w" }));
  value(await b!.stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ lane: a!.name, waitpoint: "w" }] }));
  const notice = { key: 1, waitpoint: { lane: a!.name, waitpoint: "w" }, waiter: "p", outcome: "completed", result: "1" };
  expect(value(await b!.stub.notifyWaitpointWaiters([notice]))).toEqual(["applied"]);
  expect(value(await b!.stub.notifyWaitpointWaiters([notice, notice]))).toEqual(["repeat", "repeat"]);
  expect(value(await b!.stub.notifyWaitpointWaiters([{ ...notice, waiter: "nobody" }, { ...notice, waitpoint: { lane: a!.name, waitpoint: "other" } }]))).toEqual(["gone", "gone"]);
  refusal(await b!.stub.notifyWaitpointWaiters([{ ...notice, outcome: "failed" }]), "invalid_request");
  expect(value(await b!.stub.info()).counts.blocked).toBe(0);
  expect((await job(b!.stub, "p")).state).toBe("queued");
  // The real settlement comes after: acknowledged as a repeat, the job released once.
  value(await a!.stub.completeWaitpoint("w", { result: 1 }));
  await fireAlarm(a!.stub);
  await runInDurableObject(a!.stub, async () => {});
  clock.advance(OUTBOX_IN_FLIGHT_MS);
  await expect.poll(() => count(a!.stub, "waitpoint_outbox")).toBe(0);
  expect((await claimOne(b!.stub, { kinds: ["k-p"] })).dependencies).toEqual([{ lane: a!.name, waitpoint: "w", outcome: "completed", result: 1 }]);
});

it("on a 4-shard lane the wait route creates a missing waitpoint of another shard pending there, and its timeout resumes the job", async () => {
  const lane = await setupSharded(4);
  const id = keyOn(0, 4, "job");
  const waitpoint = keyOn(2, 4, "gate");
  expect((await post(`${lane.base}/jobs`, { id, kind: PULL_KIND })).status).toBe(201);
  const token = (await post(`${lane.base}/claims`, { kinds: [PULL_KIND] })).body.jobs[0].lease.token;
  const waited = await post(`${lane.base}/jobs/${id}/wait`, { token, waitpoint, timeoutMs: 1_000 });
  expect(waited.status, JSON.stringify(waited.body)).toBe(200);
  expect(waited.body.job.state).toBe("blocked");
  expect(waited.body.waitpoint).toMatchObject({ id: waitpoint, state: "pending", waiters: 1 });
  expect(value(await lane.shard(2).getWaitpoint(waitpoint))).toMatchObject({ state: "pending", waiters: 1 });
  expect(await count(lane.shard(0), "waitpoints")).toBe(0);
  lane.clock.advance(1_000);
  await fireAlarm(lane.shard(2));
  await deliver(lane.shard(2));
  const resumed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
  expect(resumed.body.jobs.map((j: any) => [j.id, j.dependencies])).toEqual([[id, [{ lane: lane.lane, waitpoint, outcome: "timedOut", result: null }]]]);
});

it("on a 4-shard lane the ack op wait (createWorker's ctx.waitFor) waits on a waitpoint of another shard, beside a wait on its own", async () => {
  const lane = await setupSharded(4);
  const id = keyOn(1, 4, "job");
  const near = keyOn(1, 4, "near");
  const far = keyOn(3, 4, `${id}.approval`);
  for (const job of [id, near]) expect((await post(`${lane.base}/jobs`, { id: job, kind: PULL_KIND })).status).toBe(201);
  const claimed = (await post(`${lane.base}/claims`, { kinds: [PULL_KIND], max: 2 })).body.jobs as { id: string; lease: { token: string } }[];
  const token = (job: string) => claimed.find((j) => j.id === job)!.lease.token;
  const waitpointNear = keyOn(1, 4, "gate");
  const acked = await post(`${lane.base}/acks`, { acks: [{ op: "wait", id, token: token(id), waitpoint: far }, { op: "wait", id: near, token: token(near), waitpoint: waitpointNear }] });
  expect(acked.body.results, JSON.stringify(acked.body)).toEqual([{ id, ok: true }, { id: near, ok: true }]);
  expect(value(await lane.shard(3).getWaitpoint(far)).waiters).toBe(1);
  expect((await post(`${lane.base}/waitpoints/${far}/complete`, { result: "yes" })).status).toBe(200);
  const resumed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
  expect(resumed.body.jobs.map((j: any) => [j.id, j.dependencies])).toEqual([[id, [{ lane: lane.lane, waitpoint: far, outcome: "completed", result: "yes" }]]]);
});

it("on a 4-shard lane ctx.waitFor in process waits on <job id>.<name> on the shard that id hashes to, and resumes with its completion", async () => {
  const lane = await setupSharded(4);
  let id = "order-0";
  for (let n = 1; shardOf(`${id}.approval`, 4) === shardOf(id, 4); n++) id = `order-${n}`;
  expect((await post(`${lane.base}/jobs`, { id, kind: "demo.approval", maxAttempts: 1 })).status).toBe(201);
  await expect.poll(async () => (await get(`${lane.base}/jobs/${id}`)).body.state).toBe("blocked");
  expect(value(await lane.shard(shardOf(`${id}.approval`, 4)).getWaitpoint(`${id}.approval`))).toMatchObject({ state: "pending", waiters: 1 });
  expect((await post(`${lane.base}/waitpoints/${id}.approval/complete`, { result: "ok" })).status).toBe(200);
  await expect.poll(async () => (await get(`${lane.base}/jobs/${id}`)).body).toMatchObject({ state: "settled", outcome: "completed", result: { approved: "ok" }, attempts: 1 });
});
