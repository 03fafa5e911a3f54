/**
 * Whatever an executor, a hook or an observer throws — an object with no prototype, one whose
 * `toString` throws, a symbol, `undefined`, a number, a string — a job still ends as any failure
 * ends (retried, then settled `failed` with a readable `error`: never `interrupted`, never stuck),
 * a hook's throw never keeps a job from settling, and an observer's throw never silences the
 * transitions told after it.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { DISPATCH_LEASE_MS } from "../../../src/shared/defaults.js";
import { describeError } from "../../../src/shared/describe-error.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { unwrap } from "../../../src/shared/errors.js";
import { DEMO_THROWS, type DemoThrow } from "../../../src/worker/demo-executors.js";
import { gate, waitForTransition } from "../../helpers/executors.js";
import { hookThrows, told } from "../../helpers/hook-throws.js";
import { get, post, setup } from "../../helpers/http.js";
import { inject, T0 } from "../../helpers/lane.js";

const VALUES = Object.keys(DEMO_THROWS) as DemoThrow[];

/** The error a job keeps for each value: what `describeError` makes of it, readable text. */
const EXPECTED: Record<DemoThrow, string> = {
  "null-prototype": "a thrown object with nothing to print (not an Error)",
  symbol: "Symbol(x)",
  "bad-tostring": "a thrown object with nothing to print (not an Error)",
  undefined: "undefined",
  number: "42",
  string: "plain string",
};

afterEach(() => {
  hookThrows.outcome = hookThrows.transition = hookThrows.lost = null;
});

describe("an executor that throws a value that is no printable Error (demo.throw, over HTTP)", () => {
  it.each(VALUES)("%s: retried, then settled failed with a readable error", async (value) => {
    const lane = await setup();
    const enqueued = await post(`${lane.base}/jobs`, { id: "t", kind: "demo.throw", payload: { value }, maxAttempts: 2, backoff: { baseMs: 1_000, maxMs: 1_000 } });
    expect(enqueued.status).toBe(201);
    await runInDurableObject(lane.stub, () => waitForTransition("t", (e) => e.lane === lane.lane && e.from === "running" && e.to === "queued"));
    lane.clock.advance(2_000);
    await runDurableObjectAlarm(lane.stub);
    await runInDurableObject(lane.stub, () => waitForTransition("t", (e) => e.lane === lane.lane && e.to === "settled"));
    const job = (await get(`${lane.base}/jobs/t`)).body;
    expect(job).toMatchObject({ state: "settled", outcome: "failed", attempts: 2, error: EXPECTED[value] });
    expect(job.errors.map((e: { message: string }) => e.message)).toEqual([EXPECTED[value], EXPECTED[value]]);
  });
});

/** A fresh THROWING_LANE on a manual clock. */
async function throwingLane() {
  const name = `throwing-${crypto.randomUUID()}`;
  const stub = env.THROWING_LANE.getByName(name);
  const clock = new ManualClock(T0);
  await inject(stub, clock);
  const settled = (id: string) => runInDurableObject(stub, () => waitForTransition(id, (e) => e.lane === name && e.to === "settled"));
  return { name, stub, clock, settled };
}

describe("hooks and observers that throw such values", () => {
  it.each(VALUES)("onOutcome throwing %s: the job settles all the same, and the next one too", async (value) => {
    hookThrows.outcome = value;
    const { stub, settled } = await throwingLane();
    const first = unwrap(await stub.enqueue({ kind: "demo.echo", payload: { n: 1 } })).job;
    const second = unwrap(await stub.enqueue({ kind: "demo.echo", payload: { n: 2 } })).job;
    await settled(first.id);
    await settled(second.id);
    expect(told.outcomes.filter((j) => j.id === first.id || j.id === second.id)).toHaveLength(2);
    expect(unwrap(await stub.getJob(first.id))).toMatchObject({ state: "settled", outcome: "completed" });
    expect(unwrap(await stub.getJob(second.id))).toMatchObject({ state: "settled", outcome: "completed" });
    expect(unwrap(await stub.info()).counts).toMatchObject({ completing: 0, completed: 2 });
  });

  it.each(VALUES)("onTransition throwing %s: every transition of a batch is still told", async (value) => {
    hookThrows.transition = value;
    const { name, stub } = await throwingLane();
    const ids = ["a", "b", "c"];
    unwrap(await stub.enqueueBatch({ jobs: ids.map((id) => ({ id, kind: "email.send" })) }));
    await runInDurableObject(stub, () => Promise.all(ids.map((id) => waitForTransition(id, (e) => e.lane === name && e.from === null))));
    const enqueued = told.transitions.filter((e) => e.lane === name && e.from === null).map((e) => e.jobId);
    expect(enqueued).toEqual(ids);
  });

  it.each(VALUES)("onLost throwing %s: the lost attempt's job is recovered, and the lane goes on", async (value) => {
    hookThrows.lost = value;
    const { name, stub, clock, settled } = await throwingLane();
    const g = gate();
    const job = unwrap(await stub.enqueue({ kind: "test.gate", payload: { gate: g.key, honour: true } })).job;
    await runInDurableObject(stub, () => g.started());
    clock.advance(DISPATCH_LEASE_MS + 1);
    await runDurableObjectAlarm(stub);
    expect(told.lost.filter((e) => e.lane === name).map((e) => e.jobId)).toEqual([job.id]);
    await runInDurableObject(stub, async () => (await g.started(2)).open({ done: true }));
    await settled(job.id);
    expect(unwrap(await stub.getJob(job.id))).toMatchObject({ outcome: "completed", result: { done: true } });
  });
});

describe("describeError", () => {
  it("reads an Error's message, else its name", () => {
    expect(describeError(new Error("boom"))).toBe("boom");
    expect(describeError(new TypeError(""))).toBe("TypeError");
  });

  it("never throws, whatever it is given, and always answers text", () => {
    const hostile = [
      Object.create(null),
      new Proxy({}, { get: () => { throw new Error("no"); }, getPrototypeOf: () => { throw new Error("no"); }, ownKeys: () => { throw new Error("no"); } }),
      Object.defineProperty(new Error("x"), "message", { get: () => { throw new Error("no message for you"); } }),
      { toString: () => { throw new Error("no"); }, toJSON: () => { throw new Error("no"); } },
      { [Symbol.toPrimitive]: () => { throw new Error("no"); } },
      Symbol("s"),
      10n,
      () => 1,
      "",
      null,
      { a: 1 },
      [1, 2],
    ];
    for (const value of hostile) {
      const text = describeError(value);
      expect(typeof text).toBe("string");
      expect(text.length).toBeGreaterThan(0);
    }
    expect(describeError({ code: 5 })).toBe('{"code":5}');
  });
});
