/**
 * Trace context on enqueue (docs/api.md "The job", "Enqueue"): the `traceparent` header is stored on
 * the job (every job of a batch), shown wherever the job is, handed to in-process executors, and
 * carried by the lane's transition lines as `traceId`. Not part of the job's spec.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { unwrap } from "../../src/shared/errors.js";
import { ManualClock } from "../../src/shared/clock.js";
import { transitions, waitForTransition } from "../helpers/executors.js";
import { expectError, get, post, PULL_KIND, setup, T0 } from "../helpers/http.js";
import { inject } from "../helpers/lane.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

const traced = (traceparent: string) => ({ headers: { traceparent } });

describe("the traceparent header", () => {
  it("is stored on the job and shown on its enqueue, read, list and claim", async () => {
    const lane = await setup();
    const enqueued = await post(`${lane.base}/jobs`, { id: "t-1", kind: PULL_KIND }, traced(TRACEPARENT));
    expect(enqueued.status).toBe(201);
    expect(enqueued.body.job.traceparent).toBe(TRACEPARENT);
    expect((await get(`${lane.base}/jobs/t-1`)).body.traceparent).toBe(TRACEPARENT);
    expect((await get(`${lane.base}/jobs`)).body.jobs.map((j: any) => j.traceparent)).toEqual([TRACEPARENT]);
    const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
    expect(claimed.body.jobs.map((j: any) => [j.id, j.traceparent])).toEqual([["t-1", TRACEPARENT]]);
  });

  it("is null on a job enqueued without it", async () => {
    const lane = await setup();
    const enqueued = await post(`${lane.base}/jobs`, { id: "plain", kind: PULL_KIND });
    expect(enqueued.body.job.traceparent).toBeNull();
    expect((await get(`${lane.base}/jobs/plain`)).body.traceparent).toBeNull();
  });

  it("refuses a malformed header with 400 invalid_request naming traceparent, and enqueues nothing (one job or a batch)", async () => {
    const lane = await setup();
    const malformed = [
      TRACEPARENT.toUpperCase(), // upper-case hex
      `ff-${TRACE_ID}-00f067aa0ba902b7-01`, // version ff is invalid
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`, // all-zero trace id
      `00-${TRACE_ID}-${"0".repeat(16)}-01`, // all-zero parent id
      `${TRACEPARENT}-extra`, // version 00 is exactly 55 characters
      TRACEPARENT.slice(0, 54), // too short
      `00_${TRACE_ID}_00f067aa0ba902b7_01`, // not dashes
      `00-${TRACE_ID.slice(0, 31)}g-00f067aa0ba902b7-01`, // not hex
      `01-${TRACE_ID}-00f067aa0ba902b7-01x`, // a later version: the 56th character must be a dash
      "",
    ];
    for (const traceparent of malformed) {
      const one = expectError(await post(`${lane.base}/jobs`, { kind: PULL_KIND }, traced(traceparent)), 400, "invalid_request");
      expect(one.details, traceparent).toEqual([expect.objectContaining({ path: ["traceparent"] })]);
      const batch = expectError(await post(`${lane.base}/jobs/batch`, { jobs: [{ kind: PULL_KIND }] }, traced(traceparent)), 400, "invalid_request");
      expect(batch.details, traceparent).toEqual([expect.objectContaining({ path: ["traceparent"] })]);
    }
    expect((await get(`${lane.base}/jobs`)).body.jobs).toEqual([]);
    expect((await get(lane.base)).body.stats.enqueued).toBe(0);
  });

  it("keeps the first 55 characters of a later version", async () => {
    const lane = await setup();
    const later = `cc-${TRACE_ID}-00f067aa0ba902b7-09-what-comes-next`;
    const enqueued = await post(`${lane.base}/jobs`, { kind: PULL_KIND }, traced(later));
    expect(enqueued.status).toBe(201);
    expect(enqueued.body.job.traceparent).toBe(later.slice(0, 55));
  });

  it("is not part of the spec: a duplicate with another traceparent (or none) is a duplicate, and the stored one stays", async () => {
    const lane = await setup();
    await post(`${lane.base}/jobs`, { id: "d-1", kind: PULL_KIND, payload: { a: 1 } }, traced(TRACEPARENT));
    for (const options of [traced(OTHER), {}]) {
      const again = await post(`${lane.base}/jobs`, { id: "d-1", kind: PULL_KIND, payload: { a: 1 } }, options);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: "duplicate", job: { id: "d-1", traceparent: TRACEPARENT } });
    }
    const batch = await post(`${lane.base}/jobs/batch`, { jobs: [{ id: "d-1", kind: PULL_KIND, payload: { a: 1 } }, { id: "d-2", kind: PULL_KIND }] }, traced(OTHER));
    expect(batch.body.results).toEqual([
      { id: "d-1", status: "duplicate" },
      { id: "d-2", status: "queued" },
    ]);
    expect((await get(`${lane.base}/jobs/d-1`)).body.traceparent).toBe(TRACEPARENT);
    expect((await get(`${lane.base}/jobs/d-2`)).body.traceparent).toBe(OTHER);
  });

  it("is stored on every job of a batch", async () => {
    const lane = await setup();
    const jobs = [{ id: "b-1", kind: PULL_KIND }, { id: "b-2", kind: PULL_KIND, delayMs: 5 }, { id: "b-3", kind: PULL_KIND, debounce: { key: "k", delayMs: 10 } }];
    const batch = await post(`${lane.base}/jobs/batch`, { jobs }, traced(TRACEPARENT));
    expect(batch.status).toBe(200);
    expect((await get(`${lane.base}/jobs`)).body.jobs.map((j: any) => [j.id, j.traceparent])).toEqual([
      ["b-1", TRACEPARENT],
      ["b-2", TRACEPARENT],
      ["b-3", TRACEPARENT],
    ]);
  });

  it("goes with a debounced replacement: the job takes the latest request's trace context", async () => {
    const lane = await setup();
    const job = { id: "deb", kind: PULL_KIND, debounce: { key: "k", delayMs: 1_000 } };
    await post(`${lane.base}/jobs`, job, traced(TRACEPARENT));
    const replaced = await post(`${lane.base}/jobs`, { ...job, id: "deb-2", payload: 2 }, traced(OTHER));
    expect(replaced.body).toMatchObject({ status: "debounced", job: { id: "deb", payload: 2, traceparent: OTHER } });
  });

  it("is a header, not a body field: a body that has one is refused", async () => {
    const lane = await setup();
    const answer = expectError(await post(`${lane.base}/jobs`, { kind: PULL_KIND, traceparent: TRACEPARENT }), 400, "invalid_request");
    expect(JSON.stringify(answer.details)).toContain("traceparent");
    expect((await get(`${lane.base}/jobs`)).body.jobs).toEqual([]);
  });

  it("is handed to an in-process executor as ctx.traceparent (and ctx.job.traceparent); null without one", async () => {
    const lane = await setup();
    const withTrace = await post(`${lane.base}/jobs`, { id: "x-1", kind: "test.trace" }, traced(TRACEPARENT));
    const without = await post(`${lane.base}/jobs`, { id: "x-2", kind: "test.trace" });
    expect([withTrace.status, without.status]).toEqual([201, 201]);
    await waitForTransition("x-1");
    await waitForTransition("x-2");
    expect((await get(`${lane.base}/jobs/x-1`)).body).toMatchObject({ outcome: "completed", result: { traceparent: TRACEPARENT, job: TRACEPARENT } });
    expect((await get(`${lane.base}/jobs/x-2`)).body).toMatchObject({ outcome: "completed", result: { traceparent: null, job: null } });
  });

  it("gives every transition of a traced in-process job its trace id, and none to an untraced one", async () => {
    const lane = await setup();
    await post(`${lane.base}/jobs`, { id: "tt-1", kind: "test.trace" }, traced(TRACEPARENT));
    await post(`${lane.base}/jobs/batch`, { jobs: [{ id: "tt-2", kind: "test.trace", delayMs: 10 }] }, traced(TRACEPARENT));
    await post(`${lane.base}/jobs`, { id: "tt-3", kind: "test.trace" });
    lane.clock.advance(10);
    await runDurableObjectAlarm(lane.stub);
    for (const id of ["tt-1", "tt-2", "tt-3"]) await waitForTransition(id);
    for (const id of ["tt-1", "tt-2"]) {
      const told = transitions(id);
      expect(told.map((e) => e.to)).toEqual(["queued", "running", "settled"]);
      expect(told.map((e) => e.traceId)).toEqual([TRACE_ID, TRACE_ID, TRACE_ID]);
    }
    expect(transitions("tt-3").map((e) => e.traceId)).toEqual([undefined, undefined, undefined]);
  });
});

describe("the transition log line", () => {
  it("carries the job's trace id, on every transition of a traced job (a pull job through claim, fail, its retry and a batch ack)", async () => {
    const stub = env.PLAIN_LANE.getByName(`trace-log-${crypto.randomUUID()}`);
    const clock = new ManualClock(T0);
    await inject(stub, clock);
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      unwrap(await stub.enqueue({ id: "traced", kind: PULL_KIND, maxAttempts: 2, backoff: { baseMs: 1, maxMs: 1 }, traceparent: TRACEPARENT }));
      unwrap(await stub.enqueue({ id: "untraced", kind: PULL_KIND }));
      const first = unwrap(await stub.claim({ kinds: [PULL_KIND], max: 2 })).jobs;
      expect(first.map((j) => [j.id, j.traceparent])).toEqual([
        ["traced", TRACEPARENT],
        ["untraced", null],
      ]);
      const traced = first[0]!;
      unwrap(await stub.fail("traced", { token: traced.lease.token, error: "once" }));
      clock.advance(1_000);
      const again = unwrap(await stub.claim({ kinds: [PULL_KIND] })).jobs[0]!;
      unwrap(await stub.acks({ acks: [{ op: "complete", id: "traced", token: again.lease.token }] }));
      unwrap(await stub.complete("untraced", { token: first[1]!.lease.token }));
      await runInDurableObject(stub, (_l, state) => state.storage.sync());
    } finally {
      spy.mockRestore();
    }
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.event === "job.transition");
    const of = (id: string) => records.filter((r) => r.jobId === id);
    expect(of("traced").map((r) => [r.from, r.to, r.traceId])).toEqual([
      [null, "queued", TRACE_ID],
      ["queued", "running", TRACE_ID],
      ["running", "queued", TRACE_ID],
      ["queued", "running", TRACE_ID],
      ["running", "settled", TRACE_ID],
    ]);
    expect(of("untraced").map((r) => [r.to, "traceId" in r])).toEqual([
      ["queued", false],
      ["running", false],
      ["settled", false],
    ]);
  });
});

describe("the OpenAPI document", () => {
  it("names the traceparent header on enqueue and batch enqueue, and the Job's traceparent", async () => {
    const doc = (await get("/openapi.json", { token: null })).body;
    for (const path of ["/v1/lanes/{lane}/jobs", "/v1/lanes/{lane}/jobs/batch"]) {
      expect(doc.paths[path].post.parameters, path).toContainEqual(expect.objectContaining({ name: "traceparent", in: "header", required: false }));
    }
    expect(doc.components.schemas.Job.properties.traceparent).toMatchObject({ type: ["string", "null"] });
    expect(doc.components.schemas.Job.required).toContain("traceparent");
  });
});
