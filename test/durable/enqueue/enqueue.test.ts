import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../../src/shared/defaults.js";
import { T0, claimOne, enqueue, refusal, rows, setup, value } from "../../helpers/lane.js";

describe("enqueue", () => {
  it("stores a queued job with the defaults of docs/api.md", async () => {
    const { stub, name } = await setup();
    const { status, job } = value(await stub.enqueue({ kind: "email.send", payload: { to: "a@b.c" } }));
    expect(status).toBe("queued");
    expect(job).toMatchObject({
      id: "id-1",
      lane: name,
      kind: "email.send",
      payload: { to: "a@b.c" },
      queue: null,
      priority: 0,
      runAt: T0,
      state: "queued",
      outcome: null,
      attempts: 0,
      generation: 0,
      maxAttempts: 3,
      timeoutMs: 60_000,
      result: null,
      error: null,
      cancelRequested: false,
      lease: null,
      createdAt: T0,
      updatedAt: T0,
      settledAt: null,
    });
    expect(value(await stub.getJob("id-1"))).toEqual(job);
  });

  it("runs a job not before delayMs from now", async () => {
    const { stub } = await setup();
    expect(value(await stub.enqueue({ kind: "k", delayMs: 5_000 })).job.runAt).toBe(T0 + 5_000);
  });

  it("runs a job not before an explicit runAt", async () => {
    const { stub } = await setup();
    expect(value(await stub.enqueue({ kind: "k", runAt: T0 + 42 })).job.runAt).toBe(T0 + 42);
  });

  it("answers duplicate for the same id and spec, whatever the order of payload keys", async () => {
    const { stub } = await setup();
    const first = value(await stub.enqueue({ id: "a", kind: "k", payload: { x: 1, y: [1, 2] }, queue: "q", priority: 2 }));
    const again = value(await stub.enqueue({ id: "a", kind: "k", payload: { y: [1, 2], x: 1 }, queue: "q", priority: 2 }));
    expect(again).toEqual({ status: "duplicate", job: first.job });
    expect(await rows(stub)).toHaveLength(1);
  });

  it("answers duplicate for a job that has run and settled since", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token, result: 7 }));
    const again = value(await stub.enqueue({ id: "a", kind: "k" }));
    expect(again.status).toBe("duplicate");
    expect(again.job).toMatchObject({ state: "settled", outcome: "completed", result: 7 });
  });

  it.each([
    ["kind", { kind: "other" }],
    ["payload", { payload: { x: 2 } }],
    ["queue", { queue: "q2" }],
    ["priority", { priority: 1 }],
    ["maxAttempts", { maxAttempts: 5 }],
    ["backoff", { backoff: { baseMs: 1_000, maxMs: 60_000 } }],
    ["timeoutMs", { timeoutMs: 1_000 }],
    ["recovery", { recovery: { maxRecoveries: 3, windowMs: 60_000 } }],
  ])("refuses the same id with a different %s as job_conflict, changing nothing", async (_field, change) => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", payload: { x: 1 }, queue: "q" });
    const before = await rows(stub);
    const error = refusal(await stub.enqueue({ id: "a", kind: "k", payload: { x: 1 }, queue: "q", ...change }), "job_conflict");
    expect(error.details).toEqual({ ids: ["a"] });
    expect(await rows(stub)).toEqual(before);
  });

  it("compares the whole spec after defaults: spelling out a default is still a duplicate", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const again = value(
      await stub.enqueue({
        id: "a",
        kind: "k",
        priority: 0,
        maxAttempts: 3,
        backoff: { baseMs: 1_000, maxMs: 300_000 },
        timeoutMs: 60_000,
        recovery: { maxRecoveries: 3, windowMs: 3_600_000 },
        delayMs: 5_000, // not part of the spec
      }),
    );
    expect(again.status).toBe("duplicate");
  });

  it("accepts a payload of exactly 128 KiB serialized", async () => {
    const { stub } = await setup();
    const payload = "x".repeat(MAX_PAYLOAD_BYTES - 2); // the two quotes make it exactly the limit
    expect(value(await stub.enqueue({ kind: "k", payload })).status).toBe("queued");
  });

  it("refuses a payload over 128 KiB serialized as payload_too_large, changing nothing", async () => {
    const { stub } = await setup();
    refusal(await stub.enqueue({ kind: "k", payload: "x".repeat(MAX_PAYLOAD_BYTES - 1) }), "payload_too_large");
    refusal(await stub.enqueue({ kind: "k", payload: "é".repeat(MAX_PAYLOAD_BYTES / 2) }), "payload_too_large");
    expect(await rows(stub)).toEqual([]);
  });

  it.each([
    ["no kind", {}],
    ["a kind outside the name pattern", { kind: "-bad" }],
    ["a kind of 129 characters", { kind: "k".repeat(129) }],
    ["an id outside the name pattern", { kind: "k", id: "a b" }],
    ["a queue outside the name pattern", { kind: "k", queue: "" }],
    ["a fractional priority", { kind: "k", priority: 1.5 }],
    ["maxAttempts 0", { kind: "k", maxAttempts: 0 }],
    ["maxAttempts 101", { kind: "k", maxAttempts: 101 }],
    ["both runAt and delayMs", { kind: "k", runAt: T0, delayMs: 1 }],
    ["a negative delayMs", { kind: "k", delayMs: -1 }],
    ["a string runAt", { kind: "k", runAt: "soon" }],
    ["backoff maxMs below baseMs", { kind: "k", backoff: { baseMs: 10, maxMs: 5 } }],
    ["a zero timeoutMs", { kind: "k", timeoutMs: 0 }],
    ["a negative maxRecoveries", { kind: "k", recovery: { maxRecoveries: -1, windowMs: 1000 } }],
    ["an unknown field", { kind: "k", colour: "red" }],
    ["a payload JSON cannot hold", { kind: "k", payload: 10n }],
    ["not an object", "k"],
  ])("refuses %s as invalid_request, changing nothing", async (_what, request) => {
    const { stub } = await setup();
    refusal(await stub.enqueue(request), "invalid_request");
    expect(await rows(stub)).toEqual([]);
  });

  it("lists each problem of an invalid request with its path", async () => {
    const { stub } = await setup();
    const error = refusal(await stub.enqueue({ kind: "-", maxAttempts: 0 }), "invalid_request");
    expect(error.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: ["kind"] }),
        expect.objectContaining({ path: ["maxAttempts"] }),
      ]),
    );
  });
});

