/**
 * Dependencies at the lane, on manual clocks: blocked jobs, their release, policy fail and ignore,
 * notices across lanes through the outbox (delivered by the dependency's alarm), at most once per
 * dependency, the existence check, and what sweep, cancel and TTL do to jobs that wait or are waited for.
 * Every lane here is of the `LANE` class, as in production: a lane finds another by name there.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import type { Lane } from "../../../src/durable/lane.js";
import type { LaneParts } from "../../../src/durable/lane-parts.js";
import { startClocks } from "../../helpers/test-worker.js";
import { complete, lanes } from "../../helpers/dependency-lanes.js";
import { T0, TestEntropy, claim, claimOne, fireAlarm, inject, refusal, row, sql, value, type LaneStub } from "../../helpers/lane.js";

/** Restarts lane `name` (its memory gone, its storage kept) on `clock` from its first instant. */
async function restart(name: string, clock: ManualClock): Promise<LaneStub> {
  startClocks.set(name, clock);
  await expect(runInDurableObject(env.LANE.getByName(name), (_l, state) => state.abort("restart"))).rejects.toThrow();
  const stub = env.LANE.getByName(name);
  await inject(stub, clock, new TestEntropy());
  return stub;
}

const job = async (stub: LaneStub, id: string) => value(await stub.getJob(id));

async function failIt(stub: LaneStub, id: string): Promise<void> {
  const claimed = await claimOne(stub, { kinds: [`k-${id}`] });
  value(await stub.fail(claimed.id, { token: claimed.lease.token, error: "boom", retry: false }));
}

