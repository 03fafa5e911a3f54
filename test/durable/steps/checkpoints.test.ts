/**
 * Checkpoints at the lane: written through the fence, stamped with the writer's generation,
 * handed to the next claim, kept across retry, recovery, release, cancel and requeue, deleted with
 * completion in its transaction and with their job, and bounded per value and per job.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { MAX_CHECKPOINT_BYTES, MAX_CHECKPOINT_BYTES_PER_JOB, MAX_CHECKPOINTS_PER_JOB } from "../../../src/shared/defaults.js";
import type { ErrorCode } from "../../../src/shared/errors.js";
import { T0, claimOne, enqueue, fireAlarm, refusal, row, setup, sql, value, type LaneStub } from "../../helpers/lane.js";

type Stored = { job_seq: number; name: string; value: string; generation: number; updated_at: number };

/** Every checkpoint row of the lane, by job and name. */
function stored(stub: LaneStub): Promise<Stored[]> {
  return sql<Stored>(stub, `SELECT * FROM checkpoints ORDER BY job_seq, name`);
}

const save = (stub: LaneStub, id: string, name: string, token: string, v: unknown) => stub.saveCheckpoint(id, name, { token, value: v });

/** A string whose JSON is exactly `bytes` bytes. */
const sized = (bytes: number) => "x".repeat(bytes - 2);

describe("a checkpoint write", () => {
  it("records the value stamped with the attempt's generation, and the operator's view lists it by name", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    clock.advance(5);
    expect(value(await save(stub, "a", "s2", lease.token, { b: [1, "two"] }))).toEqual({ checkpoint: { name: "s2", generation: 1, updatedAt: T0 + 5 } });
    value(await save(stub, "a", "s1", lease.token, null));
    expect(value(await stub.listCheckpoints("a")).checkpoints).toEqual([
      { name: "s1", value: null, generation: 1, updatedAt: T0 + 5 },
      { name: "s2", value: { b: [1, "two"] }, generation: 1, updatedAt: T0 + 5 },
    ]);
  });

  it("replaces a name's value, stamped with the writer's generation", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const first = await claimOne(stub);
    value(await save(stub, "a", "s1", first.lease.token, 1));
    value(await stub.release("a", { token: first.lease.token }));
    const second = await claimOne(stub);
    expect(value(await save(stub, "a", "s1", second.lease.token, 2)).checkpoint.generation).toBe(2);
    expect(value(await stub.listCheckpoints("a")).checkpoints).toMatchObject([{ name: "s1", value: 2, generation: 2 }]);
  });

  it("keeps the token: the holder completes afterwards", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await save(stub, "a", "s1", lease.token, 1));
    expect(value(await stub.complete("a", { token: lease.token })).job.outcome).toBe("completed");
  });

  it("refuses a bad name or body as invalid_request, and an unknown job as job_not_found", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    refusal(await save(stub, "a", "no spaces", lease.token, 1), "invalid_request");
    refusal(await stub.saveCheckpoint("a", "s1", { token: lease.token }), "invalid_request");
    refusal(await stub.saveCheckpoint("a", "s1", { token: lease.token, value: 1, extra: 1 }), "invalid_request");
    refusal(await save(stub, "nope", "s1", "t", 1), "job_not_found");
    refusal(await stub.listCheckpoints("nope"), "job_not_found");
    expect(await stored(stub)).toEqual([]);
  });
});

describe("every refusal of the fence records nothing", () => {
  /** A running job `a` with one checkpoint `s1` of its first attempt; `then` makes the token stale. */
  async function refused(code: ErrorCode, then: (stub: LaneStub, token: string, clock: { advance(ms: number): void }) => Promise<void>) {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    value(await save(stub, "a", "s1", lease.token, "first"));
    await then(stub, lease.token, clock);
    const before = { checkpoints: await stored(stub) };
    const answer = await save(stub, "a", "s2", lease.token, "late");
    refusal(answer, code);
    const overwrite = await save(stub, "a", "s1", lease.token, "late");
    expect(overwrite.ok).toBe(false);
    expect(await stored(stub)).toEqual(before.checkpoints);
    return { stub, before };
  }

  it("lease_superseded: a token renewed away", async () => {
    await refused("lease_superseded", async (stub, token) => void value(await stub.renew("a", { token })));
  });

  it("lease_superseded: the token of an attempt that was released and claimed again", async () => {
    await refused("lease_superseded", async (stub, token) => {
      value(await stub.release("a", { token }));
      await claimOne(stub);
    });
  });

  it("lease_expired: a lease that ran out", async () => {
    await refused("lease_expired", async (_stub, _token, clock) => clock.advance(1_000));
  });

  it("job_cancelled: the holder of a cancel-requested job (which then settles cancelled)", async () => {
    const { stub } = await refused("job_cancelled", async (stub) => void value(await stub.cancel("a")));
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "cancelled" });
  });

  it("job_settled: a settled job", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await save(stub, "a", "s1", lease.token, 1));
    value(await stub.fail("a", { token: lease.token, error: "no", retry: false }));
    refusal(await save(stub, "a", "s2", lease.token, 2), "job_settled");
    expect((await stored(stub)).map((c) => c.name)).toEqual(["s1"]);
  });

  it("a job not running: queued, never claimed", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    refusal(await save(stub, "a", "s1", "tok-guess", 1), "lease_superseded");
    expect(await stored(stub)).toEqual([]);
  });
});

