/**
 * Dependencies, snooze and durable sleep over HTTP, on the platform's clock: real alarms deliver the
 * outbox between lanes, and the demo executors run. Bad input is refused with 4xx, changing nothing.
 */
import { describe, expect, it } from "vitest";
import { call, expectError, get, post, PULL_KIND } from "../helpers/http.js";

const base = (lane: string) => `/v1/lanes/${lane}`;
const fresh = () => `deps-${crypto.randomUUID()}`;

async function settled(lane: string, id: string): Promise<any> {
  await expect.poll(async () => (await get(`${base(lane)}/jobs/${id}`)).body.state, { timeout: 10_000, interval: 20 }).toBe("settled");
  return (await get(`${base(lane)}/jobs/${id}`)).body;
}

describe("dependencies over HTTP", () => {
  it("runs a parent after children in other lanes, with what they returned (demo.deps)", async () => {
    const [a, b, p] = [fresh(), fresh(), fresh()];
    // The children's lanes are paused while the parent is checked blocked: a delay on the real clock
    // let them finish first on a loaded machine.
    for (const lane of [a, b]) expect((await call("PATCH", base(lane), { json: { paused: true } })).status).toBe(200);
    expect((await post(`${base(a)}/jobs`, { id: "c1", kind: "demo.echo", payload: { page: 1 } })).status).toBe(201);
    expect((await post(`${base(b)}/jobs`, { id: "c2", kind: "demo.echo", payload: { page: 2 } })).status).toBe(201);
    const parent = await post(`${base(p)}/jobs`, { id: "parent", kind: "demo.deps", dependsOn: [{ lane: a, id: "c1" }, { lane: b, id: "c2" }] });
    expect(parent.status).toBe(201);
    expect(parent.body).toMatchObject({ status: "queued", job: { state: "blocked", dependsOn: [{ lane: a, id: "c1" }, { lane: b, id: "c2" }] } });
    expect((await get(base(p))).body.counts.blocked).toBe(1);
    expect((await get(`${base(p)}/jobs?state=blocked`)).body.jobs.map((j: any) => j.id)).toEqual(["parent"]);
    expect((await get(`${base(a)}/jobs/c1/dependents`)).body).toEqual({ dependents: [{ lane: p, id: "parent" }] });
    for (const lane of [a, b]) expect((await call("PATCH", base(lane), { json: { paused: false } })).status).toBe(200);
    const done = await settled(p, "parent");
    expect(done).toMatchObject({ outcome: "completed" });
    expect(done.result).toEqual({
      dependencies: [
        { lane: a, id: "c1", outcome: "completed", result: { page: 1 }, error: null },
        { lane: b, id: "c2", outcome: "completed", result: { page: 2 }, error: null },
      ],
    });
    expect((await get(base(p))).body.counts.blocked).toBe(0);
  });

  it("fails the parent when a child fails (policy fail), naming it", async () => {
    const [a, p] = [fresh(), fresh()];
    await post(`${base(a)}/jobs`, { id: "bad", kind: "demo.fail", payload: { failTimes: 5 }, maxAttempts: 1, delayMs: 100 });
    await post(`${base(p)}/jobs`, { id: "parent", kind: "demo.deps", dependsOn: [{ lane: a, id: "bad" }] });
    const done = await settled(p, "parent");
    expect(done).toMatchObject({ outcome: "failed", error: `dependency ${a}/bad failed`, attempts: 0 });
  });

  it("refuses a missing dependency with 409 dependency_not_found, and bad dependsOn with 400, enqueueing nothing", async () => {
    const [a, p] = [fresh(), fresh()];
    await post(`${base(a)}/jobs`, { id: "there", kind: PULL_KIND });
    const missing = expectError(await post(`${base(p)}/jobs`, { id: "x", kind: PULL_KIND, dependsOn: [{ lane: a, id: "there" }, { lane: a, id: "gone" }] }), 409, "dependency_not_found");
    expect(missing.details).toEqual({ dependencies: [{ lane: a, id: "gone" }] });
    const bad: [unknown, (string | number)[]][] = [
      [Array.from({ length: 101 }, (_, i) => ({ id: `c${i}` })), ["dependsOn"]],
      [[{ id: "c" }, { id: "c" }], ["dependsOn", 1]],
      [[{ id: "x" }], ["dependsOn", 0]],
      [[{ lane: "no spaces", id: "c" }], ["dependsOn", 0, "lane"]],
      [[{ id: "c", extra: 1 }], ["dependsOn", 0, "extra"]],
    ];
    for (const [dependsOn, path] of bad) {
      const error = expectError(await post(`${base(p)}/jobs`, { id: "x", kind: PULL_KIND, dependsOn }), 400, "invalid_request");
      expect(error.details.map((d: any) => d.path)).toContainEqual(path);
    }
    expectError(await post(`${base(p)}/jobs`, { kind: PULL_KIND, dependsOn: [{ lane: a, id: "there" }], dependencyFailure: "maybe" }), 400, "invalid_request");
    expectError(await post(`${base(p)}/jobs/batch`, { jobs: [{ id: "later-dep", kind: PULL_KIND, dependsOn: [{ id: "later" }] }, { id: "later", kind: PULL_KIND }] }), 409, "dependency_not_found");
    expect((await get(`${base(p)}/jobs`)).body.jobs).toEqual([]);
    expect((await get(`${base(a)}/jobs/there/dependents`)).body).toEqual({ dependents: [] });
    expectError(await get(`${base(a)}/jobs/nope/dependents`), 404, "job_not_found");
  });
});

describe("snooze and durable sleep over HTTP", () => {
  it("snoozes a pulled job: queued for later, its attempt given back, the token then superseded", async () => {
    const lane = fresh();
    await post(`${base(lane)}/jobs`, { id: "j", kind: PULL_KIND });
    const claimed = (await post(`${base(lane)}/claims`, { kinds: [PULL_KIND] })).body.jobs[0];
    expect(claimed.dependencies).toEqual([]);
    const snoozed = await post(`${base(lane)}/jobs/j/snooze`, { token: claimed.lease.token, delayMs: 60_000 });
    expect(snoozed.status).toBe(200);
    expect(snoozed.body.job).toMatchObject({ state: "queued", attempts: 0 });
    expectError(await post(`${base(lane)}/jobs/j/snooze`, { token: claimed.lease.token, delayMs: 1 }), 409, "lease_superseded");
    expectError(await post(`${base(lane)}/jobs/j/snooze`, { token: claimed.lease.token, delayMs: 31_536_000_001 }), 400, "invalid_request");
    expect((await get(base(lane))).body.stats.snoozed).toBe(1);
  });

  it("demo.sleepy sleeps through its sleeps on real alarms and completes on its first attempt", async () => {
    const lane = fresh();
    await post(`${base(lane)}/jobs`, { id: "s", kind: "demo.sleepy", payload: { sleeps: 3, ms: 50 }, maxAttempts: 1 });
    const done = await settled(lane, "s");
    expect(done).toMatchObject({ outcome: "completed", result: { attempt: 1 }, attempts: 1, generation: 4 });
    expect((await get(base(lane))).body.stats.snoozed).toBe(3);
  });
});
