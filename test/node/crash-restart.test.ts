/**
 * The real runtime, driven from Node: workerd is SIGKILLed while executors run, restarted over the
 * same persisted state, and every job still settles exactly once.
 */
import { expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";
import { stateDirFor, until } from "./support.js";

const stateDir = stateDirFor("crash");
const logs: string[] = [];

it("settles every job exactly once when the runtime is killed while executors run", async () => {
  const onLog = (line: string) => void logs.push(line);
  let runtime = await LocalRuntime.start({ persistDir: stateDir.path, onLog });
  const lanes = ["crash-a", "crash-b"];
  const ids: { lane: string; id: string }[] = [];
  for (const lane of lanes) {
    const jobs = Array.from({ length: 30 }, (_, i) => ({
      id: `${lane}-${i}`,
      kind: i % 3 === 0 ? "demo.echo" : "demo.sleep",
      payload: i % 3 === 0 ? { i } : { ms: 150 },
      queue: i % 5 === 0 ? "serial" : undefined,
    }));
    const answer = await runtime.api("POST", `/v1/lanes/${lane}/jobs/batch`, { jobs });
    expect(answer.status).toBe(200);
    ids.push(...jobs.map((j) => ({ lane, id: j.id })));
  }
  const counts = async (lane: string) => (await runtime.api("GET", `/v1/lanes/${lane}`)).body.counts;
  await until("jobs to be running", async () => (await counts("crash-a")).running > 0 && (await counts("crash-b")).running > 0);

  await runtime.kill();
  runtime = await LocalRuntime.start({ persistDir: stateDir.path, onLog });
  try {
    for (const lane of lanes) {
      await until(`lane ${lane} to settle everything`, async () => (await counts(lane)).completed === 30);
    }
    let rerun = 0;
    for (const { lane, id } of ids) {
      const job = (await runtime.api("GET", `/v1/lanes/${lane}/jobs/${id}`)).body;
      expect(job.state).toBe("settled");
      expect(job.outcome).toBe("completed");
      if (job.generation > 1) rerun++;
    }
    // The kill did interrupt executors: their jobs were recovered and claimed again after the restart.
    expect(rerun).toBeGreaterThan(0);
    const settledLines = logs
      .filter((l) => l.includes('"job.transition"'))
      .map((l) => JSON.parse(l.slice(l.indexOf("{"))) as { jobId: string; to: string })
      .filter((e) => e.to === "settled");
    const perJob = new Map<string, number>();
    for (const e of settledLines) perJob.set(e.jobId, (perJob.get(e.jobId) ?? 0) + 1);
    // A line is written once its transition is durable, so none can announce a settlement the kill
    // undid; a kill right after a commit can swallow one instead. Never two for one job.
    expect(perJob.size).toBeGreaterThan(ids.length / 2);
    expect([...perJob.values()].every((n) => n === 1)).toBe(true);
  } finally {
    await runtime.stop();
  }
});
