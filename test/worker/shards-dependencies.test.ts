/**
 * Dependencies on sharded lanes (docs/concepts.md "Sharded lanes"): a job waits for a job of another
 * shard of its lane, of another lane, or is waited for from another lane, through the same outbox; a
 * registration finds its job through the lane's shards, and a notice goes to the dependent's own
 * shard. Every shard runs on one manual clock: the test runs the dependency's shard's alarm, which
 * delivers its outbox.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { expectError, get, post, PULL_KIND } from "../helpers/http.js";
import { fireAlarm } from "../helpers/lane.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

async function enqueue(fixture: ShardedFixture, spec: Record<string, unknown>): Promise<any> {
  const answer = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, ...spec });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  fixture.clock.advance(1);
  return answer.body.job;
}

/** Claims the lane's due jobs (up to 10), by id. */
async function claim(fixture: ShardedFixture): Promise<Map<string, any>> {
  const claimed = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 10 });
  expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
  return new Map(claimed.body.jobs.map((job: any) => [job.id, job]));
}

/** Claims job `id` and settles it (`complete` with `result`, or `fail` for good), then runs its shard's alarm: the outbox goes out. */
async function settle(fixture: ShardedFixture, id: string, shard: number, how: { result: unknown } | { error: string }): Promise<void> {
  const job = (await claim(fixture)).get(id);
  expect(job, `${id} claimed`).toBeDefined();
  const body = "result" in how ? { token: job.lease.token, result: how.result } : { token: job.lease.token, error: how.error, retry: false };
  const settled = await post(`${fixture.base}/jobs/${id}/${"result" in how ? "complete" : "fail"}`, body);
  expect(settled.status, JSON.stringify(settled.body)).toBe(200);
  await fireAlarm(fixture.shard(shard));
}

const stateOf = async (fixture: ShardedFixture, id: string) => (await get(`${fixture.base}/jobs/${id}`)).body;