describe("batch enqueue", () => {
  it("answers each item in request order, queued or duplicate", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "b" });
    const { results } = value(
      await stub.enqueueBatch({ jobs: [{ id: "a", kind: "k" }, { id: "b", kind: "k" }, { kind: "k" }, { id: "a", kind: "k" }] }),
    );
    expect(results).toEqual([
      { id: "a", status: "queued" },
      { id: "b", status: "duplicate" },
      { id: "id-1", status: "queued" },
      { id: "a", status: "duplicate" },
    ]);
    expect((await rows(stub)).map((r) => r.id)).toEqual(["b", "a", "id-1"]);
  });

  it("enqueues nothing when one item is invalid, and names its index", async () => {
    const { stub } = await setup();
    const error = refusal(
      await stub.enqueueBatch({ jobs: [{ id: "a", kind: "k" }, { id: "b", kind: "k" }, { id: "c", kind: "bad kind" }] }),
      "invalid_request",
    );
    expect(error.details).toEqual([expect.objectContaining({ path: ["jobs", 2, "kind"] })]);
    expect(await rows(stub)).toEqual([]);
  });

  it("enqueues nothing when one payload is too large, and names its index", async () => {
    const { stub } = await setup();
    const error = refusal(
      await stub.enqueueBatch({ jobs: [{ id: "a", kind: "k" }, { id: "b", kind: "k", payload: "x".repeat(MAX_PAYLOAD_BYTES) }] }),
      "payload_too_large",
    );
    expect(error.details).toEqual({ index: 1 });
    expect(await rows(stub)).toEqual([]);
  });

  it("enqueues nothing when one id conflicts, and names every conflicting id", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "x", payload: 1 });
    await enqueue(stub, { id: "y", payload: 1 });
    const before = await rows(stub);
    const error = refusal(
      await stub.enqueueBatch({
        jobs: [
          { id: "a", kind: "k" },
          { id: "x", kind: "k", payload: 2 },
          { id: "b", kind: "k" },
          { id: "y", kind: "k", payload: 1 },
          { id: "a", kind: "k", priority: 9 },
        ],
      }),
      "job_conflict",
    );
    expect(error.details).toEqual({ ids: ["x", "a"] });
    expect(await rows(stub)).toEqual(before);
  });

  it("names a conflicting id once, however often the batch repeats it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "x", payload: 1 });
    const error = refusal(
      await stub.enqueueBatch({ jobs: [{ id: "x", kind: "k", payload: 2 }, { id: "x", kind: "k", payload: 2 }] }),
      "job_conflict",
    );
    expect(error.details).toEqual({ ids: ["x"] });
  });

  it("refuses an empty batch and one of 1001 items", async () => {
    const { stub } = await setup();
    refusal(await stub.enqueueBatch({ jobs: [] }), "invalid_request");
    refusal(await stub.enqueueBatch({ jobs: Array.from({ length: 1001 }, () => ({ kind: "k" })) }), "invalid_request");
    expect(await rows(stub)).toEqual([]);
  });

  it("enqueues 1000 items in one call", async () => {
    const { stub } = await setup();
    const { results } = value(await stub.enqueueBatch({ jobs: Array.from({ length: 1000 }, (_, i) => ({ id: `j${i}`, kind: "k" })) }));
    expect(results).toHaveLength(1000);
    expect(value(await stub.info()).counts.queued).toBe(1000);
  });
});
