import { env, exports } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import { flow } from "../../src/client/flow.js";
import { QueueError } from "../../src/shared/errors.js";
import { PULL_KIND, setup, T0, TOKEN } from "../helpers/http.js";
import { requestFields, traceparents } from "../helpers/enqueue-requests.js";
import { inject, row } from "../helpers/lane.js";

/** The HTTP client, talking to the worker's own fetch. */
const http = (token = TOKEN) =>
  createHttpClient({ baseUrl: "http://switchyard.test", token, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });

async function refusal(promise: Promise<unknown>): Promise<QueueError> {
  const error = await promise.then(
    () => expect.fail("expected a refusal"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(QueueError);
  return error as QueueError;
}

describe("the RPC client", () => {
  it("enqueues, reads, lists and cancels without HTTP", async () => {
    const { lane: name } = await setup();
    const lane = createLaneClient(env.LANE).lane(name);
    const queued = await lane.enqueue({ id: "r-1", kind: PULL_KIND, payload: { to: "a@b.c" } });
    expect(queued).toMatchObject({ status: "queued", job: { id: "r-1", createdAt: T0 } });
    expect((await lane.enqueue({ id: "r-1", kind: PULL_KIND, payload: { to: "a@b.c" } })).status).toBe("duplicate");
    expect((await lane.get("r-1")).payload).toEqual({ to: "a@b.c" });
    expect((await lane.list({ state: "queued" })).jobs.map((j) => j.id)).toEqual(["r-1"]);
    expect((await lane.cancel("r-1")).status).toBe("cancelled");
    expect((await lane.info()).counts.cancelled).toBe(1);
  });

  it("throws a lane's refusal as a QueueError with its code", async () => {
    const { lane: name } = await setup();
    const lane = createLaneClient(env.LANE).lane(name);
    expect((await refusal(lane.get("missing"))).code).toBe("job_not_found");
    expect((await refusal(lane.enqueue({ kind: "bad kind" }))).code).toBe("invalid_request");
  });

  it("answers a new job through JSON text by its id and creation time, a duplicate and a refusal whole", async () => {
    const { lane: name, clock } = await setup();
    const lane = createLaneClient(env.LANE).lane(name);
    const stub = env.LANE.getByName(name);
    const job = { id: "same", kind: PULL_KIND, payload: { nested: [1, "two", null, { three: true }] }, queue: "q", priority: 3, delayMs: 500 };
    const first = JSON.parse(await stub.enqueueText(JSON.stringify(job)));
    expect(first).toEqual({ ok: true, value: { status: "queued", id: "same", createdAt: T0 } });
    clock.advance(7);
    const duplicate = await lane.enqueue(job);
    expect({ ok: true, value: duplicate }).toEqual(await stub.enqueue(job));
    expect(duplicate.status).toBe("duplicate");
    const conflict = await refusal(lane.enqueue({ ...job, priority: 4 }));
    expect(conflict.code).toBe("job_conflict");
    const refused = await stub.enqueue({ ...job, priority: 4 });
    expect(refused.ok).toBe(false);
    expect(conflict.message).toBe(refused.ok ? "" : refused.error.message);
    expect((await lane.list({})).jobs).toHaveLength(1);
  });

  it("reads the clock once per enqueue: a job due now is due when it was created, whichever way it came", async () => {
    const { lane: name, stub } = await setup();
    let t = T0;
    await inject(stub, { now: () => t++ }); // every reading moves time on
    const lane = createLaneClient(env.LANE).lane(name);
    const jobs = [
      (await lane.enqueue({ kind: PULL_KIND })).job,
      (await lane.enqueue({ kind: PULL_KIND, delayMs: 500 })).job,
      (await lane.enqueue({ kind: "demo.echo" })).job, // started in its enqueue's turn
      ...(await Promise.all((await lane.enqueueBatch({ jobs: [{ kind: PULL_KIND }, { kind: PULL_KIND, delayMs: 9 }] })).results.map((r) => lane.get(r.id)))),
    ];
    expect(jobs.map((job) => job.runAt - job.createdAt)).toEqual([0, 500, 0, 0, 9]);
    for (const job of jobs.slice(0, 2)) expect(await lane.get(job.id)).toEqual(job);
    // The job started in its enqueue's turn was claimed, and leased, at the same reading.
    const started = jobs[2]!;
    const stored = await row(stub, started.id);
    expect(stored).toMatchObject({ created_at: started.createdAt, claimed_at: started.createdAt, lease_holder: "lane" });
  });

  // The client builds a new job from its request and the lane's id and creation time (shared/enqueue-text.ts): it
  // must be the job the lane's object answer gives, for any request the lane accepts. Each request
  // goes to two fresh lanes at the same time: through the client into one, as an object into the other.
  it("answers a new job, built from the request, as the lane's own enqueue answers it", async () => {
    // demo.echo runs in the lane: started in its enqueue's turn.
    const request = fc
      .record({ kind: fc.constantFrom(PULL_KIND, "demo.echo"), ...requestFields }, { requiredKeys: ["kind"] })
      .filter((r) => r.runAt === undefined || r.delayMs === undefined);
    const traceparent = fc.option(traceparents, { nil: undefined });
    await fc.assert(
      // As plain JSON objects: the object side crosses RPC by structured clone, which refuses fast-check's null-prototype records.
      fc.asyncProperty(request.map((r) => JSON.parse(JSON.stringify(r)) as typeof r), traceparent, async (job, trace) => {
        const [a, b] = [await setup(), await setup()];
        const answer = await createLaneClient(env.LANE).lane(a.lane).enqueue(job, trace === undefined ? {} : { traceparent: trace });
        expect(answer.job.traceparent).toBe(trace === undefined ? null : trace.slice(0, 55));
        const direct = await b.stub.enqueue({ ...job, id: answer.job.id, ...(trace === undefined ? {} : { traceparent: trace }) });
        expect(direct.ok).toBe(true);
        expect(answer).toEqual(direct.ok ? { ...direct.value, job: { ...direct.value.job, lane: a.lane } } : null);
        if (job.kind === PULL_KIND) expect(answer.job).toEqual(await a.stub.getJob(answer.job.id).then((got) => (got.ok ? got.value : null)));
      }),
      { numRuns: 40 },
    );
  });

  it("refuses text that is not an enqueue request, and sends what JSON cannot carry as it is", async () => {
    const { lane: name } = await setup();
    const lane = createLaneClient(env.LANE).lane(name);
    const stub = env.LANE.getByName(name);
    for (const text of ["{not json", "", "null", "[1]", `{"kind":"bad kind"}`]) {
      const answer = JSON.parse(await stub.enqueueText(text));
      expect(answer).toMatchObject({ ok: false, error: { code: "invalid_request" } });
    }
    // A BigInt has no JSON: the request goes as an object, and the lane refuses its payload.
    expect((await refusal(lane.enqueue({ kind: PULL_KIND, payload: { n: 1n } }))).code).toBe("invalid_request");
    // A Date is JSON as its ISO string, whichever way the request goes.
    const at = new Date(T0);
    expect((await lane.enqueue({ kind: PULL_KIND, payload: { at } })).job.payload).toEqual({ at: at.toISOString() });
    expect((await lane.list({})).jobs).toHaveLength(1);
  });

  it("refuses a lane name that breaks the pattern before reaching any lane", () => {
    expect(() => createLaneClient(env.LANE).lane("../etc")).toThrow(QueueError);
  });
});

describe("the HTTP client", () => {
  it("posts a job and reads it back", async () => {
    const { lane: name } = await setup();
    const lane = http().lane(name);
    const { status, job } = await lane.enqueue({ kind: PULL_KIND, payload: { to: "a@b.c" } });
    expect(status).toBe("queued");
    expect(await lane.get(job.id)).toEqual(job);
    expect((await lane.enqueueBatch({ jobs: [{ id: job.id, kind: PULL_KIND, payload: { to: "a@b.c" } }] })).results).toEqual([
      { id: job.id, status: "duplicate" },
    ]);
  });

  it("runs a pull consumer loop: claim, renew, complete, fail, release", async () => {
    const { lane: name, clock } = await setup();
    const lane = http().lane(name);
    await lane.enqueueBatch({ jobs: [{ id: "a", kind: PULL_KIND }, { id: "b", kind: PULL_KIND }, { id: "c", kind: PULL_KIND }] });
    const outcomes: string[] = [];
    for (;;) {
      const { jobs } = await lane.claim({ kinds: [PULL_KIND], max: 1, leaseMs: 10_000 });
      const job = jobs[0];
      if (!job) break;
      const { lease } = await lane.renew(job.id, { token: job.lease.token, leaseMs: 20_000 });
      if (job.id === "a") outcomes.push((await lane.complete(job.id, { token: lease.token, result: { ok: 1 } })).job.outcome ?? "");
      if (job.id === "b") outcomes.push((await lane.fail(job.id, { token: lease.token, error: "no", retry: false })).job.outcome ?? "");
      if (job.id === "c") {
        const released = await lane.release(job.id, { token: lease.token });
        outcomes.push(released.job.state);
        await lane.cancel(job.id);
      }
      clock.advance(1);
    }
    expect(outcomes).toEqual(["completed", "failed", "queued"]);
    expect((await lane.info()).counts).toMatchObject({ completed: 1, failed: 1, cancelled: 1 });
  });

  it("covers the admin routes: configure, list, requeue, sweep, the list of lanes", async () => {
    const { lane: name } = await setup();
    const client = http();
    const lane = client.lane(name);
    expect(await lane.configure({ concurrency: 2 })).toMatchObject({ concurrency: 2 });
    await lane.enqueue({ id: "x", kind: PULL_KIND });
    await lane.cancel("x");
    expect((await lane.requeue("x")).job.state).toBe("queued");
    expect((await lane.list({ limit: 1 })).jobs).toHaveLength(1);
    expect(await lane.sweep({ settledBefore: T0 })).toEqual({ removed: 0, waitpointsRemoved: 0 });
    const page = await client.lanes({ cursor: name.slice(0, -1), limit: 500 });
    expect(page.lanes.map((l) => l.lane)).toContain(name);
  });

  it("throws API errors as QueueError with code and details", async () => {
    const { lane: name } = await setup();
    const error = await refusal(http().lane(name).enqueue({ kind: "bad kind" }));
    expect(error.code).toBe("invalid_request");
    expect(error.details).toEqual([{ path: ["kind"], message: expect.any(String) }]);
    expect((await refusal(http("wrong").lane(name).info())).code).toBe("unauthorized");
  });
});

describe("flow()", () => {
  it("enqueues children in their lanes and the parent with them, in one batch per lane; blocked until they settle; idempotent", async () => {
    const [{ lane: parentLane }, { lane: other }] = [await setup(), await setup()];
    for (const [tag, client] of [["rpc", createLaneClient(env.LANE)], ["http", http()]] as const) {
      const request = {
        lane: parentLane,
        parent: { id: `stitch-${tag}`, kind: PULL_KIND },
        children: [
          { id: "page-1", kind: PULL_KIND, payload: { page: 1 } },
          { lane: other, id: "page-2", kind: PULL_KIND, payload: { page: 2 } },
        ],
      };
      const answer = await flow(client, request);
      expect(answer.children.map((c) => [c.lane, c.id])).toEqual([[parentLane, "page-1"], [other, "page-2"]]);
      const parent = await client.lane(parentLane).get(answer.parent.id);
      expect(parent).toMatchObject({ state: "blocked", dependsOn: [{ lane: parentLane, id: "page-1" }, { lane: other, id: "page-2" }] });
      const again = await flow(client, request);
      expect(again.parent.status).toBe("duplicate");
      expect(again.children.every((c) => c.status === "duplicate")).toBe(true);
      expect((await client.lane(other).dependents("page-2")).dependents.map((d) => d.id)).toContain(answer.parent.id);
    }
    await expect(flow(http(), { lane: parentLane, parent: { kind: PULL_KIND }, children: [] })).rejects.toMatchObject({ code: "invalid_request" });
  });
});
