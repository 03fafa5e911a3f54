/**
 * Held requests across a reset of their lane's object (a deploy, an eviction, `ctx.abort()`): the
 * front worker asks the lane again, so a held read, a held enqueue's wait, a held claim and a job's
 * SSE stream are answered as if nothing had happened, never 5xx. Through the worker's own app, the
 * lane hard-restarted (its memory gone, its storage kept) while the request is held in it.
 */
import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import { acrossResets, isLaneReset, MAX_RESET_RETRIES } from "../../src/routing/lane-retry.js";
import { shardObjectName } from "../../src/shared/shards.js";
import { enqueue, enqueueAndClaim, claimOne, get, post, PULL_KIND, request, setup, type LaneFixture } from "../helpers/http.js";
import { fireAlarm } from "../helpers/lane.js";
import { restartLane } from "../helpers/restart.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

type Holding = "reads" | "claims" | "streams" | "watches";

/** How many requests of that sort the lane holds now. */
function heldIn(stub: LaneFixture["stub"], what: Holding): Promise<number> {
  return runInDurableObject(stub, (lane: Lane) => {
    const inner = lane as unknown as { rpc: { jobWaits: { held: { size: number } } }; parts: Record<"waiters" | "streamReaders" | "watchers", { size: number }> };
    if (what === "reads") return inner.rpc.jobWaits.held.size;
    return inner.parts[what === "claims" ? "waiters" : what === "streams" ? "streamReaders" : "watchers"].size;
  });
}

/** Waits (real time: the request is on its way through the app) until the lane holds `n` of them. */
async function untilHeld(stub: LaneFixture["stub"], what: Holding, n = 1): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await heldIn(stub, what)) >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  expect.fail(`the lane never held ${n} ${what}`);
}

/** Restarts the fixture's lane, the same clock from its new instance's start; the fixture's stub is the new one. */
async function restart(lane: LaneFixture): Promise<void> {
  lane.stub = await restartLane(lane.lane, lane.stub, lane.clock);
}

