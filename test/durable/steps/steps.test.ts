/**
 * Durable steps in process: `ctx.step`, `ctx.checkpoints` and `ctx.progress` through the
 * dispatcher, with the attempt's own token behind the fence. A later attempt resumes after a failure,
 * a lease recovery or a requeue; a refused record aborts the attempt as lost and writes nothing more.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AbortError } from "../../../src/durable/attempts/executors.js";
import { DISPATCH_LEASE_MS, MAX_CHECKPOINT_BYTES, MAX_CHECKPOINT_BYTES_PER_JOB, MAX_CHECKPOINTS_PER_JOB, MAX_PROGRESS_BYTES } from "../../../src/shared/defaults.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { QueueError, unwrap } from "../../../src/shared/errors.js";
import type { Job } from "../../../src/shared/job.js";
import { gate, lost, waitForTransition } from "../../helpers/executors.js";
import { inject, sql } from "../../helpers/lane.js";

const START = 4_000_000_000_000;

async function setup() {
  const lane = env.LANE.getByName(`steps-${crypto.randomUUID()}`);
  const clock = new ManualClock(START);
  await inject(lane, clock);
  const enqueue = async (request: Record<string, unknown>): Promise<Job> => unwrap(await lane.enqueue(request)).job;
  const get = async (id: string): Promise<Job> => unwrap(await lane.getJob(id));
  /** Runs `fn` in the lane's I/O context, where promises settled by the lane can be awaited. */
  const inside = <T>(fn: () => T | Promise<T>): Promise<T> => runInDurableObject(lane, () => fn());
  const settled = async (id: string): Promise<Job> => {
    await inside(() => waitForTransition(id, (e) => e.to === "settled"));
    return get(id);
  };
  const checkpoints = (id: string) => sql<{ name: string; value: string; generation: number }>(
    lane,
    `SELECT c.name, c.value, c.generation FROM checkpoints c JOIN jobs ON jobs.seq = c.job_seq WHERE jobs.id = ? ORDER BY c.name`,
    id,
  );
  return { lane, clock, enqueue, get, inside, settled, checkpoints };
}

describe("the executor's context", () => {
  it("hands out its steps, progress and checkpoints as fields: spread, destructured and called apart from it", async () => {
    const { lane, enqueue, settled } = await setup();
    const job = await enqueue({ kind: "test.context-copy", payload: null });
    const done = await settled(job.id);
    expect(done.outcome).toBe("completed");
    expect(done.result).toEqual({ a: 1, loaded: { a: 1, b: job.id }, keys: ["attempt", "checkpoints", "dependencies", "env", "job", "progress", "signal", "sleep", "sleepUntil", "step", "stream", "traceparent", "waitFor", "waitpointId"] });
    // Completion deleted the checkpoints; the progress it reported stays on the job.
    expect(done.progress).toEqual({ a: 1 });
    expect(unwrap(await lane.listCheckpoints(job.id)).checkpoints).toEqual([]);
  });
});

describe("demo.steps", () => {
  it("resumes after a failed attempt: the retry runs only the steps after the failure", async () => {
    const { lane, clock, enqueue, get, inside, settled, checkpoints } = await setup();
    const job = await enqueue({ kind: "demo.steps", payload: { steps: 4, failAt: 2 }, backoff: { baseMs: 10, maxMs: 10 } });
    await inside(() => waitForTransition(job.id, (e) => e.from === "running" && e.to === "queued"));
    expect((await checkpoints(job.id)).map((c) => [c.name, c.value, c.generation])).toEqual([
      ["s1", '{"attempt":1}', 1],
      ["s2", '{"attempt":1}', 1],
    ]);
    clock.set((await get(job.id)).runAt);
    await runDurableObjectAlarm(lane);
    const done = await settled(job.id);
    expect(done).toMatchObject({ outcome: "completed", attempts: 2 });
    expect(done.result).toEqual({
      ran: ["s3", "s4"],
      values: { s1: { attempt: 1 }, s2: { attempt: 1 }, s3: { attempt: 2 }, s4: { attempt: 2 } },
    });
    expect(done.errors).toEqual([{ attempt: 1, generation: 1, message: "demo.steps: failing right after step s2", at: START }]);
    // Completion took them in its own transaction.
    expect(await checkpoints(job.id)).toEqual([]);
  });

  it("resumes after a requeue of a job that failed for good", async () => {
    const { lane, enqueue, get, inside, settled } = await setup();
    const job = await enqueue({ kind: "demo.steps", payload: { steps: 3, failAt: 2 }, maxAttempts: 1 });
    expect((await settled(job.id)).outcome).toBe("failed");
    unwrap(await lane.requeue(job.id));
    await inside(() => waitForTransition(job.id, (e) => e.to === "settled" && e.outcome === "completed"));
    const done = await get(job.id);
    expect(done.result).toEqual({ ran: ["s3"], values: { s1: { attempt: 1 }, s2: { attempt: 1 }, s3: { attempt: 1 } } });
    expect(done.generation).toBe(2);
  });

  it("runs every step on a first attempt that does not fail, and its completion deletes them", async () => {
    const { enqueue, settled, checkpoints } = await setup();
    const job = await enqueue({ kind: "demo.steps", payload: { steps: 3 } });
    expect((await settled(job.id)).result).toEqual({ ran: ["s1", "s2", "s3"], values: { s1: { attempt: 1 }, s2: { attempt: 1 }, s3: { attempt: 1 } } });
    // The first attempt recorded them, so its completion took them.
    expect(await checkpoints(job.id)).toEqual([]);
  });
});

