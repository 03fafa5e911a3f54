import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import { createWorker, NonRetryableError, RetryAfterError, type WorkerEvent, type WorkerHandler } from "../../src/client/worker.js";
import { MAX_PAYLOAD_BYTES } from "../../src/shared/defaults.js";
import { describeError } from "../../src/shared/describe-error.js";
import { QueueError } from "../../src/shared/errors.js";
import { DEMO_THROWS, type DemoThrow } from "../../src/worker/demo-executors.js";
import { PULL_KIND, TOKEN } from "../helpers/http.js";

it("runs inside a Worker: drains a lane through the app's own fetch, then stops leaving nothing held", async () => {
  const name = crypto.randomUUID();
  const lane = createLaneClient(env.LANE).lane(name);
  await lane.enqueueBatch({ jobs: Array.from({ length: 5 }, (_, i) => ({ id: `j${i}`, kind: PULL_KIND, payload: { i } })) });
  let done!: () => void;
  const allDone = new Promise<void>((resolve) => (done = resolve));
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    url: "http://switchyard.test",
    token: TOKEN,
    lane: name,
    waitMs: 5_000,
    handlers: { [PULL_KIND]: (payload: { i: number }) => ({ twice: payload.i * 2 }) },
    fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    onEvent: (event) => {
      events.push(event);
      if (events.filter((e) => e.type === "completed").length === 5) done();
    },
  });
  await allDone;
  expect(await lane.get("j3")).toMatchObject({ outcome: "completed", result: { twice: 6 } });
  // The worker's next claim is held in the lane; stopping withdraws it, so a job enqueued after the
  // stop is claimed by nobody.
  expect(await worker.stop({ graceMs: 1_000 })).toEqual({ drained: true, inFlight: 0 });
  await lane.enqueue({ id: "after", kind: PULL_KIND });
  expect(await lane.get("after")).toMatchObject({ state: "queued", attempts: 0 });
  expect(worker.stats()).toMatchObject({ claims: 5, completions: 5, lost: 0, inFlight: 0 });
});

/** A worker on a fresh lane, through the app's own fetch, and a promise of its first `count` outcomes. */
function inWorker(handlers: Record<string, WorkerHandler>, count: number, concurrency = 250) {
  const name = crypto.randomUUID();
  const events: WorkerEvent[] = [];
  let done!: () => void;
  const outcomes = new Promise<void>((resolve) => (done = resolve));
  const worker = createWorker({
    url: "http://switchyard.test", token: TOKEN, lane: name, waitMs: 5_000, handlers, concurrency,
    fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    onEvent: (event) => {
      events.push(event);
      if (events.filter((e) => e.type === "completed" || e.type === "failed").length === count) done();
    },
  });
  return { lane: createLaneClient(env.LANE).lane(name), worker, events, outcomes };
}

it("a handler's NonRetryableError fails the job now; a RetryAfterError sets the retry's delay", async () => {
  const { lane, worker, events, outcomes } = inWorker(
    {
      "k.final": () => {
        throw new NonRetryableError("gone for good");
      },
      "k.later": () => {
        throw new RetryAfterError("busy", 60_000);
      },
    },
    2,
  );
  await lane.enqueue({ id: "final", kind: "k.final", maxAttempts: 5 });
  const before = Date.now();
  await lane.enqueue({ id: "later", kind: "k.later", maxAttempts: 5 });
  await outcomes;
  await worker.stop({ graceMs: 1_000 });
  expect(await lane.get("final")).toMatchObject({ state: "settled", outcome: "failed", attempts: 1, error: "gone for good" });
  const later = await lane.get("later");
  expect(later).toMatchObject({ state: "queued", attempts: 1, error: "busy" });
  expect(later.runAt).toBeGreaterThanOrEqual(before + 60_000);
  expect(events.filter((e) => e.type === "failed").map((e) => e.type === "failed" && [e.jobId, e.retry])).toEqual(expect.arrayContaining([["final", false], ["later", true]]));
});