describe("dependencies on a sharded lane", () => {
  it("a job waits for a job on another shard of its lane, and is claimed with its result", async () => {
    const fixture = await setupSharded(4);
    const parent = keyOn(3, 4, "parent");
    const child = keyOn(1, 4, "child");
    await enqueue(fixture, { id: parent });
    const blocked = await enqueue(fixture, { id: child, dependsOn: [{ id: parent }] });
    expect(blocked.state).toBe("blocked");
    expect((await get(`${fixture.base}/jobs/${parent}/dependents`)).body).toEqual({ dependents: [{ lane: fixture.lane, id: child }] });
    expect((await get(fixture.base)).body.counts.blocked).toBe(1);

    await settle(fixture, parent, 3, { result: { rows: 7 } });
    await expect.poll(async () => (await stateOf(fixture, child)).state, { timeout: 5_000, interval: 20 }).toBe("queued");
    const claimed = (await claim(fixture)).get(child);
    expect(claimed.dependencies).toEqual([{ lane: fixture.lane, id: parent, outcome: "completed", result: { rows: 7 }, error: null }]);
  });

  it("fails a dependent on another shard when its dependency fails (policy fail), naming it", async () => {
    const fixture = await setupSharded(4);
    const parent = keyOn(2, 4, "parent");
    const child = keyOn(0, 4, "child");
    await enqueue(fixture, { id: parent, maxAttempts: 1 });
    await enqueue(fixture, { id: child, dependsOn: [{ id: parent }] });
    await settle(fixture, parent, 2, { error: "boom" });
    await expect.poll(async () => (await stateOf(fixture, child)).state, { timeout: 5_000, interval: 20 }).toBe("settled");
    expect(await stateOf(fixture, child)).toMatchObject({ outcome: "failed", error: `dependency ${fixture.lane}/${parent} failed`, attempts: 0 });
  });

  it("another lane's job waits for a sharded lane's job held by a reservation, and a sharded lane's job for another lane's", async () => {
    const sharded = await setupSharded(4);
    const other = await setupSharded(1);
    // A job whose queue lives on shard 2 and whose id's own shard is 0: found through its id's reservation.
    const queue = keyOn(2, 4, "q");
    const dep = keyOn(0, 4, "dep");
    await enqueue(sharded, { id: dep, queue });
    const waiting = await enqueue(other, { id: "waits", dependsOn: [{ lane: sharded.lane, id: dep }] });
    expect(waiting.state).toBe("blocked");
    expect((await get(`${sharded.base}/jobs/${dep}/dependents`)).body).toEqual({ dependents: [{ lane: other.lane, id: "waits" }] });

    // And the other way: a job on shard 1 waits for the other lane's job; its notice goes to shard 1.
    const onShard1 = keyOn(1, 4, "waits");
    await enqueue(other, { id: "first" });
    expect((await enqueue(sharded, { id: onShard1, dependsOn: [{ lane: other.lane, id: "first" }] })).state).toBe("blocked");
    expect((await get(`${other.base}/jobs/first/dependents`)).body).toEqual({ dependents: [{ lane: sharded.lane, id: onShard1 }] });

    await settle(sharded, dep, 2, { result: "done" });
    await expect.poll(async () => (await stateOf(other, "waits")).state, { timeout: 5_000, interval: 20 }).toBe("queued");
    await settle(other, "first", 0, { result: 1 });
    await expect.poll(async () => (await stateOf(sharded, onShard1)).state, { timeout: 5_000, interval: 20 }).toBe("queued");
    expect((await get(sharded.base)).body.counts.blocked).toBe(0);
  });

  it("refuses a missing dependency (409 dependency_not_found) and enqueues nothing on any shard", async () => {
    const fixture = await setupSharded(4);
    const there = keyOn(2, 4, "there");
    await enqueue(fixture, { id: there });
    const missing = expectError(await post(`${fixture.base}/jobs`, { kind: PULL_KIND, id: keyOn(1, 4, "x"), dependsOn: [{ id: there }, { id: "gone" }] }), 409, "dependency_not_found");
    expect(missing.details).toEqual({ dependencies: [{ lane: fixture.lane, id: "gone" }] });
    // A batch across shards whose job depends on a later one: refused before any shard writes.
    const a = keyOn(0, 4, "a");
    const b = keyOn(3, 4, "b");
    const refused = expectError(
      await post(`${fixture.base}/jobs/batch`, { jobs: [{ id: keyOn(1, 4, "c"), kind: PULL_KIND }, { id: a, kind: PULL_KIND, dependsOn: [{ id: b }] }, { id: b, kind: PULL_KIND }] }),
      409,
      "dependency_not_found",
    );
    expect(refused.details).toEqual({ dependencies: [{ lane: fixture.lane, id: b }] });
    const listed = (await get(`${fixture.base}/jobs`)).body.jobs.map((job: any) => job.id);
    expect(listed).toEqual([there]);
    expect((await get(`${fixture.base}/jobs/${there}/dependents`)).body).toEqual({ dependents: [] });
  });

  it("refuses a batch whose dependency is only a reservation (a later job of the batch, or a deleted job), writing nothing", async () => {
    const fixture = await setupSharded(4);
    // A later job of the batch, with a queue on another shard than its id's: the batch reserves its id first.
    const later = keyOn(0, 4, "later");
    const forward = await post(`${fixture.base}/jobs/batch`, { jobs: [{ id: keyOn(1, 4, "b"), kind: PULL_KIND, dependsOn: [{ id: later }] }, { id: later, kind: PULL_KIND, queue: keyOn(2, 4, "q") }] });
    expect(expectError(forward, 409, "dependency_not_found").details).toEqual({ dependencies: [{ lane: fixture.lane, id: later }] });
    expect((await get(`${fixture.base}/jobs`)).body.jobs).toEqual([]);
    // A job with a queue on another shard than its id's, completed and swept: its id's reservation stays.
    const gone = keyOn(0, 4, "gone");
    await enqueue(fixture, { id: gone, queue: keyOn(3, 4, "q") });
    await settle(fixture, gone, 3, { result: null });
    fixture.clock.advance(1_000);
    expect((await post(`${fixture.base}/sweep`, { settledBefore: fixture.clock.now() })).body).toEqual({ removed: 1, waitpointsRemoved: 0 });
    const stale = await post(`${fixture.base}/jobs/batch`, { jobs: [{ id: keyOn(2, 4, "c"), kind: PULL_KIND }, { id: keyOn(1, 4, "d"), kind: PULL_KIND, dependsOn: [{ id: gone }] }] });
    expect(expectError(stale, 409, "dependency_not_found").details).toEqual({ dependencies: [{ lane: fixture.lane, id: gone }] });
    expect((await get(`${fixture.base}/jobs`)).body.jobs).toEqual([]);
  });

  it("writes a batch whose jobs wait for earlier jobs of other shards, and releases them in order", async () => {
    const fixture = await setupSharded(4);
    const [a, b, c] = [keyOn(0, 4, "a"), keyOn(1, 4, "b"), keyOn(0, 4, "c")];
    const batch = await post(`${fixture.base}/jobs/batch`, {
      jobs: [
        { id: a, kind: PULL_KIND },
        { id: b, kind: PULL_KIND, dependsOn: [{ id: a }] },
        { id: c, kind: PULL_KIND, dependsOn: [{ id: b }, { id: a }] },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.results).toEqual([a, b, c].map((id) => ({ id, status: "queued" })));
    expect((await stateOf(fixture, b)).state).toBe("blocked");
    expect((await stateOf(fixture, c)).state).toBe("blocked");
    await settle(fixture, a, 0, { result: "a" });
    await expect.poll(async () => (await stateOf(fixture, b)).state, { timeout: 5_000, interval: 20 }).toBe("queued");
    expect((await stateOf(fixture, c)).state).toBe("blocked"); // b has not settled yet
    await settle(fixture, b, 1, { result: "b" });
    await expect.poll(async () => (await stateOf(fixture, c)).state, { timeout: 5_000, interval: 20 }).toBe("queued");
    expect((await claim(fixture)).get(c).dependencies.map((d: any) => [d.id, d.result])).toEqual([
      [b, "b"],
      [a, "a"],
    ]);
  });

  it("keeps a queue's batch order when a job of the queue waits for a job of another shard", async () => {
    const fixture = await setupSharded(4);
    const queue = keyOn(1, 4, "q");
    const [x, a, b] = [keyOn(2, 4, "x"), keyOn(1, 4, "a"), keyOn(1, 4, "b")];
    const batch = await post(`${fixture.base}/jobs/batch`, {
      jobs: [
        { id: x, kind: PULL_KIND },
        { id: a, kind: PULL_KIND, queue, dependsOn: [{ id: x }] },
        { id: b, kind: PULL_KIND, queue },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    // As in one object: the queue's head is a, blocked, so b waits behind it.
    expect([...(await claim(fixture)).keys()]).toEqual([x]);
    expect(await get(`${fixture.base}/queues/${queue}`).then((r) => r.body.head)).toMatchObject({ id: a, state: "queued" });
  });

  it("refuses a batch whose jobs wait for one another across shards deeper than 32 (400), enqueueing nothing", async () => {
    const fixture = await setupSharded(4);
    const ids = Array.from({ length: 34 }, (_, i) => keyOn(i % 2, 4, `chain${i}`));
    const jobs = ids.map((id, i) => ({ id, kind: PULL_KIND, ...(i === 0 ? {} : { dependsOn: [{ id: ids[i - 1] }] }) }));
    const refused = expectError(await post(`${fixture.base}/jobs/batch`, { jobs }), 400, "invalid_request");
    expect(refused.details.map((d: any) => d.path)).toEqual([["jobs", 32, "dependsOn"]]);
    expect((await get(`${fixture.base}/jobs`)).body.jobs).toEqual([]);
    // 32 deep is written, in waves.
    const written = await post(`${fixture.base}/jobs/batch`, { jobs: jobs.slice(0, 32) });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    expect((await get(fixture.base)).body.counts).toMatchObject({ queued: 1, blocked: 31 });
  });

  it("every shard stores its own object name, which an instance woken without a name (an alarm after a restart) goes by", async () => {
    // The runtime here always tells an object its name; after a restart, an alarm's instance is not
    // told it (the chaos suite's restarts cover that path): it reads the name stored here instead.
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) await enqueue(fixture, { id: keyOn(i, 4, "job") });
    const stored = await Promise.all([0, 1, 2, 3].map((i) => runInDurableObject(fixture.shard(i), (_lane, state) => state.storage.sql.exec<{ name: string | null }>(`SELECT name FROM lane WHERE id = 1`).one().name)));
    expect(stored).toEqual([fixture.lane, `${fixture.lane}#1`, `${fixture.lane}#2`, `${fixture.lane}#3`]);
  });

  it("a registration forwarded among the shards stays its enqueue's: a withdrawal takes back its own alone", async () => {
    const sharded = await setupSharded(4);
    const other = await setupSharded(1);
    const dep = keyOn(2, 4, "dep");
    await enqueue(sharded, { id: dep });
    // Registrations made through shard 0, which forwards them to shard 2: one by an enqueue of d that
    // will withdraw (b), one by an enqueue of e that was never written and withdraws (c).
    const entry = sharded.shard(0);
    const b = [{ id: dep, dependent: { lane: other.lane, id: "d" } }];
    const c = [{ id: dep, dependent: { lane: other.lane, id: "e" } }];
    expect(await entry.registerDependents(b, 0, "enqueue-b")).toEqual({ ok: true, value: [{ status: "waiting" }] });
    expect((await entry.registerDependents(c, 0, "enqueue-c")).ok).toBe(true);
    expect((await enqueue(other, { id: "d", dependsOn: [{ lane: sharded.lane, id: dep }] })).state).toBe("blocked");
    expect(await entry.unregisterDependents(b, 0, "enqueue-b")).toEqual({ ok: true, value: { removed: 1 } });
    expect(await entry.unregisterDependents(c, 0, "enqueue-c")).toEqual({ ok: true, value: { removed: 1 } });
    expect((await get(`${sharded.base}/jobs/${dep}/dependents`)).body).toEqual({ dependents: [{ lane: other.lane, id: "d" }] });
    await settle(sharded, dep, 2, { result: 1 });
    await expect.poll(async () => (await stateOf(other, "d")).state, { timeout: 5_000, interval: 20 }).toBe("queued");
  });
});