describe("ctx.step", () => {
  it("resumes after a lease recovery: a recorded step does not run again and answers its value", async () => {
    const { lane, clock, enqueue, inside, settled } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const first = await inside(() => g.started());
    expect(await inside(() => first.ctx.step("charge", () => ({ id: "ch_1" })))).toEqual({ id: "ch_1" });
    clock.advance(DISPATCH_LEASE_MS + 1);
    await runDurableObjectAlarm(lane);
    expect((first.signal.reason as AbortError).abortCause).toBe("lost");
    await inside(() => first.open());
    const second = await inside(() => g.started(2));
    let ran = false;
    const again = await inside(() =>
      second.ctx.step("charge", () => {
        ran = true;
        return { id: "ch_2" };
      }),
    );
    expect({ ran, again }).toEqual({ ran: false, again: { id: "ch_1" } });
    expect(await inside(() => second.ctx.checkpoints.load())).toEqual({ charge: { id: "ch_1" } });
    await inside(() => second.open());
    expect((await settled(job.id)).generation).toBe(2);
  });

  it("answers the recorded value as JSON, the same on the first attempt as on every later one", async () => {
    const { enqueue, inside } = await setup();
    const g = gate();
    await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const value = await inside(() => attempt.ctx.step("when", () => ({ at: new Date(0), skip: undefined })));
    expect(value).toEqual({ at: "1970-01-01T00:00:00.000Z" });
    expect(await inside(() => attempt.ctx.step("when", () => "not run"))).toEqual({ at: "1970-01-01T00:00:00.000Z" });
    await inside(() => attempt.open());
  });

  it("reads only what was recorded up to the attempt's own generation", async () => {
    const { lane, clock, enqueue, get, inside } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key }, backoff: { baseMs: 10, maxMs: 10 } });
    const first = await inside(() => g.started());
    await inside(() => first.ctx.step("older", () => 1));
    await inside(() => first.throw(new Error("again")));
    await inside(() => waitForTransition(job.id, (e) => e.from === "running" && e.to === "queued"));
    clock.set((await get(job.id)).runAt);
    await runDurableObjectAlarm(lane);
    const second = await inside(() => g.started(2));
    // As a newer attempt would have written it (the fence lets no such write happen while this one holds the lease).
    await sql(lane, `INSERT INTO checkpoints (job_seq, name, value, generation, updated_at) SELECT seq, 'newer', '3', generation + 1, 0 FROM jobs WHERE id = ?`, job.id);
    await sql(lane, `INSERT INTO checkpoints (job_seq, name, value, generation, updated_at) SELECT seq, 'own', '2', generation, 0 FROM jobs WHERE id = ?`, job.id);
    expect(await inside(() => second.ctx.checkpoints.load())).toEqual({ older: 1, own: 2 });
    await inside(() => second.open());
  });

  it("keeps the job's limits: a new name past 1,000, or values past 1 MiB, is checkpoint_limit and records nothing", async () => {
    const { lane, clock, enqueue, get, inside, settled, checkpoints } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key }, backoff: { baseMs: 10, maxMs: 10 } });
    const first = await inside(() => g.started());
    await inside(async () => {
      for (let i = 0; i < MAX_CHECKPOINTS_PER_JOB; i++) await first.ctx.checkpoints.save(`n${i}`, i);
    });
    const code = (e: unknown) => (e instanceof QueueError ? e.code : String(e));
    expect(code(await inside(() => first.ctx.step("one-more", () => 0).catch((e: unknown) => e)))).toBe("checkpoint_limit");
    await inside(() => first.ctx.checkpoints.save("n0", "rewritten")); // an existing name still may be
    await inside(() => first.throw(new Error("again")));
    await inside(() => waitForTransition(job.id, (e) => e.from === "running" && e.to === "queued"));
    clock.set((await get(job.id)).runAt);
    await runDurableObjectAlarm(lane);
    // The next attempt counts what its predecessor recorded.
    const second = await inside(() => g.started(2));
    expect(code(await inside(() => second.ctx.checkpoints.save("another", 0).catch((e: unknown) => e)))).toBe("checkpoint_limit");
    expect(second.signal.aborted).toBe(false);
    const rows = await checkpoints(job.id);
    expect(rows).toHaveLength(MAX_CHECKPOINTS_PER_JOB);
    expect(rows.find((r) => r.name === "n0")!.value).toBe('"rewritten"');
    await inside(() => second.open());
    expect((await settled(job.id)).outcome).toBe("completed");
  });

  it("keeps the job's bytes: values past 1 MiB in all are checkpoint_limit; a smaller value frees room", async () => {
    const { lane, enqueue, inside, checkpoints } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const big = "x".repeat(MAX_CHECKPOINT_BYTES - 2); // its JSON is exactly the largest value
    await inside(async () => {
      for (let i = 0; i < MAX_CHECKPOINT_BYTES_PER_JOB / MAX_CHECKPOINT_BYTES; i++) await attempt.ctx.checkpoints.save(`v${i}`, big);
    });
    const refused = await inside(() => attempt.ctx.checkpoints.save("tiny", 1).catch((e: unknown) => e));
    expect((refused as QueueError).code).toBe("checkpoint_limit");
    await inside(() => attempt.ctx.checkpoints.save("v0", "y".repeat(MAX_CHECKPOINT_BYTES - 3)));
    await inside(() => attempt.ctx.checkpoints.save("tiny", 1));
    expect(await sql(lane, `SELECT SUM(octet_length(value)) AS bytes FROM checkpoints`)).toEqual([{ bytes: MAX_CHECKPOINT_BYTES_PER_JOB }]);
    expect((await checkpoints(job.id)).map((c) => c.name)).toContain("tiny");
    await inside(() => attempt.open());
  });

  it("refuses a bad name or a value over 128 KiB without recording, and the attempt goes on", async () => {
    const { enqueue, inside, settled, checkpoints } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const big = await inside(() => attempt.ctx.step("big", () => "x".repeat(MAX_CHECKPOINT_BYTES)).catch((e: unknown) => e));
    expect(big).toBeInstanceOf(QueueError);
    expect((big as QueueError).code).toBe("payload_too_large");
    let ran = false;
    const bad = await inside(() => attempt.ctx.step("no spaces", () => (ran = true)).catch((e: unknown) => e));
    expect({ code: (bad as QueueError).code, ran }).toEqual({ code: "invalid_request", ran: false });
    expect(await checkpoints(job.id)).toEqual([]);
    expect(attempt.signal.aborted).toBe(false);
    await inside(() => attempt.ctx.checkpoints.save("ok", 1));
    expect((await checkpoints(job.id)).map((c) => c.name)).toEqual(["ok"]);
    await inside(() => attempt.open());
    expect((await settled(job.id)).outcome).toBe("completed");
  });
});

