/**
 * an aborted in-process attempt (cancel, timeout, lost lease) keeps its
 * concurrency slot until its executor returns, and a job never has two in-process executors at once.
 * `test.gate` executors ignore their signal unless told to honour it, like a careless executor.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { unwrap } from "../../../src/shared/errors.js";
import type { Job } from "../../../src/shared/job.js";
import { gate } from "../../helpers/executors.js";
import { T0, inject } from "../../helpers/lane.js";

async function setup(concurrency: number) {
  const lane = env.LANE.getByName(`slots-${crypto.randomUUID()}`);
  const clock = new ManualClock(T0);
  await inject(lane, clock);
  unwrap(await lane.configure({ concurrency }));
  const enqueue = async (request: Record<string, unknown>): Promise<Job> => unwrap(await lane.enqueue(request)).job;
  const get = async (id: string): Promise<Job> => unwrap(await lane.getJob(id));
  const inside = <T>(fn: () => T | Promise<T>): Promise<T> => runInDurableObject(lane, () => fn());
  return { lane, clock, enqueue, get, inside };
}

/** Lets the lane run what a turn queued (microtask flushes, timers of a few ms). */
const settle = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms));

describe("an aborted attempt holds its slot until its executor returns", () => {
  it("a cancelled job's executor that ignores its signal keeps the lane's only slot", async () => {
    const { enqueue, get, inside, lane } = await setup(1);
    const a = gate();
    const b = gate();
    const first = await enqueue({ kind: "test.gate", payload: { gate: a.key } });
    const running = await inside(() => a.started());
    await enqueue({ kind: "test.gate", payload: { gate: b.key } });
    expect(unwrap(await lane.cancel(first.id)).status).toBe("cancelling");
    expect(running.signal.aborted).toBe(true);
    expect((await get(first.id)).outcome).toBe("cancelled"); // settled: its attempt is wound up
    await settle();
    expect(b.attempts).toHaveLength(0); // but the executor runs on, so the slot stays taken
    await inside(() => running.open());
    await inside(() => b.started());
    expect(b.attempts).toHaveLength(1);
  });

  it("a timed-out job is not started again while its first executor still runs", async () => {
    const { enqueue, get, inside, clock } = await setup(4);
    const a = gate();
    const job = await enqueue({ kind: "test.gate", payload: { gate: a.key }, timeoutMs: 20, backoff: { baseMs: 1, maxMs: 1 } });
    const first = await inside(() => a.started());
    await settle(80);
    expect(first.signal.aborted).toBe(true);
    // The retry is due (backoff 1 ms on the manual clock's terms) but waits for the first executor.
    expect((await get(job.id)).state).toBe("queued");
    expect(a.attempts).toHaveLength(1);
    clock.advance(5); // the retry's backoff (at most 1 ms) has passed
    await inside(() => first.open());
    const second = await inside(() => a.started(2));
    expect(second.attempt).toBe(2);
  });

  it("gives the slot back after the grace period when the executor never returns, logged as stuck, and still never runs the job twice", async () => {
    const { enqueue, get, inside, lane, clock } = await setup(1);
    const stuckGate = gate();
    const next = gate();
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      const stuck = await enqueue({ kind: "test.gate", payload: { gate: stuckGate.key }, timeoutMs: 20, backoff: { baseMs: 1, maxMs: 1 } });
      await inside(() => stuckGate.started());
      await enqueue({ kind: "test.gate", payload: { gate: next.key } });
      // TestLane's grace is 200 ms: past it the slot is given back and the other job starts.
      await inside(() => next.started());
      expect(lines.some((l) => l.includes('"event":"executor.stuck"') && l.includes(stuck.id))).toBe(true);
      // The stuck job's retry never got a second executor beside the first.
      expect(stuckGate.attempts).toHaveLength(1);
      expect((await get(stuck.id)).state).toBe("queued");
      clock.advance(5); // the retry's backoff (at most 1 ms) has passed
      await inside(() => next.attempts[0]!.open());
      await inside(() => stuckGate.attempts[0]!.open());
      await inside(() => stuckGate.started(2));
      expect(stuckGate.attempts).toHaveLength(2);
    } finally {
      spy.mockRestore();
    }
    expect(unwrap(await lane.info()).counts.running).toBeLessThanOrEqual(1);
  });
});
