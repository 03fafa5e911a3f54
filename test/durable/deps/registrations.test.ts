/**
 * A registration is owned by the enqueue that made it: two enqueues of one dependent (a retry, or two
 * callers) share the dependency's row of `dependents`, and the one that withdraws (refused, or a
 * duplicate) takes away only what it registered, never what the written job relies on. The notice
 * still goes once per dependent. Driven through the lanes' own RPCs, on manual clocks.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DependencyPeer } from "../../../src/durable/deps/dependencies.js";
import type { LaneParts } from "../../../src/durable/lane-parts.js";
import { migrate } from "../../../src/durable/store/migrations.js";
import { T0, TestEntropy, dropTables, fireAlarm, inject, refusal, row, sql, value, type LaneStub } from "../../helpers/lane.js";
import { complete, lanes } from "../../helpers/dependency-lanes.js";

const outbox = (stub: LaneStub) => sql<{ id: string }>(stub, `SELECT id FROM outbox`);

/** Settles `x` on its lane and delivers its notices; answers what the dependent `d` became. */
async function settleAndTell(dependency: LaneStub, dependent: LaneStub, d: string): Promise<string | undefined> {
  await complete(dependency, "x");
  await fireAlarm(dependency);
  await expect.poll(() => outbox(dependency).then((r) => r.length)).toBe(0);
  const r = await row(dependent, d);
  return r === undefined ? undefined : r.blocked > 0 ? "blocked" : r.state;
}

