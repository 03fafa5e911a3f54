/**
 * A pull worker's result that breaks its kind's result schema (docs/api.md "Typed kinds"): the lane
 * answers the complete `invalid_payload` and keeps the lease, and the worker fails the attempt with
 * the refusal's message, retried like any failure. A single-job handler's and a batch handler's alike.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import { batch, createWorker, type WorkerEvent, type WorkerHandler } from "../../src/client/worker.js";
import { TOKEN } from "../helpers/http.js";

/** A kind the test lane declares with the result schema `{"sent": boolean}` (helpers/kinds.ts). */
const KIND = "typed.pull";

/** A worker of `handler` for KIND on a fresh lane, through the app's own fetch, and a promise of its first `count` outcomes. */
function inWorker(handler: WorkerHandler, count: number) {
  const name = crypto.randomUUID();
  const events: WorkerEvent[] = [];
  let done!: () => void;
  const outcomes = new Promise<void>((resolve) => (done = resolve));
  const worker = createWorker({
    url: "http://switchyard.test", token: TOKEN, lane: name, waitMs: 5_000, handlers: { [KIND]: handler },
    fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    onEvent: (event) => {
      events.push(event);
      if (events.filter((e) => e.type === "completed" || e.type === "failed").length === count) done();
    },
  });
  return { lane: createLaneClient(env.LANE).lane(name), worker, events, outcomes };
}

describe("a pull worker's result refused by its kind's result schema", () => {
  it("fails the attempt with the refusal's message, and the job is retried", async () => {
    let calls = 0;
    const { lane, worker, events, outcomes } = inWorker(() => (++calls === 1 ? { sent: "yes" } : { sent: true }), 2);
    await lane.enqueue({ id: "r1", kind: KIND, payload: { to: "a@b.co" }, maxAttempts: 2, backoff: { baseMs: 1, maxMs: 1 } });
    await outcomes;
    await worker.stop({ graceMs: 1_000 });
    expect(events.filter((e) => e.type === "failed")).toEqual([expect.objectContaining({ jobId: "r1", retry: true, error: expect.stringMatching(/result of kind typed\.pull.*sent/) })]);
    const job = await lane.get("r1");
    expect(job).toMatchObject({ outcome: "completed", attempts: 2, result: { sent: true } });
    expect(job.errors).toEqual([expect.objectContaining({ attempt: 1, message: expect.stringMatching(/typed\.pull/) })]);
    expect(worker.stats()).toMatchObject({ failures: 1, completions: 1, lost: 0 });
  });

  it("fails the batch job whose result breaks it, alone", async () => {
    const { lane, worker, outcomes } = inWorker(
      batch({ size: 2, waitMs: 5_000, run: (jobs) => jobs.map((job) => ({ ok: true, result: { sent: job.id === "b1" ? true : 1 } })) }),
      2,
    );
    await lane.enqueueBatch({ jobs: ["b1", "b2"].map((id) => ({ id, kind: KIND, payload: { to: "a@b.co" }, maxAttempts: 1 })) });
    await outcomes;
    await worker.stop({ graceMs: 1_000 });
    expect(await lane.get("b1")).toMatchObject({ outcome: "completed", result: { sent: true } });
    expect(await lane.get("b2")).toMatchObject({ outcome: "failed", result: null, error: expect.stringMatching(/result of kind typed\.pull.*sent/) });
  });
});
