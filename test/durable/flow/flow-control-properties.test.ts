/**
 * The flow-control property test: for random interleavings of enqueue, claim, complete, fail,
 * release, restarts and time steps, on a lane with a rate limit and queues with concurrency and rate
 * limits of their own, no queue ever has more running than its concurrency, no span of time ever
 * starts more than a bucket allowed (`limit` + `limit`·T/`periodMs` over any T ms), and once the lane
 * is drained every job has settled exactly once. Deterministic: a fixed seed.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { claim, evict, fireAlarm, rows, setup, value, type LaneFixture } from "../../helpers/lane.js";

const SEED = 20_261_205;
const LANE_RATE = { limit: 4, periodMs: 1_000 };
const QUEUES = { q1: { concurrency: 2, rateLimit: { limit: 2, periodMs: 1_000 } }, q2: { concurrency: 3 } } as const;
const QUEUE_NAMES = ["q1", "q2", null] as const;

type Op =
  | { t: "enqueue"; n: number; queue: number }
  | { t: "claim"; max: number }
  | { t: "complete" | "release"; pick: number }
  | { t: "fail"; pick: number; retry: boolean }
  | { t: "restart" }
  | { t: "tick"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ t: fc.constant("enqueue" as const), n: fc.integer({ min: 1, max: 4 }), queue: fc.nat(2) }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant("claim" as const), max: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constantFrom("complete" as const, "release" as const), pick: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("fail" as const), pick: fc.nat(20), retry: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("restart" as const) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 700 }) }) },
);

/** Starts as they happened: when, and of which queue (null: none). */
type Start = { at: number; queue: string | null };

/** Every span between two starts holds no more starts than the bucket allowed over it. */
function expectWithinBucket(starts: readonly Start[], rate: { limit: number; periodMs: number }, what: string): void {
  const times = starts.map((s) => s.at).sort((a, b) => a - b);
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      const allowed = rate.limit + Math.floor((rate.limit * (times[j]! - times[i]!)) / rate.periodMs);
      expect(j - i + 1, `${what}: ${j - i + 1} starts in ${times[j]! - times[i]!} ms`).toBeLessThanOrEqual(allowed);
    }
  }
}

async function configure(fixture: LaneFixture): Promise<void> {
  value(await fixture.stub.configure({ rateLimit: LANE_RATE, concurrency: 50 }));
  for (const [name, settings] of Object.entries(QUEUES)) value(await fixture.stub.putQueue(name, settings));
}

it(`keeps queue concurrency and every bucket, whatever the interleaving, and settles each job once (fast-check seed ${SEED})`, async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 50, size: "max" }), async (steps) => {
      const fixture = await setup();
      const { stub, clock } = fixture;
      await configure(fixture);
      const held = new Map<string, string>(); // job id → the token of its current lease
      const starts: Start[] = [];
      let enqueued = 0;
      const take = async (max: number) => {
        for (const job of await claim(stub, { max })) {
          held.set(job.id, job.lease.token);
          starts.push({ at: clock.now(), queue: job.queue });
        }
      };
      const picked = (pick: number) => [...held.keys()].sort()[pick % Math.max(1, held.size)];
      for (const step of steps) {
        const context = JSON.stringify(step);
        switch (step.t) {
          case "enqueue": {
            const queue = QUEUE_NAMES[step.queue]!;
            value(await stub.enqueueBatch({ jobs: Array.from({ length: step.n }, () => ({ kind: "k", queue, maxAttempts: 2, backoff: { baseMs: 50, maxMs: 50 } })) }));
            enqueued += step.n;
            break;
          }
          case "claim":
            await take(step.max);
            break;
          case "complete":
          case "release":
          case "fail": {
            const id = picked(step.pick);
            if (id === undefined) break;
            const token = held.get(id)!;
            held.delete(id);
            if (step.t === "complete") await stub.complete(id, { token });
            else if (step.t === "release") await stub.release(id, { token });
            else await stub.fail(id, { token, error: "e", retry: (step as { retry: boolean }).retry });
            break;
          }
          case "restart":
            await evict(fixture);
            break;
          case "tick":
            clock.advance(step.ms);
            await fireAlarm(stub); // lease expiries and retries coming due
            break;
        }
        const jobs = await rows(stub);
        for (const [name, { concurrency }] of Object.entries(QUEUES)) {
          const active = jobs.filter((j) => j.queue === name && (j.state === "running" || j.state === "completing")).length;
          expect(active, `${context}: queue ${name} runs ${active}`).toBeLessThanOrEqual(concurrency);
        }
        expectWithinBucket(starts, LANE_RATE, `${context}: the lane`);
        expectWithinBucket(starts.filter((s) => s.queue === "q1"), QUEUES.q1.rateLimit, `${context}: queue q1`);
      }
      // Drain: every job ends settled, each exactly once (a settlement moves the lifetime stats once).
      for (let round = 0; round < 400; round++) {
        const counts = value(await stub.info()).counts;
        if (counts.queued + counts.running === 0) break;
        clock.advance(300);
        await fireAlarm(stub);
        await take(50);
        for (const [id, token] of [...held]) {
          held.delete(id);
          await stub.complete(id, { token });
        }
      }
      expectWithinBucket(starts, LANE_RATE, "the drain: the lane");
      const info = value(await stub.info());
      expect(info.counts).toMatchObject({ queued: 0, running: 0, completing: 0 });
      const { completed, failed, cancelled, interrupted } = info.stats;
      expect(completed + failed + cancelled + interrupted).toBe(enqueued);
      expect((await rows(stub)).every((j) => j.state === "settled")).toBe(true);
    }),
    { seed: SEED, numRuns: 20 },
  );
}, 300_000);
