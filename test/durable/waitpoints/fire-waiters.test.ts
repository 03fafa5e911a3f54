/**
 * Waiters and dependents whose ids are not names (docs/api.md "Conventions"): a schedule's fire
 * `<name>@<T>` and a dead-letter copy `<lane>.<id>` (longer than a name) wait on waitpoints of other
 * shards, are depended on from other lanes and shards, and each registration, notice and withdrawal
 * between objects carries their id. On manual clocks.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { expect, it } from "vitest";
import { shardOf } from "../../../src/shared/shards.js";
import { call, expectError, get, post, PULL_KIND, setup, T0 } from "../../helpers/http.js";
import { fireAlarm, refusal, sql, value, type LaneStub } from "../../helpers/lane.js";
import { keyOn, setupSharded, type ShardedFixture } from "../../helpers/shards.js";

const MINUTE = 60_000;
const T1 = T0 + MINUTE;

/** A schedule name whose fire at T1 lives on shard `job` and whose `<fire>.approval` waitpoint on another. */
function fireApart(job: number, shards: number, prefix: string): string {
  for (let n = 0; ; n++) {
    const name = `${prefix}${n}`;
    const fire = `${name}@${T1}`;
    if (shardOf(fire, shards) === job && shardOf(`${fire}.approval`, shards) !== job) return name;
  }
}

async function schedule(base: string, name: string, job: Record<string, unknown>): Promise<void> {
  const put = await call("PUT", `${base}/schedules/${name}`, { json: { everyMs: MINUTE, job } });
  expect(put.status, JSON.stringify(put.body)).toBe(201);
}

/** Fires the schedules of a lane (or of a sharded lane's shard 0) due at T1. */
async function fire(clock: { set(at: number): void }, stub: LaneStub): Promise<void> {
  clock.set(T1);
  expect(await runDurableObjectAlarm(stub)).toBe(true);
}

const state = async (base: string, id: string) => (await get(`${base}/jobs/${id}`)).body.state;
const outboxes = (stub: LaneStub) => sql<{ n: number }>(stub, "SELECT (SELECT COUNT(*) FROM outbox) + (SELECT COUNT(*) FROM waitpoint_outbox) AS n").then((r) => r[0]!.n);

/** Runs each shard's alarm until no outbox holds a notice. */
async function deliverAll(fixture: ShardedFixture): Promise<void> {
  for (let i = 0; i < fixture.shards; i++) {
    await fireAlarm(fixture.shard(i));
    await expect.poll(() => outboxes(fixture.shard(i))).toBe(0);
  }
}

it("a fire's in-process wait on a waitpoint of another shard counts as its waiter and resumes with the result", async () => {
  const fixture = await setupSharded(4);
  const name = fireApart(1, 4, "approve");
  const id = `${name}@${T1}`;
  await schedule(fixture.base, name, { kind: "demo.approval", maxAttempts: 1 });
  await fire(fixture.clock, fixture.shard(0));
  await expect.poll(() => state(fixture.base, id)).toBe("blocked");
  const waitpoint = await get(`${fixture.base}/waitpoints/${id}.approval`);
  expect(waitpoint.body.waitpoint).toMatchObject({ state: "pending", waiters: 1 });

  expect((await post(`${fixture.base}/waitpoints/${id}.approval/complete`, { result: "yes" })).status).toBe(200);
  await deliverAll(fixture);
  await expect.poll(() => state(fixture.base, id)).toBe("settled");
  expect((await get(`${fixture.base}/jobs/${id}`)).body).toMatchObject({ outcome: "completed", result: { approved: "yes" } });
  expect((await get(`${fixture.base}/waitpoints/${id}.approval`)).body.waitpoint.waiters).toBe(0);
});

it("a fire's wait through the route on a waitpoint of another shard, withdrawn when the fire is cancelled", async () => {
  const fixture = await setupSharded(4);
  const name = fireApart(2, 4, "pull");
  const id = `${name}@${T1}`;
  await schedule(fixture.base, name, { kind: PULL_KIND });
  await fire(fixture.clock, fixture.shard(0));
  const claimed = (await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], leaseMs: 30_000 })).body.jobs[0];
  expect(claimed.id).toBe(id);
  const gate = keyOn(0, 4, "gate");
  const waited = await post(`${fixture.base}/jobs/${id}/wait`, { token: claimed.lease.token, waitpoint: gate });
  expect(waited.status, JSON.stringify(waited.body)).toBe(200);
  expect(waited.body.job.state).toBe("blocked");
  expect((await get(`${fixture.base}/waitpoints/${gate}`)).body.waitpoint.waiters).toBe(1);

  expect((await post(`${fixture.base}/jobs/${id}/cancel`)).status).toBe(200);
  await deliverAll(fixture);
  await expect.poll(async () => (await get(`${fixture.base}/waitpoints/${gate}`)).body.waitpoint.waiters).toBe(0);
});

it("a job of another lane depends on a fire's job, and is queued once the fire completes", async () => {
  const source = await setup();
  await schedule(source.base, "nightly", { kind: PULL_KIND });
  await fire(source.clock, source.stub);
  const id = `nightly@${T1}`;
  const other = await setup();
  const enqueued = await post(`${other.base}/jobs`, { id: "after", kind: PULL_KIND, dependsOn: [{ lane: source.lane, id }] });
  expect(enqueued.status, JSON.stringify(enqueued.body)).toBe(201);
  expect(enqueued.body.job).toMatchObject({ state: "blocked", dependsOn: [{ lane: source.lane, id }] });
  expect((await get(`${source.base}/jobs/${id}/dependents`)).body.dependents).toEqual([{ lane: other.lane, id: "after" }]);

  const claimed = (await post(`${source.base}/claims`, { kinds: [PULL_KIND], leaseMs: 30_000 })).body.jobs[0];
  expect((await post(`${source.base}/jobs/${id}/complete`, { token: claimed.lease.token, result: 7 })).status).toBe(200);
  await fireAlarm(source.stub);
  await expect.poll(() => state(other.base, "after")).toBe("queued");
  const next = (await post(`${other.base}/claims`, { kinds: [PULL_KIND], leaseMs: 30_000 })).body.jobs[0];
  expect(next.dependencies).toEqual([{ lane: source.lane, id, outcome: "completed", result: 7, error: null }]);
});

