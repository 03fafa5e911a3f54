/**
 * The wake never asks for "now" when nothing may start: for random lanes (fifo or round-robin,
 * queues of random concurrency and rate limits, jobs due or not yet, blocked, of an in-process kind
 * or a pull kind, in random order and priority, often behind a row of jobs that may not start now),
 * after every alarm either the alarm started every job that may start now, or the lane's computed
 * wake is later than now (or none). A wake at "now" after an alarm names a job the claim would not
 * take: the alarm would fire again and again. Deterministic: a fixed seed. The clock moves less than
 * an in-process lease in all (8 steps of at most 3 s), so that no recovery comes into it.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import { unwrap } from "../../../src/shared/errors.js";
import { setup as inProcess } from "../../helpers/dispatch.js";
import { gate, waitForTransition } from "../../helpers/executors.js";

const SEED = 20_261_206;
const QUEUES = ["q0", "q1", "q2"] as const;

interface QueueSpec { concurrency: number; rateLimited: boolean }
interface JobSpec { queue: number; inProcess: boolean; delayMs: number; blocked: boolean; priority: number }
type Step = { t: "tick"; ms: number } | { t: "finish"; n: number };

/** True about one time in `n`. */
const oneIn = (n: number) => fc.integer({ min: 1, max: n }).map((k) => k === 1);

const queueSpec: fc.Arbitrary<QueueSpec> = fc.record({
  concurrency: fc.constantFrom(1, 3, 16, 17, 20, 40, 300),
  rateLimited: oneIn(5),
});

const jobSpec: fc.Arbitrary<JobSpec> = fc.record({
  // mostly the first queue, so that jobs pile up ahead of one another; 3: no queue
  queue: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }),
  inProcess: fc.boolean(),
  // often one that comes due while the steps advance the clock (the wall's never do)
  delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12_000 })),
  blocked: oneIn(5),
  priority: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }),
});

/** Jobs first in the first queue that may not start now, in a row: where a claim that reads too few of a queue would stop. */
const wallJob = fc.constantFrom<Partial<JobSpec>>({ delayMs: 30_000, inProcess: true }, { inProcess: false }, { blocked: true, inProcess: true });
const wall = fc.oneof(fc.array(wallJob, { maxLength: 30, size: "max" }), fc.array(wallJob, { minLength: 16, maxLength: 24, size: "max" }));

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 3_000 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("finish" as const), n: fc.integer({ min: 1, max: 5 }) }) },
);

it(`after every alarm, the wake is later than now or nothing may start (fast-check seed ${SEED})`, async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom("fifo" as const, "round-robin" as const),
      fc.integer({ min: 1, max: 60 }),
      // the first queue's concurrency often just above its wall
      fc.tuple(fc.record({ concurrency: fc.constantFrom(1, 3, 17, 20, 25, 40, 300), rateLimited: oneIn(5) }), queueSpec, queueSpec),
      wall,
      fc.array(jobSpec, { minLength: 1, maxLength: 40, size: "max" }),
      fc.array(step, { minLength: 1, maxLength: 8, size: "max" }),
      async (fairness, concurrency, queues, ahead, rest, steps) => {
        const jobs: JobSpec[] = [...ahead.map((a) => ({ queue: 0, inProcess: false, delayMs: 0, blocked: false, priority: 0, ...a })), ...rest];
        const { lane, clock, inside } = await inProcess({ concurrency });
        const g = gate();
        try {
          unwrap(await lane.configure({ fairness }));
          for (const [i, q] of queues.entries()) {
            unwrap(await lane.putQueue(QUEUES[i]!, { concurrency: q.concurrency, rateLimit: q.rateLimited ? { limit: 3, periodMs: 2_000 } : null }));
          }
          // What the blocked jobs wait for: a pull job outside any queue, never claimed.
          unwrap(await lane.enqueue({ id: "dependency", kind: "pulled" }));
          // One at a time, as producers send them: each enqueue's own flush starts what it may.
          for (const [i, j] of jobs.entries()) {
            unwrap(await lane.enqueue({
              id: `j${i}`,
              kind: j.inProcess ? "test.gate" : "pulled",
              payload: { gate: g.key },
              queue: j.queue === 3 ? null : QUEUES[j.queue],
              priority: j.priority,
              ...(j.delayMs > 0 ? { delayMs: j.delayMs } : {}),
              ...(j.blocked ? { dependsOn: [{ id: "dependency" }] } : {}),
            }));
          }
          let finished = 0;
          for (const s of steps) {
            if (s.t === "tick") clock.advance(s.ms);
            else {
              // Complete the oldest running attempts, and wait until each has settled (its outcome no longer in hand).
              const open = g.attempts.slice(finished, finished + s.n);
              finished += open.length;
              await inside(async () => {
                for (const a of open) a.open();
                await Promise.all(open.map((a) => waitForTransition(a.ctx.job.id, (e) => e.to === "settled")));
              });
            }
            await runDurableObjectAlarm(lane);
            const wake = unwrap(await lane.info()).nextWakeAt;
            expect(wake === null || wake > clock.now(), `after ${JSON.stringify(s)}, the wake asks for ${wake === null ? "nothing" : wake - clock.now()} ms from now`).toBe(true);
          }
        } finally {
          await inside(() => {
            for (const a of g.attempts) a.open();
          });
        }
      },
    ),
    { seed: SEED, numRuns: 30 },
  );
}, 300_000);
