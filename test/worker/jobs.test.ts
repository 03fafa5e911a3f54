import { describe, expect, it } from "vitest";
import { MAX_BATCH_JOBS } from "../../src/shared/defaults.js";
import { call, claimOne, completedJob, enqueue, expectError, get, post, PULL_KIND, setup, T0 } from "../helpers/http.js";

describe("enqueue", () => {
  it("answers 201 queued with the job", async () => {
    const lane = await setup();
    const answer = await post(`${lane.base}/jobs`, { id: "invoice-42", kind: PULL_KIND, payload: { to: "a@b.c" }, queue: "user-9", priority: 5, delayMs: 1000 });
    expect(answer.status).toBe(201);
    expect(answer.body.status).toBe("queued");
    expect(answer.body.job).toMatchObject({
      id: "invoice-42",
      lane: lane.lane,
      kind: PULL_KIND,
      payload: { to: "a@b.c" },
      queue: "user-9",
      priority: 5,
      runAt: T0 + 1000,
      state: "queued",
      outcome: null,
      attempts: 0,
      maxAttempts: 3,
      result: null,
      error: null,
      cancelRequested: false,
      lease: null,
      createdAt: T0,
      settledAt: null,
    });
  });

  it("generates an id when none is given", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    expect(job.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers 200 duplicate for the same id and spec, whatever the job's state", async () => {
    const lane = await setup();
    const spec = { id: "dup-1", kind: PULL_KIND, payload: { a: 1, b: [1, 2] } };
    await enqueue(lane, spec);
    await claimOne(lane);
    const again = await post(`${lane.base}/jobs`, { ...spec, payload: { b: [1, 2], a: 1 } });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("duplicate");
    expect(again.body.job.state).toBe("running");
  });

  it("answers 409 job_conflict for the same id with another spec, and changes nothing", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "c-1", payload: { v: 1 } });
    expectError(await post(`${lane.base}/jobs`, { id: "c-1", kind: PULL_KIND, payload: { v: 2 } }), 409, "job_conflict");
    expect((await get(`${lane.base}/jobs/c-1`)).body.payload).toEqual({ v: 1 });
  });
});

describe("batch enqueue", () => {
  it("answers every result in request order, queued or duplicate", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "b-2" });
    const answer = await post(`${lane.base}/jobs/batch`, {
      jobs: [{ id: "b-1", kind: PULL_KIND }, { id: "b-2", kind: PULL_KIND, payload: { n: 1 } }, { id: "b-3", kind: PULL_KIND }],
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      results: [
        { id: "b-1", status: "queued" },
        { id: "b-2", status: "duplicate" },
        { id: "b-3", status: "queued" },
      ],
    });
  });

  it("refuses an invalid item with 400 naming its index, and enqueues nothing", async () => {
    const lane = await setup();
    const answer = await post(`${lane.base}/jobs/batch`, { jobs: [{ id: "ok-1", kind: PULL_KIND }, { kind: "bad kind" }] });
    const error = expectError(answer, 400, "invalid_request");
    expect(error.details).toEqual([{ path: ["jobs", 1, "kind"], message: expect.any(String) }]);
    expectError(await get(`${lane.base}/jobs/ok-1`), 404, "job_not_found");
  });

  it("refuses a conflicting id with 409 naming the ids, and enqueues nothing", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "taken", payload: 1 });
    const answer = await post(`${lane.base}/jobs/batch`, { jobs: [{ id: "new-1", kind: PULL_KIND }, { id: "taken", kind: PULL_KIND, payload: 2 }] });
    expect(expectError(answer, 409, "job_conflict").details).toEqual({ ids: ["taken"] });
    expectError(await get(`${lane.base}/jobs/new-1`), 404, "job_not_found");
  });

  it("refuses more than 1000 jobs, and none at all", async () => {
    const lane = await setup();
    const jobs = Array.from({ length: MAX_BATCH_JOBS + 1 }, () => ({ kind: PULL_KIND }));
    expect(expectError(await post(`${lane.base}/jobs/batch`, { jobs }), 400, "invalid_request").details[0].path).toEqual(["jobs"]);
    expectError(await post(`${lane.base}/jobs/batch`, { jobs: [] }), 400, "invalid_request");
    expect((await get(lane.base)).body.counts.queued).toBe(0);
  });
});

describe("read and list", () => {
  it("reads a job by id", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    const answer = await get(`${lane.base}/jobs/${job.id}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(job);
  });

  it("answers 404 job_not_found for an unknown id", async () => {
    const lane = await setup();
    expectError(await get(`${lane.base}/jobs/nope`), 404, "job_not_found");
  });

  it("lists in enqueue order, page by page, until the cursor is null", async () => {
    const lane = await setup();
    for (const id of ["l-1", "l-2", "l-3"]) await enqueue(lane, { id });
    const first = await get(`${lane.base}/jobs?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.jobs.map((j: { id: string }) => j.id)).toEqual(["l-1", "l-2"]);
    expect(typeof first.body.cursor).toBe("string");
    const second = await get(`${lane.base}/jobs?limit=2&cursor=${encodeURIComponent(first.body.cursor)}`);
    expect(second.body).toEqual({ jobs: [expect.objectContaining({ id: "l-3" })], cursor: null });
  });

  it("filters by state, outcome, kind and queue", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "f-1", queue: "q1" });
    await enqueue(lane, { id: "f-2", kind: "sms.send" });
    await post(`${lane.base}/jobs/f-2/cancel`);
    const ids = async (query: string) => (await get(`${lane.base}/jobs?${query}`)).body.jobs.map((j: { id: string }) => j.id);
    expect(await ids("state=queued")).toEqual(["f-1"]);
    expect(await ids("state=settled&outcome=cancelled")).toEqual(["f-2"]);
    expect(await ids("kind=sms.send")).toEqual(["f-2"]);
    expect(await ids("queue=q1")).toEqual(["f-1"]);
  });

  it("refuses an unknown filter value, an out-of-range limit and a foreign cursor, naming each", async () => {
    const lane = await setup();
    const error = expectError(await get(`${lane.base}/jobs?state=sleeping&limit=501`), 400, "invalid_request");
    expect(error.details.map((d: { path: unknown[] }) => d.path)).toEqual([["state"], ["limit"]]);
    expect(expectError(await get(`${lane.base}/jobs?cursor=zzz`), 400, "invalid_request").details).toEqual([
      { path: ["cursor"], message: expect.any(String) },
    ]);
  });
});