describe("registrations owned by the enqueue that made them", () => {
  it("a withdrawal by one enqueue of a dependent leaves the registration the written one relies on", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "x", kind: "k-x" }));
    const registration = [{ id: "x", dependent: { lane: y!.name, id: "d" } }];
    // Enqueue B of dependent d registers first (its write will find d written: a duplicate) ...
    expect(value(await x!.stub.registerDependents(registration, 0, "enqueue-b"))).toEqual([{ status: "waiting" }]);
    // ... enqueue A registers and writes d ...
    expect(value(await y!.stub.enqueue({ id: "d", kind: "k-d", dependsOn: [{ lane: x!.name, id: "x" }] })).job.state).toBe("blocked");
    // ... and B, a duplicate, withdraws what it registered.
    value(await x!.stub.unregisterDependents(registration, 0, "enqueue-b"));
    expect(value(await x!.stub.dependents("x"))).toEqual({ dependents: [{ lane: y!.name, id: "d" }] });
    expect(await settleAndTell(x!.stub, y!.stub, "d")).toBe("queued");
  });

  it("the same, with both registrations made before the write (register A, register B, write A, B withdraws)", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "x", kind: "k-x" }));
    const registration = [{ id: "x", dependent: { lane: y!.name, id: "d" } }];
    value(await x!.stub.registerDependents(registration, 0, "enqueue-a"));
    value(await x!.stub.registerDependents(registration, 0, "enqueue-b"));
    value(await y!.stub.enqueue({ id: "d", kind: "k-d", dependsOn: [{ lane: x!.name, id: "x" }] }));
    value(await x!.stub.unregisterDependents(registration, 0, "enqueue-b"));
    value(await x!.stub.unregisterDependents(registration, 0, "enqueue-b")); // twice changes nothing more
    await complete(x!.stub, "x");
    // One notice for the one dependent, however many enqueues registered it.
    expect(await outbox(x!.stub)).toEqual([{ id: "d" }]);
    await fireAlarm(x!.stub);
    await expect.poll(() => outbox(x!.stub).then((r) => r.length)).toBe(0);
    expect((await row(y!.stub, "d"))!.blocked).toBe(0);
  });

  it("two concurrent enqueues of one dependent, one refused: the written one is told", async () => {
    const { lanes: [x, y, z] } = await lanes(3);
    value(await x!.stub.enqueue({ id: "x", kind: "k-x" }));
    // A waits for x; B, with the same id, for x and a job that does not exist: B registers with x's
    // lane too, is refused, and withdraws while A's job is written.
    const [a, b] = await Promise.all([
      y!.stub.enqueue({ id: "d", kind: "k-d", dependsOn: [{ lane: x!.name, id: "x" }] }),
      y!.stub.enqueue({ id: "d", kind: "k-d", dependsOn: [{ lane: x!.name, id: "x" }, { lane: z!.name, id: "missing" }] }),
    ]);
    expect(value(a).job.state).toBe("blocked");
    refusal(b, "dependency_not_found");
    expect(await settleAndTell(x!.stub, y!.stub, "d")).toBe("queued");
  });

  it("a batch sent again keeps one registration per dependent: its duplicates take theirs back, never the written job's", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "x", kind: "k-x" }));
    const d = { id: "d", kind: "k-d", dependsOn: [{ lane: x!.name, id: "x" }] };
    // Its own id twice: the first written, the second a duplicate of the first (its registration is the written job's).
    expect(value(await y!.stub.enqueueBatch({ jobs: [d, d] })).results.map((r) => r.status)).toEqual(["queued", "duplicate"]);
    for (let i = 0; i < 3; i++) expect(value(await y!.stub.enqueueBatch({ jobs: [d] })).results).toEqual([{ id: "d", status: "duplicate" }]);
    expect(await sql(x!.stub, `SELECT id, json_array_length(owners) AS owners FROM dependents`)).toEqual([{ id: "d", owners: 1 }]);
    expect(await settleAndTell(x!.stub, y!.stub, "d")).toBe("queued");
  });

  it("a refused enqueue still leaves no registration behind, and one whose dependent was never written is dropped when told", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "x", kind: "k-x" }));
    refusal(await y!.stub.enqueue({ id: "p", kind: "k", dependsOn: [{ lane: x!.name, id: "x" }, { lane: x!.name, id: "nope" }] }), "dependency_not_found");
    expect(value(await x!.stub.dependents("x"))).toEqual({ dependents: [] });
    // An enqueue that registered and then crashed before its write: never withdrawn.
    value(await x!.stub.registerDependents([{ id: "x", dependent: { lane: y!.name, id: "never" } }], 0, "crashed"));
    expect(await settleAndTell(x!.stub, y!.stub, "never")).toBeUndefined(); // its notice went, was answered gone, and is dropped
  });

  it("a registration whose call throws refuses the enqueue with lane_unavailable, writing nothing and leaving no registration", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "x", kind: "k-x" }));
    // y's calls to x register and then throw, as a call whose answer is lost does.
    await runInDurableObject(y!.stub, (lane) => {
      const host = (lane as unknown as { parts: LaneParts }).parts.dependencies["host"] as { peer: (name: string) => DependencyPeer };
      const peer = host.peer.bind(host);
      host.peer = (name) => {
        const real = peer(name);
        return {
          registerDependents: async (...args: Parameters<DependencyPeer["registerDependents"]>) => {
            await real.registerDependents(...args);
            throw new Error("the connection was lost");
          },
          unregisterDependents: (...args: Parameters<DependencyPeer["unregisterDependents"]>) => real.unregisterDependents(...args),
        } as DependencyPeer;
      };
    });
    const error = refusal(await y!.stub.enqueue({ id: "p", kind: "k", dependsOn: [{ lane: x!.name, id: "x" }] }), "lane_unavailable");
    expect(error.message).toContain(x!.name);
    expect(await row(y!.stub, "p")).toBeUndefined();
    expect(value(await x!.stub.dependents("x"))).toEqual({ dependents: [] });
  });

  it("a registration without a token (from a lane of an older version) is never withdrawn", async () => {
    const { lanes: [x, y] } = await lanes(2);
    value(await x!.stub.enqueue({ id: "x", kind: "k-x" }));
    const registration = [{ id: "x", dependent: { lane: y!.name, id: "d" } }];
    value(await x!.stub.registerDependents(registration));
    value(await x!.stub.registerDependents(registration, 0, "enqueue-b"));
    value(await x!.stub.unregisterDependents(registration, 0, "enqueue-b"));
    value(await x!.stub.unregisterDependents(registration));
    expect(value(await x!.stub.dependents("x"))).toEqual({ dependents: [{ lane: y!.name, id: "d" }] });
  });

  it("a registration a lane kept before it recorded owners is held for good after the upgrade in place", async () => {
    const { clock, lanes: [x, y] } = await lanes(2);
    // Lane x as version 18 left it: job x, and y's dependent d registered with it.
    await runInDurableObject(x!.stub, (_lane, state) => {
      dropTables(state.storage);
      expect(migrate(state.storage, T0, 18)).toEqual({ ok: true, version: 18 });
      const sql = state.storage.sql;
      sql.exec(`UPDATE lane SET name = ? WHERE id = 1`, x!.name);
      sql.exec(
        `INSERT INTO jobs (id, kind, payload, queue, priority, run_at, state, attempts, max_attempts, backoff_base_ms, backoff_max_ms,
           timeout_ms, cancel_requested, generation, created_at, updated_at, has_dependents)
         VALUES ('x', 'k-x', 'null', NULL, 0, ?, 'queued', 0, 3, 1000, 300000, 60000, 0, 0, ?, ?, 1)`,
        T0 - 1_000, T0 - 1_000, T0 - 1_000,
      );
      sql.exec(`INSERT INTO dependents (dep_seq, lane, id, created_at) SELECT seq, ?, 'd', ? FROM jobs WHERE id = 'x'`, y!.name, T0 - 1_000);
    });
    await evictDurableObject(x!.stub);
    await inject(x!.stub, clock, new TestEntropy());
    expect(await sql(x!.stub, `SELECT lane, id, owners FROM dependents`)).toEqual([{ lane: y!.name, id: "d", owners: null }]);
    const registration = [{ id: "x", dependent: { lane: y!.name, id: "d" } }];
    value(await x!.stub.registerDependents(registration, 0, "enqueue-b"));
    value(await x!.stub.unregisterDependents(registration, 0, "enqueue-b"));
    expect(value(await x!.stub.dependents("x"))).toEqual({ dependents: [{ lane: y!.name, id: "d" }] });
  });
});