const outbox = (stub: LaneStub) => sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM outbox`).then((r) => r[0]!.n);

describe("a job with dependencies in its own lane", () => {
  it("is blocked until they complete, then queued with its runAt, and its attempt sees what they returned", async () => {
    const { lanes: [a] } = await lanes(1);
    const { stub, name } = a!;
    value(await stub.enqueue({ id: "c1", kind: "k-c1" }));
    value(await stub.enqueue({ id: "c2", kind: "k-c2" }));
    const enqueued = value(await stub.enqueue({ id: "p", kind: "k-p", runAt: T0, dependsOn: [{ id: "c1" }, { lane: name, id: "c2" }] }));
    expect(enqueued.status).toBe("queued");
    expect(enqueued.job.state).toBe("blocked");
    expect(enqueued.job.runAt).toBe(T0);
    expect(enqueued.job.dependsOn).toEqual([{ lane: name, id: "c1" }, { lane: name, id: "c2" }]);
    const info = value(await stub.info());
    expect(info.counts.blocked).toBe(1);
    expect(info.counts.queued).toBe(2);
    expect(value(await stub.listJobs({ state: "blocked" })).jobs.map((j) => j.id)).toEqual(["p"]);
    expect(value(await stub.listJobs({ state: "queued" })).jobs.map((j) => j.id)).toEqual(["c1", "c2"]);
    expect(await claim(stub, { kinds: ["k-p"] })).toEqual([]);
    expect(value(await stub.dependents("c1"))).toEqual({ dependents: [{ lane: name, id: "p" }] });

    await complete(stub, "c1", { pages: 1 });
    await fireAlarm(stub);
    expect((await job(stub, "p")).state).toBe("blocked");
    await complete(stub, "c2", "two");
    await fireAlarm(stub);
    const released = await job(stub, "p");
    expect(released.state).toBe("queued");
    expect(released.runAt).toBe(T0);
    expect(value(await stub.info()).counts).toMatchObject({ blocked: 0, queued: 1 });
    const parent = await claimOne(stub, { kinds: ["k-p"] });
    expect(parent.dependencies).toEqual([
      { lane: name, id: "c1", outcome: "completed", result: { pages: 1 }, error: null },
      { lane: name, id: "c2", outcome: "completed", result: "two", error: null },
    ]);
    expect(await outbox(stub)).toBe(0);
  });

  it("with policy fail (the default) settles failed at once when one fails, naming it; with ignore it runs", async () => {
    const { lanes: [a] } = await lanes(1);
    const { stub, name } = a!;
    value(await stub.enqueue({ id: "c", kind: "k-c" }));
    value(await stub.enqueue({ id: "strict", kind: "k-s", dependsOn: [{ id: "c" }] }));
    value(await stub.enqueue({ id: "lenient", kind: "k-l", dependsOn: [{ id: "c" }], dependencyFailure: "ignore" }));
    await failIt(stub, "c");
    await fireAlarm(stub);
    const strict = await job(stub, "strict");
    expect(strict).toMatchObject({ state: "settled", outcome: "failed", error: `dependency ${name}/c failed`, attempts: 0 });
    expect((await job(stub, "lenient")).state).toBe("queued");
    const lenient = await claimOne(stub, { kinds: ["k-l"] });
    expect(lenient.dependencies).toEqual([{ lane: name, id: "c", outcome: "failed", result: null, error: "boom" }]);
  });

  it("knows at enqueue what has settled already: queued at once, or failed at once", async () => {
    const { lanes: [a] } = await lanes(1);
    const { stub } = a!;
    value(await stub.enqueue({ id: "done", kind: "k-done" }));
    await complete(stub, "done", 7);
    value(await stub.enqueue({ id: "bad", kind: "k-bad" }));
    await failIt(stub, "bad");
    expect(value(await stub.enqueue({ id: "p1", kind: "k-p1", dependsOn: [{ id: "done" }] })).job.state).toBe("queued");
    expect((await claimOne(stub, { kinds: ["k-p1"] })).dependencies[0]).toMatchObject({ outcome: "completed", result: 7 });
    const failed = value(await stub.enqueue({ id: "p2", kind: "k-p2", dependsOn: [{ id: "done" }, { id: "bad" }] }));
    expect(failed.job).toMatchObject({ state: "settled", outcome: "failed" });
    expect(value(await stub.info()).counts.blocked).toBe(0);
  });

  it("refuses a dependency that does not exist with 409 dependency_not_found, enqueueing nothing", async () => {
    const { lanes: [a] } = await lanes(1);
    const { stub, name } = a!;
    value(await stub.enqueue({ id: "here", kind: "k" }));
    const refused = refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "here" }, { id: "nowhere" }] }), "dependency_not_found");
    expect(refused.details).toEqual({ dependencies: [{ lane: name, id: "nowhere" }] });
    expect(await row(stub, "p")).toBeUndefined();
    expect(value(await stub.dependents("here"))).toEqual({ dependents: [] });
  });

  it("in a batch, may depend on an earlier item, not on a later one (nothing enqueued then)", async () => {
    const { lanes: [a] } = await lanes(1);
    const { stub } = a!;
    const refused = refusal(await stub.enqueueBatch({ jobs: [{ id: "p", kind: "k", dependsOn: [{ id: "c" }] }, { id: "c", kind: "k" }] }), "dependency_not_found");
    expect(refused.message).toContain("/c");
    expect(value(await stub.info()).counts.queued).toBe(0);
    const ok = value(await stub.enqueueBatch({ jobs: [{ id: "c", kind: "k" }, { id: "p", kind: "k", dependsOn: [{ id: "c" }] }] }));
    expect(ok.results).toEqual([{ id: "c", status: "queued" }, { id: "p", status: "queued" }]);
    expect((await job(stub, "p")).state).toBe("blocked");
  });

  it("is idempotent: the same id and spec is a duplicate, other dependencies a conflict", async () => {
    const { lanes: [a] } = await lanes(1);
    const { stub } = a!;
    value(await stub.enqueue({ id: "c", kind: "k" }));
    value(await stub.enqueue({ id: "d", kind: "k" }));
    value(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "c" }] }));
    expect(value(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "c" }] })).status).toBe("duplicate");
    refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "d" }] }), "job_conflict");
    refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "c" }], dependencyFailure: "ignore" }), "job_conflict");
  });

  it("refuses bad dependsOn with 400 naming the item, and changes nothing", async () => {
    const { lanes: [a] } = await lanes(1);
    const { stub, name } = a!;
    value(await stub.enqueue({ id: "c", kind: "k" }));
    const cases: [unknown, string][] = [
      [Array.from({ length: 101 }, (_, i) => ({ id: `x${i}` })), "dependsOn"],
      [[{ id: "c" }, { lane: name, id: "c" }], "dependsOn.1"],
      [[{ id: "p" }], "dependsOn.0"],
      [[{ lane: "bad lane!", id: "c" }], "dependsOn.0.lane"],
      [[{ id: "" }], "dependsOn.0.id"],
      [[], "dependsOn"],
    ];
    for (const [dependsOn, path] of cases) {
      const refused = refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn }), "invalid_request");
      expect(JSON.stringify(refused.details)).toContain(JSON.stringify(path.split(".").map((p) => (/^\d+$/.test(p) ? Number(p) : p))).slice(1, -1));
    }
    refusal(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "c" }], debounce: { key: "x", delayMs: 10 } }), "invalid_request");
    expect(await row(stub, "p")).toBeUndefined();
    expect(value(await stub.dependents("c"))).toEqual({ dependents: [] });
  });

  it("can be cancelled while blocked, and expires by its TTL while blocked; later notices change nothing", async () => {
    const { clock, lanes: [a] } = await lanes(1);
    const { stub } = a!;
    value(await stub.enqueue({ id: "c", kind: "k-c" }));
    value(await stub.enqueue({ id: "p1", kind: "k", dependsOn: [{ id: "c" }] }));
    value(await stub.enqueue({ id: "p2", kind: "k", dependsOn: [{ id: "c" }], ttlMs: 1_000 }));
    expect(value(await stub.cancel("p1", { reason: "no longer" }))).toMatchObject({ status: "cancelled", job: { state: "settled", outcome: "cancelled" } });
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(await job(stub, "p2")).toMatchObject({ state: "settled", outcome: "cancelled", error: "expired" });
    await complete(stub, "c");
    await fireAlarm(stub);
    expect((await job(stub, "p1")).outcome).toBe("cancelled");
    expect((await job(stub, "p2")).outcome).toBe("cancelled");
    expect(await outbox(stub)).toBe(0);
    expect(value(await stub.info()).counts.blocked).toBe(0);
  });

  it("keeps a settled dependency from sweep while a dependent is untold", async () => {
    const { clock, lanes: [a] } = await lanes(1);
    const { stub } = a!;
    value(await stub.enqueue({ id: "c", kind: "k-c" }));
    value(await stub.enqueue({ id: "p", kind: "k", dependsOn: [{ id: "c" }] }));
    await complete(stub, "c", "kept");
    clock.advance(10);
    expect(value(await stub.sweep({ settledBefore: clock.now() }))).toEqual({ removed: 0 });
    await fireAlarm(stub); // tells p
    expect((await claimOne(stub, { kinds: ["k"] })).dependencies[0]).toMatchObject({ result: "kept" });
    expect(value(await stub.sweep({ settledBefore: clock.now() }))).toEqual({ removed: 1 });
  });
});

describe("dependencies across lanes, through the outbox", () => {
  it("registers with the dependency's lane, which tells the dependent's lane when it settles", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "child", kind: "k-child" }));
    const parent = value(await y!.stub.enqueue({ id: "parent", kind: "k-parent", dependsOn: [{ lane: x!.name, id: "child" }] }));
    expect(parent.job.state).toBe("blocked");
    expect(value(await x!.stub.dependents("child"))).toEqual({ dependents: [{ lane: y!.name, id: "parent" }] });
    await complete(x!.stub, "child", { ok: 1 });
    expect(await outbox(x!.stub)).toBe(1); // written with the settlement
    await fireAlarm(x!.stub);
    await runInDurableObject(x!.stub, async () => {}); // the delivery's answer lands
    await expect.poll(() => outbox(x!.stub)).toBe(0);
    expect((await job(y!.stub, "parent")).state).toBe("queued");
    const claimed = await claimOne(y!.stub, { kinds: ["k-parent"] });
    expect(claimed.dependencies).toEqual([{ lane: x!.name, id: "child", outcome: "completed", result: { ok: 1 }, error: null }]);
  });

  it("refuses a remote dependency that does not exist, writing nothing on either side", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "there", kind: "k" }));
    const refused = refusal(
      await y!.stub.enqueue({ id: "p", kind: "k", dependsOn: [{ lane: x!.name, id: "there" }, { lane: x!.name, id: "not-there" }] }),
      "dependency_not_found",
    );
    expect(refused.details).toEqual({ dependencies: [{ lane: x!.name, id: "not-there" }] });
    expect(await row(y!.stub, "p")).toBeUndefined();
    // The registration made with the lane that has the job is withdrawn: the refusal left no trace.
    expect(value(await x!.stub.dependents("there"))).toEqual({ dependents: [] });
  });

  it("applies a notice at most once: telling twice releases once", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "c1", kind: "k" }));
    value(await x!.stub.enqueue({ id: "c2", kind: "k" }));
    value(await y!.stub.enqueue({ id: "p", kind: "k", dependsOn: [{ lane: x!.name, id: "c1" }, { lane: x!.name, id: "c2" }] }));
    const notice = { key: 1, dependency: { lane: x!.name, id: "c1" }, dependent: "p", outcome: "completed", result: "1", error: null, generation: 1 };
    expect(value(await y!.stub.notifyDependencies([notice]))).toEqual(["applied"]);
    expect(value(await y!.stub.notifyDependencies([notice, notice]))).toEqual(["repeat", "repeat"]);
    expect((await row(y!.stub, "p"))!.blocked).toBe(1);
    expect(value(await y!.stub.notifyDependencies([{ ...notice, dependent: "nobody" }, { ...notice, dependency: { lane: x!.name, id: "other" } }]))).toEqual(["gone", "gone"]);
    refusal(await y!.stub.notifyDependencies([{ ...notice, outcome: "exploded" }]), "invalid_request");
  });

  it("asks a notice to come again while its dependent's enqueue is between registration and write", async () => {
    const { lanes: [y] } = await lanes(1);
    const answers = await runInDurableObject(y!.stub, (lane: Lane) => {
      const parts = (lane as unknown as { parts: LaneParts }).parts;
      parts.dependencies.hold(["p"]);
      const notice = { key: 1, dependency: { lane: "elsewhere", id: "c" }, dependent: "p", outcome: "completed" as const, result: null, error: null, generation: 1 };
      const held = parts.dependencies.apply([notice]);
      parts.dependencies.done(["p"]);
      return [...held, ...parts.dependencies.apply([notice])];
    });
    expect(answers).toEqual(["pending", "gone"]);
  });

  it("retries a delivery that fails, with backoff, until it is acknowledged", async () => {
    const { clock, lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "c", kind: "k-c" }));
    value(await y!.stub.enqueue({ id: "p", kind: "k", dependsOn: [{ lane: x!.name, id: "c" }] }));
    await complete(x!.stub, "c");
    // The receiving lane refuses everything for a while: a newer schema, as after a rolled-back deploy.
    await sql(y!.stub, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 0)`);
    let receiver = await restart(y!.name, clock);
    await fireAlarm(x!.stub);
    await expect.poll(() => sql<{ attempts: number }>(x!.stub, `SELECT attempts FROM outbox`).then((r) => r[0]?.attempts)).toBe(1);
    const [{ next_at }] = (await sql<{ next_at: number }>(x!.stub, `SELECT next_at FROM outbox`)) as [{ next_at: number }];
    expect(next_at).toBeGreaterThan(clock.now());
    await sql(receiver, `DELETE FROM schema_migrations WHERE version = 999`);
    receiver = await restart(y!.name, clock);
    clock.set(next_at);
    await fireAlarm(x!.stub);
    await expect.poll(() => outbox(x!.stub)).toBe(0);
    expect((await job(receiver, "p")).state).toBe("queued");
  });
});
