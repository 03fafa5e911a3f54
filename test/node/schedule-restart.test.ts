/**
 * A schedule in the real runtime, driven from Node: an `everyMs: 1000` schedule keeps firing across a
 * SIGKILL and a restart over the same state, no id fires twice, and the fires the lane missed while
 * it was down collapse to the latest, as docs/api.md's missed-fire rule says.
 */
import { expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";
import { stateDirFor, until } from "./support.js";

const stateDir = stateDirFor("schedule");
const logs: string[] = [];
const LANE = "schedule-restart";
/** A kind with no executor: the fired jobs wait, queued, to be read. */
const KIND = "schedule.tick";

type Fired = { id: string; at: number; createdAt: number };

async function fires(runtime: LocalRuntime): Promise<Fired[]> {
  const answer = await runtime.api("GET", `/v1/lanes/${LANE}/jobs?limit=500`);
  expect(answer.status).toBe(200);
  return (answer.body.jobs as { id: string; runAt: number; createdAt: number }[]).map((j) => ({ id: j.id, at: j.runAt, createdAt: j.createdAt }));
}

/** Waits (bounded) until the lane holds `n` fired jobs, asking every 100 ms. */
const untilFired = (runtime: LocalRuntime, n: number) => until(`${n} fires`, async () => (await fires(runtime)).length >= n, 60_000, 100);

it("keeps an everyMs: 1000 schedule firing across a SIGKILL and restart, each id once, missed fires collapsed", async () => {
  const onLog = (line: string) => void logs.push(line);
  let runtime = await LocalRuntime.start({ persistDir: stateDir.path, onLog });
  const put = await runtime.api("PUT", `/v1/lanes/${LANE}/schedules/tick`, { everyMs: 1000, job: { kind: KIND, payload: { from: "restart test" } } });
  expect(put.status).toBe(201);
  await untilFired(runtime, 3);

  await runtime.kill();
  const killedAt = Date.now();
  await new Promise((r) => setTimeout(r, 3_000)); // at least two fires missed
  runtime = await LocalRuntime.start({ persistDir: stateDir.path, onLog });
  const upAt = Date.now();
  try {
    const before = (await fires(runtime)).filter((f) => f.createdAt < killedAt).length;
    await untilFired(runtime, before + 4);
    const all = await fires(runtime);
    const first = all[0]!.at;

    for (const [i, fire] of all.entries()) {
      // Each id is <name>@<T> with runAt T, on the schedule's grid, and strictly after the one before.
      expect(fire.id).toBe(`tick@${fire.at}`);
      expect((fire.at - first) % 1000).toBe(0);
      if (i > 0) expect(fire.at).toBeGreaterThan(all[i - 1]!.at);
      // A fire enqueues the latest instant at or before the moment it runs: never an older, missed one.
      expect(fire.createdAt - fire.at).toBeGreaterThanOrEqual(0);
      expect(fire.createdAt - fire.at).toBeLessThan(1000);
    }

    // The one gap across the kill: the fires missed while the runtime was down became one, the latest.
    const lastBefore = all[before - 1]!;
    const firstAfter = all[before]!;
    expect(firstAfter.createdAt).toBeGreaterThan(killedAt);
    expect(firstAfter.at - lastBefore.at).toBeGreaterThanOrEqual(2000);
    // Down for 3 s: the fires up to killedAt + 2000 were missed, and the latest one runs instead of them.
    expect(firstAfter.at).toBeGreaterThan(killedAt + 2000);
    expect(firstAfter.createdAt - upAt).toBeLessThan(10_000);
    // Then it goes on from there, one grid instant after another (a slow alarm may skip one, never more).
    for (let i = before + 1; i < all.length; i++) expect(all[i]!.at - all[i - 1]!.at).toBeLessThanOrEqual(2000);

    // No id enqueued twice, by the lane's own transition log.
    const enqueued = logs
      .filter((l) => l.includes('"job.transition"') && l.includes('"from":null'))
      .map((l) => (JSON.parse(l.slice(l.indexOf("{"))) as { jobId: string }).jobId);
    expect(new Set(enqueued).size).toBe(enqueued.length);
    expect(new Set(all.map((f) => f.id)).size).toBe(all.length);

    const schedule = (await runtime.api("GET", `/v1/lanes/${LANE}/schedules/tick`)).body;
    expect(schedule.lastRunAt).toBeGreaterThanOrEqual(all.at(-1)!.at);
    expect((await runtime.api("DELETE", `/v1/lanes/${LANE}/schedules/tick`)).status).toBe(200);
  } finally {
    await runtime.stop();
  }
});