it("a handler whose result is not JSON, or too large, fails its job without retry", async () => {
  const { lane, worker, outcomes } = inWorker({ "k.big": () => "x".repeat(MAX_PAYLOAD_BYTES + 1), "k.odd": () => 10n }, 2);
  await lane.enqueueBatch({ jobs: [{ id: "big", kind: "k.big" }, { id: "odd", kind: "k.odd" }] });
  await outcomes;
  await worker.stop({ graceMs: 1_000 });
  expect(await lane.get("big")).toMatchObject({ outcome: "failed", attempts: 1, error: expect.stringContaining("handler result refused") });
  expect(await lane.get("odd")).toMatchObject({ outcome: "failed", attempts: 1, error: expect.stringContaining("handler result refused") });
});

it.each([
  ["a lease under 100 ms", { leaseMs: 50 }],
  ["a wait over 30 s", { waitMs: 30_001 }],
  ["no concurrency", { concurrency: 0 }],
  ["a kind without a handler", { kinds: ["other"] }],
])("refuses to start with %s", (_what, options) => {
  expect(() => createWorker({ url: "http://x", token: "t", lane: "l", handlers: { k: () => 1 }, ...options })).toThrow(QueueError);
});

it("reports failing claims, backs off, and still stops at once", async () => {
  const errors: WorkerEvent[] = [];
  let third!: () => void;
  const backedOff = new Promise<void>((resolve) => (third = resolve));
  const worker = createWorker({
    url: "http://nowhere.test", token: "t", lane: "l", handlers: { k: () => 1 },
    fetch: async () => {
      throw new TypeError("network down");
    },
    onEvent: (event) => {
      if (event.type === "error" && errors.push(event) === 3) third();
    },
  });
  await backedOff; // 250 + 500 ms of pauses so far; the next one is 1 s
  const asked = Date.now();
  expect(await worker.stop({ graceMs: 5_000 })).toEqual({ drained: true, inFlight: 0 });
  expect(Date.now() - asked).toBeLessThan(500);
  expect(errors[0]).toMatchObject({ type: "error", during: "claim", willRetry: true, message: expect.stringContaining("network down") });
  // Each failed claim is counted in the worker's stats, by what the request was for.
  expect(worker.stats().errors.claim).toBe(errors.filter((e) => e.type === "error" && e.during === "claim").length);
  expect(worker.stats().errors).toMatchObject({ renew: 0, ack: 0, checkpoint: 0 });
  expect(worker.stats().errors.claim).toBeGreaterThanOrEqual(3);
});

it.each(Object.keys(DEMO_THROWS) as DemoThrow[])("a handler throwing %s (no printable Error) fails its job with a readable error", async (name) => {
  const { lane, worker, events, outcomes } = inWorker({ "k.throws": () => { throw DEMO_THROWS[name](); } }, 1);
  await lane.enqueue({ id: "t", kind: "k.throws", maxAttempts: 1 });
  await outcomes;
  await worker.stop({ graceMs: 1_000 });
  const job = await lane.get("t");
  expect(job).toMatchObject({ state: "settled", outcome: "failed", attempts: 1, error: describeError(DEMO_THROWS[name]()) });
  expect(job.error!.length).toBeGreaterThan(0);
  expect(events.find((e) => e.type === "failed")).toMatchObject({ jobId: "t", error: job.error });
});

it("fills every slot of a high concurrency, with more than one claim in flight", async () => {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let started = 0;
  let allStarted!: () => void;
  const all = new Promise<void>((resolve) => (allStarted = resolve));
  const handler = () => {
    if (++started === 250) allStarted();
    return gate;
  };
  const { lane, worker, outcomes } = inWorker({ k: handler }, 250);
  await lane.configure({ concurrency: 1000 });
  for (let from = 0; from < 250; from += 125) {
    await lane.enqueueBatch({ jobs: Array.from({ length: 125 }, (_, i) => ({ id: `j${from + i}`, kind: "k" })) });
  }
  // 250 handlers waiting at once: three claims (at most 100 each) had to be answered.
  await all;
  expect(worker.stats()).toMatchObject({ claims: 250, inFlight: 250 });
  open();
  await outcomes;
  expect(await worker.stop({ graceMs: 1_000 })).toEqual({ drained: true, inFlight: 0 });
});
