import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import type { LaneClient } from "../../src/client/types.js";
import { batch, createWorker, type WorkerBatchJob } from "../../src/client/worker.js";
import type { BatchJobAnswer } from "../../src/shared/batch-answers.js";
import { QueueError } from "../../src/shared/errors.js";
import { TOKEN } from "../helpers/http.js";
import { PAYLOADS_LANE_PREFIX } from "../helpers/test-worker.js";

const KIND = "k.batch";

/** A worker with one batch handler on a fresh lane, through the app's own fetch; its requests are kept. */
function batchWorker(size: number, waitMs: number, answer: (jobs: WorkerBatchJob[]) => BatchJobAnswer[] | Promise<BatchJobAnswer[]>, name: string = crypto.randomUUID()) {
  const runs: WorkerBatchJob[][] = [];
  const requests: { path: string; body: any }[] = [];
  let ran!: () => void;
  let firstRun = new Promise<void>((resolve) => (ran = resolve));
  const worker = createWorker({
    url: "http://switchyard.test", token: TOKEN, lane: name,
    handlers: {
      [KIND]: batch({
        size, waitMs,
        run: (jobs) => {
          runs.push(jobs);
          ran();
          return answer(jobs);
        },
      }),
    },
    fetch: async (input, init) => {
      const request = new Request(input, init);
      requests.push({ path: new URL(request.url).pathname, body: request.method === "POST" ? await request.clone().json() : null });
      return exports.default.fetch(request);
    },
  });
  return { lane: createLaneClient(env.LANE).lane(name), worker, runs, requests, ran: () => firstRun, nextRun: () => (firstRun = new Promise<void>((resolve) => (ran = resolve))) };
}

/** The job once settled (a lane client's held read). */
const settled = (lane: LaneClient, id: string) => lane.wait(id, { timeoutMs: 5_000 });

describe("createWorker batch handlers", () => {
  it("claims with max and minJobs = size, runs the jobs together, and acks each on its own in one request", async () => {
    const { lane, worker, runs, requests, ran } = batchWorker(4, 5_000, (jobs) =>
      jobs.map((job, i) => (i === 2 ? { ok: false, error: "bad row", retry: false } : { ok: true, result: { n: (job.payload as { n: number }).n * 10 } })),
    );
    await lane.enqueueBatch({ jobs: Array.from({ length: 4 }, (_, n) => ({ id: `j${n}`, kind: KIND, payload: { n } })) });
    await ran();
    expect(runs).toHaveLength(1);
    expect(runs[0]!.map((j) => j.id)).toEqual(["j0", "j1", "j2", "j3"]);
    expect(runs[0]!.map((j) => j.attempt)).toEqual([1, 1, 1, 1]);
    const done = await Promise.all(["j0", "j1", "j2", "j3"].map((id) => settled(lane, id)));
    expect(done.map((j) => [j.outcome, j.result, j.error])).toEqual([
      ["completed", { n: 0 }, null], ["completed", { n: 10 }, null], ["failed", null, "bad row"], ["completed", { n: 30 }, null],
    ]);
    expect(await worker.stop({ graceMs: 1_000 })).toEqual({ drained: true, inFlight: 0 });
    const claims = requests.filter((r) => r.path.endsWith("/claims"));
    expect(claims[0]!.body).toMatchObject({ kinds: [KIND], max: 4, minJobs: 4, waitMs: 5_000 });
    const acks = requests.filter((r) => r.path.endsWith("/acks"));
    expect(acks).toHaveLength(1);
    expect(acks[0]!.body.acks.map((a: { op: string; id: string }) => [a.op, a.id])).toEqual([["complete", "j0"], ["complete", "j1"], ["fail", "j2"], ["complete", "j3"]]);
  });

  it("waits for size jobs before running, while the claim's wait lasts", async () => {
    const { lane, worker, runs, ran } = batchWorker(3, 5_000, (jobs) => jobs.map(() => ({ ok: true })));
    await lane.enqueueBatch({ jobs: [{ id: "a", kind: KIND }, { id: "b", kind: KIND }] });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(runs).toHaveLength(0);
    expect(await lane.get("a")).toMatchObject({ state: "queued" });
    await lane.enqueue({ id: "c", kind: KIND });
    await ran();
    expect(runs[0]!.map((j) => j.id)).toEqual(["a", "b", "c"]);
    await worker.stop({ graceMs: 1_000 });
  });

  it("runs fewer than size once waitMs has passed, and a throw fails every job of the batch", async () => {
    const { lane, worker, runs, ran } = batchWorker(3, 200, () => {
      throw new Error("provider down");
    });
    await lane.enqueue({ id: "a", kind: KIND, maxAttempts: 1 });
    await ran();
    expect(runs[0]!.map((j) => j.id)).toEqual(["a"]);
    expect(await settled(lane, "a")).toMatchObject({ outcome: "failed", error: "provider down" });
    await worker.stop({ graceMs: 1_000 });
  });

  it("gives run each payload and dependency's result held in R2 whole (a claim of several leaves them out)", async () => {
    const big = (tag: string) => ({ tag, blob: "y".repeat(200 * 1024) });
    const { lane, worker, runs, ran, requests } = batchWorker(2, 5_000, (jobs) => jobs.map(() => ({ ok: true })), `${PAYLOADS_LANE_PREFIX}${crypto.randomUUID()}`);
    await lane.enqueue({ id: "dep", kind: "demo.echo", payload: big("dependency") });
    expect(await settled(lane, "dep")).toMatchObject({ outcome: "completed" });
    await lane.enqueue({ id: "h1", kind: KIND, payload: big("h1"), dependsOn: [{ id: "dep" }] });
    await lane.enqueue({ id: "h2", kind: KIND, payload: { small: true } });
    await ran();
    expect(runs[0]!.map((j) => j.payload)).toEqual([big("h1"), { small: true }]);
    expect(runs[0]![0]!.dependencies).toEqual([expect.objectContaining({ id: "dep", outcome: "completed", result: big("dependency") })]);
    expect("resultRef" in runs[0]![0]!.dependencies[0]!).toBe(false);
    expect(requests.filter((r) => /\/jobs\/(h1\/payload|dep\/result)$/.test(r.path)).map((r) => r.path.split("/").slice(-2).join("/")).sort()).toEqual(["dep/result", "h1/payload"]);
    expect((await settled(lane, "h1")).outcome).toBe("completed");
    await worker.stop({ graceMs: 1_000 });
  });

  it("refuses sizes and windows out of range at once", () => {
    const run = () => [];
    for (const bad of [{ size: 0, waitMs: 0 }, { size: 101, waitMs: 0 }, { size: 5, waitMs: -1 }, { size: 5, waitMs: 30_001 }]) {
      expect(() => batch({ ...bad, run })).toThrow(QueueError);
    }
  });
});