describe("a refused record aborts the attempt as lost, and nothing more is written", () => {
  it("lease expired: the step rejects with the signal's reason, the attempt is lost, nothing is recorded", async () => {
    const { lane, clock, enqueue, get, inside, checkpoints } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    await inside(() => attempt.ctx.step("s1", () => 1));
    clock.advance(DISPATCH_LEASE_MS + 1); // the lease ran out; the alarm has not recovered it yet
    let ran = false;
    const refused = await inside(() =>
      attempt.ctx.step("s2", () => {
        ran = true;
        return 2;
      }).catch((e: unknown) => e),
    );
    expect(ran).toBe(true); // a step runs at least once; its record is what the fence refused
    expect(refused).toBeInstanceOf(AbortError);
    expect(attempt.signal.aborted).toBe(true);
    expect((attempt.signal.reason as AbortError).abortCause).toBe("lost");
    expect(lost(job.id).map((l) => l.event.cause)).toEqual(["expired"]);
    // Nothing more: neither a checkpoint, nor progress, nor an outcome of this attempt.
    await expect(inside(() => attempt.ctx.checkpoints.save("s3", 3))).rejects.toBeInstanceOf(AbortError);
    await expect(inside(() => attempt.ctx.progress({ late: true }))).rejects.toBeInstanceOf(AbortError);
    await inside(() => attempt.open({ late: true }));
    expect((await checkpoints(job.id)).map((c) => c.name)).toEqual(["s1"]);
    expect(await get(job.id)).toMatchObject({ state: "running", result: null, progress: null });
    await runDurableObjectAlarm(lane);
    expect(await get(job.id)).toMatchObject({ generation: 2 });
  });

  it("cancelled: a step after the cancel records nothing, and the job settles cancelled", async () => {
    const { lane, enqueue, inside, settled, checkpoints } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    unwrap(await lane.cancel(job.id));
    await expect(inside(() => attempt.ctx.step("s1", () => 1))).rejects.toBeInstanceOf(AbortError);
    expect(await checkpoints(job.id)).toEqual([]);
    expect((await settled(job.id)).outcome).toBe("cancelled");
    await inside(() => attempt.open());
  });

  it("a record after the executor returned is refused", async () => {
    const { enqueue, inside, settled, checkpoints } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    await inside(() => attempt.open());
    await settled(job.id);
    await expect(inside(() => attempt.ctx.checkpoints.save("late", 1))).rejects.toThrow(/over|aborted/);
    expect(await checkpoints(job.id)).toEqual([]);
  });
});

