/**
 * A restart ends the leases of the lane's own dispatcher: their executors died with the previous
 * instance. A lease taken by an older version of the code (a deploy since) is given back at once,
 * its attempt returned and no recovery spent, so deploys never make a healthy job `interrupted`. A
 * lease of the same version (a crash, perhaps the job's own doing) is recovered on the job's budget,
 * so a job that keeps killing its isolate still ends `interrupted`.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { UNVERSIONED } from "../../../src/durable/lane-parts.js";
import { unwrap } from "../../../src/shared/errors.js";
import type { DemoLane } from "../../../src/worker/index.js";
import { gate, transitions } from "../../helpers/executors.js";
import { setup } from "../../helpers/dispatch.js";
import { inject } from "../../helpers/lane.js";
import { startClocks } from "../../helpers/test-worker.js";

type Lane = Awaited<ReturnType<typeof setup>>;

const leaseRow = (stub: DurableObjectStub<DemoLane>, id: string) =>
  runInDurableObject(stub, (_l, state) =>
    state.storage.sql
      .exec<{ state: string; outcome: string | null; attempts: number; generation: number; recovery_count: number; lease_version: string | null }>(
        `SELECT state, outcome, attempts, generation, recovery_count, lease_version FROM jobs WHERE id = ?`,
        id,
      )
      .one(),
  );

/**
 * The object dies (a crash or a deploy's restart: its memory and its executors are gone) and starts
 * again over the same storage, on the test's clock from its start; answers its new stub.
 */
async function restart(lane: Lane): Promise<DurableObjectStub<DemoLane>> {
  startClocks.set(lane.name, lane.clock);
  await expect(runInDurableObject(env.LANE.getByName(lane.name), (_l, state) => state.abort("restart"))).rejects.toThrow();
  const stub = env.LANE.getByName(lane.name);
  await inject(stub, lane.clock);
  return stub;
}

/** Runs `fn` in the lane's I/O context (where an executor's promise may be awaited). */
const inside = <T>(stub: DurableObjectStub<DemoLane>, fn: () => T | Promise<T>) => runInDurableObject(stub, () => fn());

describe("restarts and the recovery budget", () => {
  it("records the running version on the leases it takes (the fallback without version metadata)", async () => {
    const lane = await setup();
    const g = gate();
    const job = await lane.enqueue({ kind: "test.gate", payload: { gate: g.key } });
    await lane.inside(() => g.started());
    expect((await leaseRow(lane.lane, job.id)).lease_version).toBe(UNVERSIONED);
  });

  it("gives back, free, a lease an older version took: four deploys in a window leave the job running, its budget untouched", async () => {
    const lane = await setup();
    const g = gate();
    const job = await lane.enqueue({ kind: "test.gate", payload: { gate: g.key }, recovery: { maxRecoveries: 3, windowMs: 3_600_000 } });
    let stub = lane.lane;
    for (let deploy = 1; deploy <= 4; deploy++) {
      await inside(stub, () => g.started(deploy));
      // The lease as a previous version of the code wrote it.
      await runInDurableObject(stub, (_l, state) => state.storage.sql.exec(`UPDATE jobs SET lease_version = ? WHERE id = ?`, `v-before-${deploy}`, job.id));
      stub = await restart(lane);
      await inside(stub, () => g.started(deploy + 1)); // given back, and started again
      expect(await leaseRow(stub, job.id)).toMatchObject({ state: "running", outcome: null, attempts: 1, generation: deploy + 1, recovery_count: 0, lease_version: UNVERSIONED });
    }
    // Each deploy was a running → queued without a recovery: no error recorded, no interruption.
    expect(unwrap(await stub.getJob(job.id)).errors).toEqual([]);
    expect(transitions(job.id).filter((e) => e.from === "running" && e.to === "queued")).toHaveLength(4);
    expect(unwrap(await stub.info()).stats).toMatchObject({ recovered: 0, interrupted: 0 });
  });

  it("recovers, on the budget, a lease of the same version: a job that keeps killing its isolate ends interrupted", async () => {
    const lane = await setup();
    const g = gate();
    const job = await lane.enqueue({ kind: "test.gate", payload: { gate: g.key }, recovery: { maxRecoveries: 3, windowMs: 3_600_000 } });
    let stub = lane.lane;
    for (let crash = 1; crash <= 3; crash++) {
      await inside(stub, () => g.started(crash));
      stub = await restart(lane);
      await inside(stub, () => g.started(crash + 1));
      expect(await leaseRow(stub, job.id)).toMatchObject({ state: "running", attempts: 1, recovery_count: crash });
    }
    stub = await restart(lane); // the fourth crash within the window: the budget is spent
    expect(await leaseRow(stub, job.id)).toMatchObject({ state: "settled", outcome: "interrupted", recovery_count: 3 });
    expect(g.attempts).toHaveLength(4);
  });
});
