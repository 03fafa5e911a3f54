/**
 * The clients' `wait` and `enqueueAndWait` (docs/api.md "Results", "Clients"): the HTTP client against
 * the worker's own app, the RPC client against the real lanes (one object and 4 shards).
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import type { LaneClient } from "../../src/client/types.js";
import { QueueError } from "../../src/shared/errors.js";
import { claimOne, PULL_KIND, setup, TOKEN } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

/** The HTTP client, talking to the worker's own fetch; `seen` records each request's URL. */
function httpLane(name: string, seen: string[] = []): LaneClient {
  const fetcher = (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    seen.push(request.method + " " + new URL(request.url).search);
    return exports.default.fetch(request);
  };
  return createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: fetcher }).lane(name);
}

const rpcLane = (name: string): LaneClient => createLaneClient(env.LANE).lane(name);

describe.each([
  ["the HTTP client", httpLane],
  ["the RPC client", rpcLane],
])("%s", (_name, client) => {
  it("enqueueAndWait answers the enqueue's status with the job once settled", async () => {
    const { lane: name } = await setup();
    const lane = client(name);
    const answer = await lane.enqueueAndWait({ id: "e", kind: "demo.echo", payload: { x: 1 } }, { timeoutMs: 20_000 });
    expect(answer).toMatchObject({ status: "queued", job: { id: "e", state: "settled", outcome: "completed", result: { x: 1 } } });
    const again = await lane.enqueueAndWait({ id: "e", kind: "demo.echo", payload: { x: 1 } }, { timeoutMs: 20_000 });
    expect(again).toMatchObject({ status: "duplicate", job: { state: "settled" } });
  });

  it("wait answers the job once settled", async () => {
    const fixture = await setup();
    const lane = client(fixture.lane);
    await lane.enqueue({ id: "a", kind: PULL_KIND });
    const state = { answered: false };
    const waited = lane.wait("a", { timeoutMs: 20_000 }).finally(() => (state.answered = true));
    const claimed = await claimOne(fixture);
    await lane.get("a");
    expect(state.answered).toBe(false);
    await lane.complete("a", { token: claimed.lease.token, result: { done: true } });
    expect(await waited).toMatchObject({ id: "a", state: "settled", outcome: "completed", result: { done: true } });
  });

  it("wait answers the unsettled job once timeoutMs has passed (no error)", async () => {
    const { lane: name } = await setup();
    const lane = client(name);
    await lane.enqueue({ id: "a", kind: PULL_KIND });
    const started = Date.now();
    expect(await lane.wait("a", { timeoutMs: 150 })).toMatchObject({ id: "a", state: "queued" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(await lane.enqueueAndWait({ id: "b", kind: PULL_KIND }, { timeoutMs: 0 })).toMatchObject({ status: "queued", job: { state: "queued" } });
  });

  it("throws job_not_found for an unknown job, and an enqueue's refusal at once", async () => {
    const { lane: name } = await setup();
    const lane = client(name);
    await expect(lane.wait("nope", { timeoutMs: 20_000 })).rejects.toSatisfy((e) => e instanceof QueueError && e.code === "job_not_found");
    await lane.enqueue({ id: "a", kind: PULL_KIND });
    await expect(lane.enqueueAndWait({ id: "a", kind: PULL_KIND, payload: 2 }, { timeoutMs: 20_000 })).rejects.toSatisfy((e) => e instanceof QueueError && e.code === "job_conflict");
    await expect(lane.wait("a", { timeoutMs: -1 })).rejects.toSatisfy((e) => e instanceof QueueError && e.code === "invalid_request");
  });
});

describe("the HTTP client's waits", () => {
  it("ask at most 30000 ms per request, again until timeoutMs", async () => {
    const { lane: name } = await setup();
    const seen: string[] = [];
    const lane = httpLane(name, seen);
    await lane.enqueue({ id: "a", kind: PULL_KIND });
    seen.length = 0;
    expect(await lane.wait("a", { timeoutMs: 120 })).toMatchObject({ state: "queued" });
    expect(seen).toEqual([expect.stringMatching(/^GET \?waitMs=1[0-2][0-9]$/)]);
    seen.length = 0;
    expect(await lane.enqueueAndWait({ id: "b", kind: "demo.echo" }, { timeoutMs: 45_000 })).toMatchObject({ job: { state: "settled" } });
    expect(seen).toEqual(["POST ?waitMs=30000"]);
  });
});

describe("the RPC client's waits on a lane of 4 shards", () => {
  it("wait on a job that lives on its queue's shard, and enqueueAndWait on each shard", async () => {
    const fixture = await setupSharded(4);
    const lane = rpcLane(fixture.lane);
    const ids = [0, 1, 2, 3].map((s) => keyOn(s, 4, "w"));
    const answers = await Promise.all(ids.map((id) => lane.enqueueAndWait({ id, kind: "demo.echo", payload: id }, { timeoutMs: 20_000 })));
    expect(answers.map((a) => [a.status, a.job.id, a.job.state, a.job.result])).toEqual(ids.map((id) => ["queued", id, "settled", id]));
    await lane.enqueue({ id: "q-job", kind: PULL_KIND, queue: keyOn(2, 4, "q") });
    const waited = lane.wait("q-job", { timeoutMs: 20_000 });
    const [claimed] = (await lane.claim({ kinds: [PULL_KIND] })).jobs;
    await lane.complete("q-job", { token: claimed!.lease.token });
    expect(await waited).toMatchObject({ id: "q-job", state: "settled", outcome: "completed" });
  });
});