describe("the next attempt resumes", () => {
  it("a claim hands the job every checkpoint of its earlier attempts; {} when none", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    const first = await claimOne(stub);
    expect(first.id).toBe("a");
    value(await save(stub, "a", "s1", first.lease.token, { done: 1 }));
    value(await save(stub, "a", "s2", first.lease.token, [2]));
    value(await stub.fail("a", { token: first.lease.token, error: "boom", retryAfterMs: 0 }));
    const claimed = value(await stub.claim({ max: 2 })).jobs;
    expect(claimed.map((j) => [j.id, j.lease.generation, j.checkpoints])).toEqual([
      ["a", 2, { s1: { done: 1 }, s2: [2] }],
      ["b", 1, {}],
    ]);
  });

  it.each<[string, (stub: LaneStub, token: string, clock: { advance(ms: number): void }) => Promise<void>]>([
    ["a failed attempt's retry", async (stub, token) => void value(await stub.fail("a", { token, error: "x", retryAfterMs: 0 }))],
    ["a release", async (stub, token) => void value(await stub.release("a", { token }))],
    ["a lease recovery", async (stub, _token, clock) => {
      clock.advance(1_000);
      await fireAlarm(stub);
    }],
    ["a requeue after the job failed for good", async (stub, token) => {
      value(await stub.fail("a", { token, error: "x", retry: false }));
      value(await stub.requeue("a"));
    }],
    ["a requeue after the job was cancelled", async (stub, token) => {
      value(await stub.cancel("a"));
      refusal(await stub.renew("a", { token }), "job_cancelled"); // the holder speaks: the job settles cancelled
      value(await stub.requeue("a"));
    }],
  ])("after %s", async (_what, end) => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a", maxAttempts: 3 });
    const { lease } = await claimOne(stub, { leaseMs: 1_000 });
    value(await save(stub, "a", "s1", lease.token, "kept"));
    await end(stub, lease.token, clock);
    const next = await claimOne(stub);
    expect(next.lease.generation).toBe(2);
    expect(next.checkpoints).toEqual({ s1: "kept" });
  });
});

describe("completion deletes the job's checkpoints in its own transaction", () => {
  it("they are gone once the job completes, and nothing else's are", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    const [a, b] = value(await stub.claim({ max: 2 })).jobs;
    value(await save(stub, "a", "s1", a!.lease.token, 1));
    value(await save(stub, "b", "s1", b!.lease.token, 2));
    value(await stub.complete("a", { token: a!.lease.token }));
    expect((await stored(stub)).map((c) => [c.job_seq, c.name])).toEqual([[(await row(stub, "b"))!.seq, "s1"]]);
    expect(value(await stub.listCheckpoints("a")).checkpoints).toEqual([]);
  });

  it("a completion whose deletion fails is rolled back whole: the job stays running with its checkpoints", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await save(stub, "a", "s1", lease.token, 1));
    // Make the deletion fail inside the transaction: the completion must not stand without it.
    await sql(stub, `CREATE TRIGGER refuse_delete BEFORE DELETE ON checkpoints BEGIN SELECT RAISE(ABORT, 'no deleting'); END`);
    await runInDurableObject(stub, (lane: Lane) => expect(() => lane.fenced.complete("a", lease.token, "1")).toThrow(/no deleting/));
    expect(await row(stub, "a")).toMatchObject({ state: "running", outcome: null, lease_token: lease.token });
    expect((await stored(stub)).map((c) => c.name)).toEqual(["s1"]);
    await sql(stub, `DROP TRIGGER refuse_delete`);
    value(await stub.complete("a", { token: lease.token }));
    expect(await stored(stub)).toEqual([]);
  });

  it("a superseded attempt's late completion takes nothing of the newer attempt's checkpoints", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    const old = await claimOne(stub, { leaseMs: 1_000 });
    value(await save(stub, "a", "s1", old.lease.token, "old"));
    clock.advance(1_000);
    await fireAlarm(stub);
    const fresh = await claimOne(stub);
    value(await save(stub, "a", "s2", fresh.lease.token, "new"));
    refusal(await stub.complete("a", { token: old.lease.token, result: "late" }), "lease_superseded");
    expect((await stored(stub)).map((c) => [c.name, c.generation])).toEqual([["s1", 1], ["s2", 2]]);
    value(await stub.complete("a", { token: fresh.lease.token }));
    expect(await stored(stub)).toEqual([]);
  });

  it("deletes only generations up to the completing lease's", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    value(await save(stub, "a", "s1", lease.token, 1));
    // A row of a later generation cannot be written through the fence; plant one to see the bound at work.
    await sql(stub, `INSERT INTO checkpoints (job_seq, name, value, generation, updated_at) SELECT seq, 'later', '2', 2, 0 FROM jobs WHERE id = 'a'`);
    value(await stub.complete("a", { token: lease.token }));
    expect((await stored(stub)).map((c) => c.name)).toEqual(["later"]);
  });
});

