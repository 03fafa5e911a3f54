/**
 * Durable steps in the real runtime, driven from Node: workerd is SIGKILLed in the middle
 * of a multi-step job and restarted over the same state; the steps recorded before the kill do not
 * run again, and every later attempt sees their recorded values.
 */
import { expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";
import { stateDirFor, until } from "./support.js";

const stateDir = stateDirFor("steps");

type Checkpoint = { name: string; value: unknown; generation: number };

it("does not run again the steps recorded before a SIGKILL", async () => {
  let runtime = await LocalRuntime.start({ persistDir: stateDir.path });
  const path = "/v1/lanes/steps-crash/jobs";
  try {
    const steps = Array.from({ length: 8 }, (_, i) => `s${i + 1}`);
    expect((await runtime.api("POST", path, { id: "multi", kind: "demo.steps", payload: { steps: steps.length, stepMs: 300 } })).status).toBe(201);
    // An answer that shows a checkpoint is sent once the write is durable (the object's output gate).
    let recorded: Checkpoint[] = [];
    await until("three steps to be recorded", async () => {
      recorded = (await runtime.api("GET", `${path}/multi/checkpoints`)).body.checkpoints as Checkpoint[];
      return recorded.length >= 3;
    });
    expect(recorded.every((c) => c.generation === 1)).toBe(true);

    await runtime.kill();
    runtime = await LocalRuntime.start({ persistDir: stateDir.path });

    let job: any;
    await until("the job to complete", async () => {
      job = (await runtime.api("GET", `${path}/multi`)).body;
      return job.state === "settled";
    });
    expect(job).toMatchObject({ outcome: "completed" });
    // The kill cut the first attempt off: the job was recovered and claimed again after the restart.
    expect(job.generation).toBeGreaterThanOrEqual(2);
    const before = recorded.map((c) => c.name);
    expect(job.result.ran.filter((name: string) => before.includes(name))).toEqual([]);
    expect(Object.keys(job.result.values).sort()).toEqual([...steps].sort());
    for (const c of recorded) expect(job.result.values[c.name], c.name).toEqual(c.value);
    // Completion took the job's checkpoints with it.
    expect((await runtime.api("GET", `${path}/multi/checkpoints`)).body).toEqual({ checkpoints: [] });
  } finally {
    await runtime.stop();
  }
});
