/**
 * A batch executor's jobs are held to what a single-job executor's are: a declared kind's result
 * schema checks each job's result before it completes (a mismatch fails that job alone, its error
 * naming the issue), and a payload or dependency's result held in R2 reaches `run` whole.
 */
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/shared/errors.js";
import type { Job } from "../../../src/shared/job.js";
import { batchCall } from "../../helpers/batch-executors.js";
import { countDependencyReads } from "../../helpers/held-payloads.js";
import { setup } from "../../helpers/dispatch.js";

/** A payload whose JSON is about `kib` KiB. */
const big = (kib: number, tag: string) => ({ tag, blob: "y".repeat(kib * 1024) });

async function batchLane(options: { payloads?: boolean } = {}) {
  const fixture = await setup(options);
  const tag = crypto.randomUUID();
  const call = async (n = 1) => {
    // Dependencies read from the lane are read in its I/O context.
    const { batch, dependencies } = await fixture.inside(async () => {
      const batch = await batchCall(tag, n);
      return { batch, dependencies: batch.jobs.map((j) => j.dependencies) };
    });
    return { jobs: batch.jobs, dependencies, answer: (answers: unknown) => fixture.inside(() => batch.answer(answers)) };
  };
  return { ...fixture, tag, call };
}

describe("a batch executor's results and a declared kind's result schema", () => {
  it("fails the job whose result breaks the schema, naming the issue; the others complete", async () => {
    const { lane, tag, call, settled } = await batchLane();
    const answer = unwrap(await lane.enqueueBatch({ jobs: [0, 1, 2].map((i) => ({ kind: "typed.batch", payload: { tag, i }, maxAttempts: 1 })) }));
    const ids = answer.results.map((r) => r.id);
    const batch = await call();
    // The schema checks asynchronously: the lane awaits it before it writes the batch's outcomes.
    await batch.answer([{ ok: true, result: { ms: 5 } }, { ok: true, result: { ms: -1 } }, { ok: true }]);
    const [good, bad, none] = await Promise.all(ids.map((id) => settled(id)));
    expect(good).toMatchObject({ outcome: "completed", result: { ms: 5 } });
    for (const failed of [bad!, none!]) {
      expect(failed).toMatchObject({ outcome: "failed", result: null });
      expect(failed.error).toMatch(/result of kind typed\.batch does not match its schema/);
      expect(failed.error).toMatch(/ms must be an integer/);
    }
  });

  it("retries a job whose result breaks the schema while attempts remain", async () => {
    const { lane, tag, call, waitFor, get } = await batchLane();
    const answer = unwrap(await lane.enqueueBatch({ jobs: [0, 1, 2].map((i) => ({ kind: "typed.batch", payload: { tag, i }, maxAttempts: 2 })) }));
    const ids = answer.results.map((r) => r.id);
    await (await call()).answer([{ ok: true, result: { ms: 1 } }, { ok: true, result: { ms: 1 } }, { ok: true, result: "no" }]);
    await waitFor(ids[2]!, (e) => e.from === "running" && e.to === "queued");
    expect(await get(ids[2]!)).toMatchObject({ state: "queued", attempts: 1, error: expect.stringMatching(/typed\.batch/) });
  });
});

describe("a batch executor and big payloads", () => {
  it("gives run each held payload whole", async () => {
    const { enqueue, tag, call, settled } = await batchLane({ payloads: true });
    const payloads = [0, 1, 2].map((i) => ({ ...big(200, tag), i }));
    const jobs: Job[] = [];
    for (const payload of payloads) jobs.push(await enqueue({ kind: "test.batch", payload }));
    expect(jobs[0]!.payloadRef).toBeNull(); // an enqueue's answer carries its job whole
    const batch = await call();
    expect(batch.jobs.map((j) => j.payload)).toEqual(payloads);
    await batch.answer([{ ok: true }, { ok: true }, { ok: true }]);
    expect((await settled(jobs[2]!.id)).outcome).toBe("completed");
  });

  it("gives each job's dependencies a dependency's held result whole", async () => {
    const { lane, enqueue, tag, call, settled } = await batchLane({ payloads: true });
    const result = big(200, "dependency");
    const dependency = await enqueue({ kind: "demo.echo", payload: result });
    expect((await settled(dependency.id)).outcome).toBe("completed");
    const reads = await countDependencyReads(lane);
    for (let i = 0; i < 3; i++) await enqueue({ kind: "test.batch", payload: { tag, i }, dependsOn: [{ id: dependency.id }] });
    const batch = await call();
    for (const dependencies of batch.dependencies) expect(dependencies).toMatchObject([{ id: dependency.id, outcome: "completed", result }]);
    expect(batch.dependencies.every((d) => !("resultRef" in d[0]!))).toBe(true);
    expect(reads()).toBe(3); // each job's, once: for the read-back and for its dependencies both
    await batch.answer([{ ok: true }, { ok: true }, { ok: true }]);
  });

  it("reads each job's dependencies once when none holds its result in R2", async () => {
    const { lane, enqueue, tag, call, settled } = await batchLane({ payloads: true });
    await enqueue({ kind: "demo.echo", payload: big(200, "held") }); // the lane has held an object: a dependency may hold one
    const dependency = await enqueue({ kind: "demo.echo", payload: { small: true } });
    expect((await settled(dependency.id)).outcome).toBe("completed");
    const reads = await countDependencyReads(lane);
    for (let i = 0; i < 3; i++) await enqueue({ kind: "test.batch", payload: { tag, i }, dependsOn: [{ id: dependency.id }] });
    const batch = await call();
    for (const dependencies of batch.dependencies) expect(dependencies).toMatchObject([{ id: dependency.id, outcome: "completed", result: { small: true } }]);
    expect(reads()).toBe(3);
    await batch.answer([{ ok: true }, { ok: true }, { ok: true }]);
  });
});
