/**
 * Writing a job's stream in process (docs/api.md "Results"): `ctx.stream.write` through the fence
 * with the attempt's token, its limits thrown as errors the executor may catch, a lost lease
 * aborting the attempt; a held reader answered by the write; and `demo.stream`.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AbortError } from "../../../src/durable/attempts/executors.js";
import { DISPATCH_LEASE_MS, MAX_STREAM_CHUNK_BYTES, MAX_STREAM_CHUNKS_PER_JOB } from "../../../src/shared/defaults.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { QueueError, unwrap } from "../../../src/shared/errors.js";
import type { Job } from "../../../src/shared/job.js";
import { gate, lost, waitForTransition } from "../../helpers/executors.js";
import { inject, sql, T0 } from "../../helpers/lane.js";

async function setup() {
  const lane = env.LANE.getByName(`stream-${crypto.randomUUID()}`);
  const clock = new ManualClock(T0);
  await inject(lane, clock);
  const enqueue = async (request: Record<string, unknown>): Promise<Job> => unwrap(await lane.enqueue(request)).job;
  /** Runs `fn` in the lane's I/O context, where promises settled by the lane can be awaited. */
  const inside = <T>(fn: () => T | Promise<T>): Promise<T> => runInDurableObject(lane, () => fn());
  const settled = async (id: string): Promise<Job> => {
    await inside(() => waitForTransition(id, (e) => e.to === "settled"));
    return unwrap(await lane.getJob(id));
  };
  /** The job's events after `after`: [seq, type, data]. */
  const events = async (id: string, after = 0) => unwrap(await lane.streamEvents(id, after)).events.map((e) => [e.seq, e.type, JSON.parse(e.data)] as const);
  return { lane, clock, enqueue, inside, settled, events };
}

describe("ctx.stream.write", () => {
  it("writes each chunk through the fence as the attempt's, and a held reader gets it at once", async () => {
    const { lane, enqueue, inside, settled, events } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    // Held: nothing after seq 2 yet.
    const held = lane.streamEvents(job.id, 2, 10_000);
    await inside(() => attempt.ctx.stream.write({ token: "Hel" }));
    expect(unwrap(await held).events.map((e) => [e.seq, JSON.parse(e.data)])).toEqual([[3, { data: { token: "Hel" }, attempt: 1, at: T0 }]]);
    await inside(() => attempt.ctx.stream.write("lo"));
    await inside(() => attempt.open({ done: true }));
    await settled(job.id);
    expect((await events(job.id)).map(([seq, type, data]) => [seq, type, data.data ?? data.to])).toEqual([
      [1, "transition", "queued"],
      [2, "transition", "running"],
      [3, "chunk", { token: "Hel" }],
      [4, "chunk", "lo"],
      [5, "transition", "settled"],
    ]);
  });

  it("rejects a chunk over 64 KiB and a write past the limits with errors the executor may catch, and runs on", async () => {
    const { lane, enqueue, inside, settled } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const big = await inside(() => attempt.ctx.stream.write("x".repeat(MAX_STREAM_CHUNK_BYTES)).catch((e: unknown) => e));
    expect(big).toBeInstanceOf(QueueError);
    expect((big as QueueError).code).toBe("payload_too_large");
    await inside(async () => {
      for (let i = 0; i < MAX_STREAM_CHUNKS_PER_JOB; i++) await attempt.ctx.stream.write(i);
    });
    const limit = await inside(() => attempt.ctx.stream.write("one too many").catch((e: unknown) => e));
    expect(limit).toBeInstanceOf(QueueError);
    expect((limit as QueueError).code).toBe("stream_limit");
    expect(attempt.signal.aborted).toBe(false);
    await inside(() => attempt.open("finished anyway"));
    expect(await settled(job.id)).toMatchObject({ outcome: "completed", result: "finished anyway" });
    expect((await sql<{ n: number }>(lane, `SELECT COUNT(*) AS n FROM job_events WHERE type = 'chunk'`))[0]!.n).toBe(MAX_STREAM_CHUNKS_PER_JOB);
  });

  it("aborts the attempt as lost when its lease is gone, writing nothing", async () => {
    const { clock, enqueue, inside, events } = await setup();
    const g = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    clock.advance(DISPATCH_LEASE_MS + 1); // the lease ran out; the alarm has not recovered it yet
    const refused = await inside(() => attempt.ctx.stream.write("late").catch((e: unknown) => e));
    expect(refused).toBeInstanceOf(AbortError);
    expect((attempt.signal.reason as AbortError).abortCause).toBe("lost");
    expect(lost(job.id).map((l) => l.event.cause)).toEqual(["expired"]);
    expect((await events(job.id)).some(([, type]) => type === "chunk")).toBe(false);
    await inside(() => attempt.open());
  });
});

describe("demo.stream", () => {
  it("writes {i: 1} … {i: n}, then completes with {chunks: n}", async () => {
    const { lane, enqueue, settled, events } = await setup();
    const job = await enqueue({ kind: "demo.stream", payload: { chunks: 3 } });
    expect(await settled(job.id)).toMatchObject({ outcome: "completed", result: { chunks: 3 } });
    expect((await events(job.id)).filter(([, type]) => type === "chunk").map(([seq, , data]) => [seq, data.data, data.attempt])).toEqual([
      [3, { i: 1 }, 1],
      [4, { i: 2 }, 1],
      [5, { i: 3 }, 1],
    ]);
    expect((await events(job.id)).map(([seq, type, data]) => [seq, type, data.from, data.to, data.attempt, data.at])).toEqual([
      [1, "transition", null, "queued", 0, T0],
      [2, "transition", "queued", "running", 1, T0],
      [3, "chunk", undefined, undefined, 1, T0],
      [4, "chunk", undefined, undefined, 1, T0],
      [5, "chunk", undefined, undefined, 1, T0],
      [6, "transition", "running", "settled", 1, T0],
    ]);
    // Started in its enqueue's turn: its enqueue and its claim are told by its row, not stored.
    expect((await sql<{ seq: number }>(lane, `SELECT seq FROM job_events ORDER BY seq`)).map((r) => r.seq)).toEqual([3, 4, 5, 6]);
    const none = await enqueue({ kind: "demo.stream", payload: { chunks: 0, everyMs: 5 } });
    expect(await settled(none.id)).toMatchObject({ result: { chunks: 0 } });
  });
});
