/**
 * The clients' waitpoints (docs/api.md "Waitpoints"): create, read, complete and list, and a job that
 * waits on one through `dependsOn`. The HTTP client against the worker's own app, the RPC client
 * against the real lanes; each on a lane of one object and of 4 shards.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import type { LaneClient } from "../../src/client/types.js";
import { QueueError } from "../../src/shared/errors.js";
import { settledWaitpoint } from "../../src/client/waitpoint-errors.js";
import { shardObjectName, shardOf } from "../../src/shared/shards.js";
import { PULL_KIND, T0, TOKEN } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

const httpLane = (name: string): LaneClient =>
  createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) }).lane(name);

const rpcLane = (name: string): LaneClient => createLaneClient(env.LANE).lane(name);

/** The refusal `promise` ends in, as a `QueueError`. */
async function refusal(promise: Promise<unknown>): Promise<QueueError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(QueueError);
  return error as QueueError;
}

describe.each([
  ["the HTTP client", 1, httpLane],
  ["the HTTP client", 4, httpLane],
  ["the RPC client", 1, rpcLane],
  ["the RPC client", 4, rpcLane],
] as const)("%s, a lane of %i shard(s)", (client, shards, lane) => {
  const fresh = async () => {
    const fixture = await setupSharded(shards);
    return { fixture, lane: lane(fixture.lane), id: (target: number, prefix: string) => keyOn(target % shards, shards, prefix) };
  };

  it("createWaitpoint is idempotent by id: the second answers the waitpoint as it is, its timeoutMs ignored", async () => {
    const { fixture, lane: waitpoints, id } = await fresh();
    const w = id(1, "order.paid");
    const first = await waitpoints.createWaitpoint({ id: w, timeoutMs: 60_000 });
    expect(first).toMatchObject({ created: true, waitpoint: { id: w, lane: fixture.lane, state: "pending", result: null, timeoutAt: T0 + 60_000, createdAt: T0, settledAt: null, waiters: 0 } });
    // Signed URLs take the API's secret, which only the front worker holds.
    if (client === "the HTTP client") expect(first.callbackUrl).toMatch(new RegExp(`^http://switchyard\\.test/v1/callbacks/${fixture.lane}/waitpoints/${w}/[A-Za-z0-9_-]{43}$`));
    else expect(first).not.toHaveProperty("callbackUrl");
    const again = await waitpoints.createWaitpoint({ id: w, timeoutMs: 5 });
    expect(again).toMatchObject({ created: false, waitpoint: first.waitpoint });
    if (shards > 1) {
      const home = await env.LANE.getByName(shardObjectName(fixture.lane, shardOf(w, shards))).getWaitpoint(w);
      expect(home).toMatchObject({ ok: true, value: { id: w } });
    }
    const unnamed = await waitpoints.createWaitpoint();
    expect(unnamed.created).toBe(true);
    expect(unnamed.waitpoint.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(unnamed.waitpoint.timeoutAt).toBeNull();
    expect(await waitpoints.getWaitpoint(unnamed.waitpoint.id)).toEqual({ waitpoint: unnamed.waitpoint });
    expect((await refusal(waitpoints.createWaitpoint({ id: "bad id" }))).code).toBe("invalid_request");
    expect((await refusal(waitpoints.createWaitpoint({ timeoutMs: 0 }))).code).toBe("invalid_request");
  });

  it("completeWaitpoint: the first settlement wins, a second is refused waitpoint_settled with the waitpoint as it is", async () => {
    const { lane: waitpoints, id } = await fresh();
    const w = id(2, "approval");
    await waitpoints.createWaitpoint({ id: w });
    const done = await waitpoints.completeWaitpoint(w, { result: { approved: true } });
    expect(done).toEqual({ created: false, waitpoint: expect.objectContaining({ id: w, state: "completed", result: { approved: true }, settledAt: T0 }) });
    const second = await refusal(waitpoints.completeWaitpoint(w, { result: { approved: false } }));
    expect(second.code).toBe("waitpoint_settled");
    expect(second.details).toEqual({ waitpoint: done.waitpoint });
    expect(settledWaitpoint(second)).toEqual(done.waitpoint);
    expect(await waitpoints.getWaitpoint(w)).toEqual({ waitpoint: done.waitpoint });
    // A signal before anyone waits is kept: the unknown id is created completed (no body: result null).
    const early = id(3, "early");
    expect(await waitpoints.completeWaitpoint(early)).toMatchObject({ created: true, waitpoint: { id: early, state: "completed", result: null, timeoutAt: null } });
    const missing = await refusal(waitpoints.getWaitpoint(id(0, "nope")));
    expect(missing.code).toBe("waitpoint_not_found");
    expect(settledWaitpoint(missing)).toBeNull();
    expect((await refusal(waitpoints.getWaitpoint("bad id"))).code).toBe("invalid_request");
  });

  it("listWaitpoints lists a state's waitpoints in id order, a page at a time, and by prefix", async () => {
    const { lane: waitpoints } = await fresh();
    const ids = ["a", "b", "c", "d"].map((p, i) => keyOn(i % shards, shards, `job-${p}`)).sort();
    for (const w of ids) await waitpoints.createWaitpoint({ id: w });
    await waitpoints.completeWaitpoint(ids[1]!, { result: 1 });
    const pending = await waitpoints.listWaitpoints({ state: "pending" });
    expect(pending.waitpoints.map((w) => w.id)).toEqual([ids[0], ids[2], ids[3]]);
    expect(pending.cursor).toBeNull();
    expect((await waitpoints.listWaitpoints({ state: "completed" })).waitpoints).toEqual([expect.objectContaining({ id: ids[1], result: 1 })]);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await waitpoints.listWaitpoints({ limit: 1, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.waitpoints.length).toBeLessThanOrEqual(1);
      seen.push(...page.waitpoints.map((w) => w.id));
      cursor = page.cursor ?? undefined;
    } while (cursor !== undefined);
    expect(seen).toEqual(ids);
    expect((await waitpoints.listWaitpoints({ prefix: ids[2]!.slice(0, "job-c".length) })).waitpoints.map((w) => w.id)).toEqual([ids[2]]);
    expect((await refusal(waitpoints.listWaitpoints({ limit: 0 }))).code).toBe("invalid_request");
    expect((await refusal(waitpoints.listWaitpoints({ cursor: "nope" }))).code).toBe("invalid_request");
  });

  it("a job enqueued with dependsOn a waitpoint is released when the waitpoint is completed, and wait answers it settled", async () => {
    const { fixture, lane: jobs, id } = await fresh();
    // One shard for both: a waitpoint of another shard is test/worker/shards-waitpoint-waiters.test.ts's.
    const w = id(1, "order-9.paid");
    const job = id(1, "order-9");
    await jobs.createWaitpoint({ id: w, timeoutMs: 60_000 });
    const queued = await jobs.enqueue({ id: job, kind: "demo.echo", payload: { order: 9 }, dependsOn: [{ waitpoint: w }] });
    expect(queued).toMatchObject({ status: "queued", job: { state: "blocked", dependsOn: [{ lane: fixture.lane, waitpoint: w }] } });
    expect((await jobs.getWaitpoint(w)).waitpoint.waiters).toBe(1);
    expect(await jobs.wait(job, { timeoutMs: 50 })).toMatchObject({ state: "blocked" });
    const waited = jobs.wait(job, { timeoutMs: 15_000 });
    await jobs.completeWaitpoint(w, { result: { paid: true } });
    expect(await waited).toMatchObject({ id: job, state: "settled", outcome: "completed", result: { order: 9 } });
    expect((await jobs.getWaitpoint(w)).waitpoint).toMatchObject({ state: "completed", result: { paid: true }, waiters: 0 });
  });

  it("waitOn ends a pull consumer's attempt in a wait (fenced): the job resumes with the waitpoint's completion", async () => {
    const { fixture, lane: consumer, id } = await fresh();
    const job = id(3, "invoice");
    const w = id(3, "invoice.approved");
    await consumer.enqueue({ id: job, kind: PULL_KIND });
    const [claimed] = (await consumer.claim({ kinds: [PULL_KIND] })).jobs;
    const waiting = await consumer.waitOn(job, { token: claimed!.lease.token, waitpoint: w, timeoutMs: 60_000 });
    expect(waiting).toEqual({
      job: expect.objectContaining({ id: job, state: "blocked", attempts: 0, lease: null }),
      waitpoint: expect.objectContaining({ id: w, state: "pending", timeoutAt: T0 + 60_000, waiters: 1 }),
    });
    expect((await refusal(consumer.waitOn(job, { token: claimed!.lease.token, waitpoint: w }))).code).toBe("lease_superseded");
    expect((await refusal(consumer.waitOn("nope", { token: claimed!.lease.token, waitpoint: w }))).code).toBe("job_not_found");
    await consumer.completeWaitpoint(w, { result: "ok" });
    const [resumed] = (await consumer.claim({ kinds: [PULL_KIND] })).jobs;
    expect(resumed).toMatchObject({ id: job, attempts: 1, dependencies: [{ lane: fixture.lane, waitpoint: w, outcome: "completed", result: "ok" }] });
  });
});