describe("cancel", () => {
  it("settles a queued job cancelled at once (200), and again answers 200", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    const answer = await post(`${lane.base}/jobs/${job.id}/cancel`, { reason: "not needed" });
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe("cancelled");
    expect(answer.body.job).toMatchObject({ state: "settled", outcome: "cancelled", settledAt: T0 });
    const again = await post(`${lane.base}/jobs/${job.id}/cancel`);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("cancelled");
  });

  it("answers 202 cancelling for a running job", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    await claimOne(lane);
    const answer = await post(`${lane.base}/jobs/${job.id}/cancel`);
    expect(answer.status).toBe(202);
    expect(answer.body.status).toBe("cancelling");
    expect(answer.body.job).toMatchObject({ state: "running", cancelRequested: true });
  });

  it("accepts no body, or an empty one sent as JSON", async () => {
    const lane = await setup();
    const a = await enqueue(lane);
    const b = await enqueue(lane);
    expect((await call("POST", `${lane.base}/jobs/${a.id}/cancel`)).status).toBe(200);
    expect((await call("POST", `${lane.base}/jobs/${b.id}/cancel`, { raw: "", headers: { "content-type": "application/json" } })).status).toBe(200);
  });

  it("answers 409 job_settled for a completed job", async () => {
    const lane = await setup();
    const job = await completedJob(lane);
    expectError(await post(`${lane.base}/jobs/${job.id}/cancel`), 409, "job_settled");
  });

  it("answers 404 job_not_found for an unknown job", async () => {
    const lane = await setup();
    expectError(await post(`${lane.base}/jobs/nope/cancel`), 404, "job_not_found");
  });

  it("with onlyIfQueued, answers 409 job_running for a started job and leaves it running; cancels a queued one", async () => {
    const lane = await setup();
    const running = await enqueue(lane);
    await claimOne(lane);
    expectError(await post(`${lane.base}/jobs/${running.id}/cancel`, { onlyIfQueued: true }), 409, "job_running");
    expect((await get(`${lane.base}/jobs/${running.id}`)).body).toMatchObject({ state: "running", cancelRequested: false });
    const queued = await enqueue(lane);
    const answer = await post(`${lane.base}/jobs/${queued.id}/cancel`, { onlyIfQueued: true });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: "cancelled", job: { state: "settled", outcome: "cancelled" } });
    expectError(await post(`${lane.base}/jobs/${queued.id}/cancel`, { onlyIfQueued: "yes" }), 400, "invalid_request");
  });
});

describe("requeue", () => {
  it("queues a failed job again with a fresh attempt budget; generation keeps growing", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    const claimed = await claimOne(lane);
    await post(`${lane.base}/jobs/${job.id}/fail`, { token: claimed.lease.token, error: "boom", retry: false });
    lane.clock.advance(5_000);
    const answer = await post(`${lane.base}/jobs/${job.id}/requeue`);
    expect(answer.status).toBe(200);
    expect(answer.body.job).toMatchObject({ state: "queued", outcome: null, attempts: 0, generation: 1, runAt: T0 + 5_000 });
  });

  it("queues a cancelled job again", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    await post(`${lane.base}/jobs/${job.id}/cancel`);
    const answer = await post(`${lane.base}/jobs/${job.id}/requeue`);
    expect(answer.status).toBe(200);
    expect(answer.body.job).toMatchObject({ state: "queued", outcome: null, cancelRequested: false });
  });

  it("answers 409 job_settled for a completed job", async () => {
    const lane = await setup();
    const job = await completedJob(lane);
    expectError(await post(`${lane.base}/jobs/${job.id}/requeue`), 409, "job_settled");
  });

  it("answers 409 job_not_requeueable for a queued or running job", async () => {
    const lane = await setup();
    const queued = await enqueue(lane, { id: "rq-1" });
    expectError(await post(`${lane.base}/jobs/${queued.id}/requeue`), 409, "job_not_requeueable");
    await claimOne(lane);
    expectError(await post(`${lane.base}/jobs/${queued.id}/requeue`), 409, "job_not_requeueable");
  });

  it("refuses a body with fields", async () => {
    const lane = await setup();
    const job = await enqueue(lane);
    await post(`${lane.base}/jobs/${job.id}/cancel`);
    const error = expectError(await post(`${lane.base}/jobs/${job.id}/requeue`, { now: true }), 400, "invalid_request");
    expect(error.details).toEqual([{ path: ["now"], message: expect.any(String) }]);
    expect((await get(`${lane.base}/jobs/${job.id}`)).body.state).toBe("settled");
  });
});