async function complete(lane: LaneFixture, claimed: { id: string; lease: { token: string } }, result: unknown): Promise<void> {
  const done = await post(`${lane.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token, result });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
}

describe("a held request across a reset of its lane", () => {
  it("GET …/jobs/{id}?waitMs= is asked again and answered 200 with the job settled after the restart", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const held = get(`${lane.base}/jobs/${claimed.id}?waitMs=20000`);
    await untilHeld(lane.stub, "reads");
    await restart(lane);
    await untilHeld(lane.stub, "reads");
    await complete(lane, claimed, { n: 7 });
    const answer = await held;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ id: claimed.id, state: "settled", outcome: "completed", result: { n: 7 } });
  });

  it("POST …/jobs?waitMs= keeps its enqueue's answer and waits on in the new instance", async () => {
    const lane = await setup();
    const held = post(`${lane.base}/jobs?waitMs=20000`, { kind: PULL_KIND, id: "w", payload: {} });
    await untilHeld(lane.stub, "reads");
    await restart(lane);
    await untilHeld(lane.stub, "reads");
    await complete(lane, await claimOne(lane), "done");
    const answer = await held;
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(answer.body.job).toMatchObject({ id: "w", state: "settled", outcome: "completed", result: "done" });
  });

  it("POST …/claims with waitMs is held again in the new instance and claims the job enqueued after the restart", async () => {
    const lane = await setup();
    const held = post(`${lane.base}/claims`, { kinds: [PULL_KIND], leaseMs: 30_000, waitMs: 20_000 });
    await untilHeld(lane.stub, "claims");
    await restart(lane);
    await untilHeld(lane.stub, "claims");
    const job = await enqueue(lane, { id: "c" });
    const answer = await held;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
    expect((await get(`${lane.base}/jobs/c`)).body).toMatchObject({ state: "running", attempts: 1 });
  });

  it("GET …/jobs/{id}/stream keeps its connection and goes on after the restart: each event once, then end", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const response = await exports.default.fetch(request("GET", `${lane.base}/jobs/${claimed.id}/stream`));
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const chunk = await reader.read();
        if (chunk.done) return;
        text += decoder.decode(chunk.value, { stream: true });
      }
    };
    await readUntil("id: 2\n");
    await untilHeld(lane.stub, "streams");
    await restart(lane);
    await untilHeld(lane.stub, "streams");
    expect((await post(`${lane.base}/jobs/${claimed.id}/stream`, { token: claimed.lease.token, chunks: ["after the restart"] })).status).toBe(200);
    await complete(lane, claimed, { ok: true });
    await readUntil("event: end\n");
    text += decoder.decode();
    const blocks = text.split("\n\n").filter((b) => b !== "" && !b.startsWith(":"));
    const events = blocks.map((b) => Object.fromEntries(b.split("\n").map((line) => line.split(": ") as [string, string])));
    expect(events.map((e) => e.id ?? e.event)).toEqual(["1", "2", "3", "4", "end"]);
    expect(JSON.parse(events[2]!.data!).data).toBe("after the restart");
    expect(JSON.parse(events[4]!.data!).job).toMatchObject({ id: claimed.id, state: "settled", outcome: "completed" });
    await reader.cancel();
  });
});

describe("a held claim across a reset", () => {
  it("on a sharded lane, watches the restarted shard again and claims the job enqueued there after the restart", async () => {
    const lane = await setupSharded(2);
    const held = post(`${lane.base}/claims`, { kinds: [PULL_KIND], leaseMs: 30_000, waitMs: 20_000 });
    await untilHeld(lane.shard(0), "watches");
    await untilHeld(lane.shard(1), "watches");
    await restartLane(shardObjectName(lane.lane, 1), lane.shard(1), lane.clock);
    await untilHeld(lane.shard(1), "watches");
    const id = keyOn(1, 2, "job");
    expect((await post(`${lane.base}/jobs`, { kind: PULL_KIND, id, payload: {} })).status).toBe(201);
    const answer = await held;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
  });

  it("whose answer is lost leaves its job leased until the lease runs out, then recovered: queued again, its attempt given back", async () => {
    const lane = await setup();
    const held = post(`${lane.base}/claims`, { kinds: [PULL_KIND], leaseMs: 1_000, waitMs: 20_000 });
    await untilHeld(lane.stub, "claims");
    await enqueue(lane, { id: "l" });
    expect((await held).body.jobs).toHaveLength(1); // an answer its consumer never reads
    await restart(lane);
    expect((await get(`${lane.base}/jobs/l`)).body).toMatchObject({ state: "running", attempts: 1 });
    lane.clock.advance(1_000);
    await fireAlarm(lane.stub);
    expect((await get(`${lane.base}/jobs/l`)).body).toMatchObject({ state: "queued", attempts: 0 });
    expect((await get(lane.base)).body.stats).toMatchObject({ recovered: 1, lost: 0 });
    expect(await claimOne(lane)).toMatchObject({ id: "l", attempts: 1 });
  });
});

describe("acrossResets", () => {
  /** A real reset as the runtime throws it to the caller of a held call: the object aborted under it. */
  async function resetError(): Promise<unknown> {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const held = lane.stub.awaitJob(claimed.id, 10_000).then(() => expect.fail("answered"), (error: unknown) => error);
    await untilHeld(lane.stub, "reads");
    await restartLane(lane.lane, lane.stub, lane.clock);
    return held;
  }

  /** Counts the calls of `answers` (each throws its error or gives its value) made through acrossResets. */
  async function through(answers: unknown[], signal?: AbortSignal): Promise<{ calls: number; outcome: unknown }> {
    let calls = 0;
    const call = async () => {
      const next = answers[Math.min(calls++, answers.length - 1)];
      if (next instanceof Error) throw next;
      return next;
    };
    const outcome = await acrossResets(call, signal).catch((error: unknown) => error);
    return { calls, outcome };
  }

  it("tries a reset again, a bounded number of times in a row, and nothing else", async () => {
    const reset = (await resetError()) as Error;
    expect(isLaneReset(reset)).toBe(true);
    expect(await through([reset, reset, "answered"])).toEqual({ calls: 3, outcome: "answered" });
    expect(await through([reset])).toEqual({ calls: MAX_RESET_RETRIES + 1, outcome: reset });
    const retryable = Object.assign(new Error("the runtime says retry"), { retryable: true });
    expect(await through([retryable, "answered"])).toEqual({ calls: 2, outcome: "answered" });
    const overloaded = Object.assign(new Error("overloaded"), { retryable: true, overloaded: true });
    expect(await through([overloaded, "answered"])).toEqual({ calls: 1, outcome: overloaded });
    const plain = new Error("a bug");
    expect(await through([plain, "answered"])).toEqual({ calls: 1, outcome: plain });
    const gone = new AbortController();
    gone.abort();
    expect(await through([reset, "answered"], gone.signal)).toEqual({ calls: 1, outcome: reset });
  });
});