it.each([
  ["on its id's own shard", undefined],
  ["on its queue's shard, away from its id's own", keyOn(2, 4, "q")],
])("a job of a sharded lane depends on a fire's job of another shard of its lane (%s)", async (_where, queue) => {
  const fixture = await setupSharded(4);
  const name = fireApart(3, 4, "dep");
  const id = `${name}@${T1}`;
  await schedule(fixture.base, name, { kind: PULL_KIND, ...(queue ? { queue } : {}) });
  await fire(fixture.clock, fixture.shard(0));
  const dependent = keyOn(1, 4, "after");
  const enqueued = await post(`${fixture.base}/jobs`, { id: dependent, kind: "k-after", dependsOn: [{ id }] });
  expect(enqueued.status, JSON.stringify(enqueued.body)).toBe(201);
  expect(enqueued.body.job.state).toBe("blocked");

  const claimed = (await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], leaseMs: 30_000 })).body.jobs[0];
  expect((await post(`${fixture.base}/jobs/${id}/fail`, { token: claimed.lease.token, error: "no", retry: false })).status).toBe(200);
  await deliverAll(fixture);
  await expect.poll(() => state(fixture.base, dependent)).toBe("settled");
  expect((await get(`${fixture.base}/jobs/${dependent}`)).body).toMatchObject({ outcome: "failed" });
});

it("a dead-letter copy (its id longer than a name) waits on a waitpoint of another shard of its lane", async () => {
  const source = await setup();
  const target = await setupSharded(4);
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  const original = `long-${"z".repeat(120)}`;
  expect((await post(`${source.base}/jobs`, { id: original, kind: PULL_KIND })).status).toBe(201);
  await post(`${source.base}/fail`, { reason: "gone" });
  await fireAlarm(source.stub);
  const copyId = `${source.lane}.${original}`;
  await expect.poll(async () => (await get(`${target.base}/jobs/${copyId}`)).status).toBe(200);
  const claimed = (await post(`${target.base}/claims`, { kinds: ["deadletter"], leaseMs: 30_000 })).body.jobs[0];
  expect(claimed.id).toBe(copyId);
  const gate = keyOn((shardOf(copyId, 4) + 1) % 4, 4, "gate");
  const waited = await post(`${target.base}/jobs/${copyId}/wait`, { token: claimed.lease.token, waitpoint: gate });
  expect(waited.status, JSON.stringify(waited.body)).toBe(200);
  expect(waited.body.job.state).toBe("blocked");
  expect((await post(`${target.base}/waitpoints/${gate}/complete`, { result: "seen" })).status).toBe(200);
  await deliverAll(target);
  await expect.poll(() => state(target.base, copyId)).toBe("queued");
});

it("registrations and notices between objects take a fire's and a copy's id, and still refuse what no job id is", async () => {
  const fixture = await setupSharded(2);
  const stub = fixture.shard(0);
  const waiter = { lane: `${fixture.lane}#1` };
  const long = `${crypto.randomUUID()}.${"q".repeat(200)}`;
  for (const id of [`nightly@${T1}`, long]) {
    expect(value(await stub.registerWaitpointWaiters([{ id: "nowhere", waiter: { ...waiter, id } }], 2))).toEqual([{ status: "missing" }]);
    expect(value(await stub.registerDependents([{ id, dependent: { ...waiter, id } }], 2))).toEqual([{ status: "missing" }]);
    expect(value(await stub.notifyWaitpointWaiters([{ key: 1, waitpoint: { lane: fixture.lane, waitpoint: "w" }, waiter: id, outcome: "completed", result: null }]))).toEqual(["gone"]);
    expect(value(await stub.notifyDependencies([{ key: 1, dependency: { lane: fixture.lane, id }, dependent: id, outcome: "completed", result: null, error: null, generation: 0 }]))).toEqual(["gone"]);
  }
  for (const id of ["has space", "", "@1", "x".repeat(129), "a@b"]) {
    refusal(await stub.registerWaitpointWaiters([{ id: "w", waiter: { ...waiter, id } }], 2), "invalid_request");
    refusal(await stub.registerDependents([{ id: "d", dependent: { ...waiter, id } }], 2), "invalid_request");
    refusal(await stub.notifyWaitpointWaiters([{ key: 1, waitpoint: { lane: fixture.lane, waitpoint: "w" }, waiter: id, outcome: "completed", result: null }]), "invalid_request");
  }
});

it("dependsOn names a fire's job, and refuses an id no job may have or longer than a name", async () => {
  const lane = await setup();
  for (const id of ["a b", "@1", "x@", `${"x".repeat(200)}.y`]) {
    expectError(await post(`${lane.base}/jobs`, { kind: PULL_KIND, dependsOn: [{ id }] }), 400, "invalid_request");
  }
  expectError(await post(`${lane.base}/jobs`, { kind: PULL_KIND, dependsOn: [{ id: `never@${T1}` }] }), 409, "dependency_not_found");
  // A fire's id stays one no enqueue may choose.
  expectError(await post(`${lane.base}/jobs`, { id: `never@${T1}`, kind: PULL_KIND }), 400, "invalid_request");
});
