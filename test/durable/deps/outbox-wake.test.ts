/**
 * The outbox's wake term comes from the outbox's own rows: a notice owed after the lane's last
 * registration went (a purge deletes a waited-for job and its registrations, leaving the notice of
 * its deletion) still wakes the lane after a restart, and again after a delivery that failed.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { startClocks } from "../../helpers/test-worker.js";
import { T0, TestEntropy, fireAlarm, inject, sql, value, wake, type LaneStub } from "../../helpers/lane.js";

async function lane(clock: ManualClock, name = `outbox-wake-${crypto.randomUUID()}`): Promise<{ name: string; stub: LaneStub }> {
  const stub = env.LANE.getByName(name);
  await inject(stub, clock, new TestEntropy());
  return { name, stub };
}

/** Restarts lane `name` (its memory gone, its storage kept) on `clock`. */
async function restart(name: string, clock: ManualClock): Promise<LaneStub> {
  startClocks.set(name, clock);
  await expect(runInDurableObject(env.LANE.getByName(name), (_l, state) => state.abort("restart"))).rejects.toThrow();
  return (await lane(clock, name)).stub;
}

const notices = (stub: LaneStub) => sql<{ next_at: number; attempts: number }>(stub, `SELECT next_at, attempts FROM outbox`);

/** Lane `a` owes `b` the notice of a purged job `b` waited for; `a` keeps no registration. */
async function purgedDependency() {
  const clock = new ManualClock(T0);
  const a = await lane(clock);
  const b = await lane(clock);
  value(await a.stub.enqueue({ id: "d", kind: "k-d", queue: "q" }));
  value(await b.stub.enqueue({ id: "p", kind: "k-p", dependsOn: [{ lane: a.name, id: "d" }] }));
  expect(value(await a.stub.purgeQueue("q")).purged).toBe(1);
  expect(await sql(a.stub, `SELECT 1 FROM dependents`)).toEqual([]);
  expect(await notices(a.stub)).toEqual([{ next_at: T0, attempts: 0 }]);
  return { clock, a, b };
}

it("a restarted lane with no registration left still wakes for the notice it owes", async () => {
  const { clock, a } = await purgedDependency();
  const stub = await restart(a.name, clock);
  expect(await wake(stub)).toBe(T0);
});

it("a notice whose delivery failed after a restart comes due again with an alarm set for it", async () => {
  const { clock, a, b } = await purgedDependency();
  // The receiver refuses every call for now: its schema is newer than this code knows.
  await sql(b.stub, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 0)`);
  await restart(b.name, clock);
  const stub = await restart(a.name, clock);
  expect(await fireAlarm(stub)).toBe(true);
  await expect.poll(() => notices(stub).then((r) => r[0]?.attempts)).toBe(1);
  const [owed] = await notices(stub);
  expect(owed!.next_at).toBeGreaterThan(T0); // postponed by the backoff
  expect(await wake(stub)).toBe(owed!.next_at);
});