describe("deleting a job deletes its checkpoints", () => {
  it("sweep takes them with the job, and leaves those of the jobs it keeps", async () => {
    const { stub, clock } = await setup();
    for (const id of ["a", "b"]) await enqueue(stub, { id });
    const [a, b] = value(await stub.claim({ max: 2 })).jobs;
    value(await save(stub, "a", "s1", a!.lease.token, 1));
    value(await save(stub, "b", "s1", b!.lease.token, 2));
    value(await stub.fail("a", { token: a!.lease.token, error: "x", retry: false })); // failed: kept, not completed
    expect((await stored(stub)).length).toBe(2);
    clock.advance(10);
    expect(value(await stub.sweep({ settledBefore: T0 + 10 })).removed).toBe(1);
    expect((await stored(stub)).map((c) => c.value)).toEqual(["2"]);
  });
});

describe("the limits", () => {
  it(`a value of exactly ${MAX_CHECKPOINT_BYTES} bytes is recorded; one byte more is payload_too_large and records nothing`, async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    refusal(await save(stub, "a", "big", lease.token, sized(MAX_CHECKPOINT_BYTES + 1)), "payload_too_large");
    expect(await stored(stub)).toEqual([]);
    value(await save(stub, "a", "big", lease.token, sized(MAX_CHECKPOINT_BYTES)));
  });

  it(`${MAX_CHECKPOINTS_PER_JOB} names fit; a new one more is checkpoint_limit, while an existing name may still be rewritten`, async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    // All but the last inside the object: a thousand round trips would only measure the test's transport.
    await runInDurableObject(stub, (lane: Lane) => {
      for (let i = 0; i < MAX_CHECKPOINTS_PER_JOB - 1; i++) value(lane.checkpointStore.save("a", lease.token, `n${i}`, String(i)));
    });
    value(await save(stub, "a", `n${MAX_CHECKPOINTS_PER_JOB - 1}`, lease.token, 0));
    refusal(await save(stub, "a", "one-more", lease.token, 0), "checkpoint_limit");
    value(await save(stub, "a", "n7", lease.token, "again"));
    const names = await stored(stub);
    expect(names).toHaveLength(MAX_CHECKPOINTS_PER_JOB);
    expect(names.some((c) => c.name === "one-more")).toBe(false);
    // The lease is untouched by the refusal: the holder goes on.
    value(await stub.complete("a", { token: lease.token }));
  });

  it(`${MAX_CHECKPOINT_BYTES_PER_JOB} bytes of values fit; a byte more is checkpoint_limit; a smaller replacement frees room`, async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const { lease } = await claimOne(stub);
    for (let i = 0; i < 8; i++) value(await save(stub, "a", `v${i}`, lease.token, sized(MAX_CHECKPOINT_BYTES)));
    expect(MAX_CHECKPOINT_BYTES * 8).toBe(MAX_CHECKPOINT_BYTES_PER_JOB);
    refusal(await save(stub, "a", "tiny", lease.token, 1), "checkpoint_limit");
    refusal(await save(stub, "a", "v0", lease.token, sized(MAX_CHECKPOINT_BYTES) + "y"), "payload_too_large");
    value(await save(stub, "a", "v0", lease.token, sized(MAX_CHECKPOINT_BYTES - 1)));
    value(await save(stub, "a", "tiny", lease.token, 1));
    refusal(await save(stub, "a", "more", lease.token, 1), "checkpoint_limit");
    expect(await sql(stub, `SELECT COUNT(*) AS names, SUM(octet_length(value)) AS bytes FROM checkpoints`)).toEqual([{ names: 9, bytes: MAX_CHECKPOINT_BYTES_PER_JOB }]);
  });

  it("a claim of many jobs with large checkpoints stays within the 4 MiB page, never none", async () => {
    const { stub } = await setup();
    for (let i = 0; i < 6; i++) await enqueue(stub, { id: `j${i}` });
    const first = value(await stub.claim({ max: 6, leaseMs: 1_000 })).jobs;
    for (const job of first) {
      for (let v = 0; v < 8; v++) value(await save(stub, job.id, `v${v}`, job.lease.token, sized(MAX_CHECKPOINT_BYTES)));
      value(await stub.release(job.id, { token: job.lease.token }));
    }
    const page = value(await stub.claim({ max: 6 })).jobs;
    // 1 MiB of checkpoints each: three fit under 4 MiB, a fourth would not.
    expect(page.map((j) => j.id)).toEqual(["j0", "j1", "j2"]);
    expect(new TextEncoder().encode(JSON.stringify({ jobs: page })).byteLength).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(Object.keys(page[0]!.checkpoints)).toHaveLength(8);
  });
});