describe("records of several attempts in one turn", () => {
  it("go in one statement, each through the fence by its own token: the stale one is refused, the others land", async () => {
    const { lane, clock, enqueue, inside, checkpoints } = await setup();
    const [g1, g2, g3] = [gate(), gate(), gate()];
    const fresh = await enqueue({ kind: "test.gate", payload: { gate: g1.key } });
    const other = await enqueue({ kind: "test.gate", payload: { gate: g2.key } });
    const stale = await enqueue({ kind: "test.gate", payload: { gate: g3.key }, timeoutMs: 120_000 });
    const [a, b, c] = await inside(() => Promise.all([g1.started(), g2.started(), g3.started()]));
    // The third's lease has run out (as if its renewals had stopped); the others hold theirs.
    await sql(lane, `UPDATE jobs SET lease_until = ? WHERE id = ?`, clock.now(), stale.id);
    const statements: string[] = [];
    const results = await runInDurableObject(lane, async (_l, state) => {
      const exec = state.storage.sql.exec.bind(state.storage.sql);
      state.storage.sql.exec = ((q: string, ...args: unknown[]) => (statements.push(q), exec(q, ...args))) as typeof exec;
      try {
        return await Promise.allSettled([a.ctx.step("s", () => "a"), b.ctx.step("s", () => "b"), c.ctx.step("s", () => "c")]);
      } finally {
        state.storage.sql.exec = exec;
      }
    });
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect(((results[2] as PromiseRejectedResult).reason as AbortError).abortCause).toBe("lost");
    expect(statements.filter((q) => q.includes("INSERT INTO checkpoints"))).toHaveLength(1);
    expect((await checkpoints(fresh.id)).map((r) => r.value)).toEqual(['"a"']);
    expect((await checkpoints(other.id)).map((r) => r.value)).toEqual(['"b"']);
    expect(await checkpoints(stale.id)).toEqual([]);
    await inside(() => [a, b, c].forEach((attempt) => attempt.open()));
  });

  it("demo.steps jobs running side by side all resume and complete, and their completions take their checkpoints", async () => {
    const { lane, clock, enqueue, get, inside, settled, checkpoints } = await setup();
    const jobs = await Promise.all(Array.from({ length: 6 }, () => enqueue({ kind: "demo.steps", payload: { steps: 3, failAt: 1 }, backoff: { baseMs: 10, maxMs: 10 } })));
    for (const job of jobs) await inside(() => waitForTransition(job.id, (e) => e.from === "running" && e.to === "queued"));
    clock.advance(10);
    await runDurableObjectAlarm(lane);
    for (const job of jobs) {
      const done = await settled(job.id);
      expect(done.result, job.id).toEqual({ ran: ["s2", "s3"], values: { s1: { attempt: 1 }, s2: { attempt: 2 }, s3: { attempt: 2 } } });
      expect(await checkpoints(job.id)).toEqual([]);
      expect((await get(job.id)).generation).toBe(2);
    }
  });
});

describe("ctx.progress", () => {
  it("records the job's progress through the fence and keeps the lease", async () => {
    const { enqueue, get, inside, settled } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    await inside(() => attempt.ctx.progress({ done: 3, of: 10 }));
    expect(await get(job.id)).toMatchObject({ state: "running", progress: { done: 3, of: 10 } });
    const tooBig = await inside(() => attempt.ctx.progress("x".repeat(MAX_PROGRESS_BYTES)).catch((e: unknown) => e));
    expect((tooBig as QueueError).code).toBe("payload_too_large");
    expect(attempt.signal.aborted).toBe(false);
    await inside(() => attempt.open());
    expect(await settled(job.id)).toMatchObject({ outcome: "completed", progress: { done: 3, of: 10 } });
  });

  it("demo.sleep reports {sleptMs} every progressEveryMs", async () => {
    const { enqueue, settled } = await setup();
    const job = await enqueue({ kind: "demo.sleep", payload: { ms: 60, progressEveryMs: 20 } });
    const done = await settled(job.id);
    expect(done.result).toEqual({ slept: 60 });
    expect(done.progress).toMatchObject({ sleptMs: expect.any(Number) });
    expect([20, 40, 60]).toContain((done.progress as { sleptMs: number }).sleptMs);
  });
});
