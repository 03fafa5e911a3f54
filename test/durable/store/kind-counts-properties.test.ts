/**
 * Counts per kind (`kinds` of the lane) are kept as the jobs change, never counted: after any random
 * sequence of enqueues (one, a batch or a group, of several kinds; a debounced one replacing its
 * key's job with another kind), claims, completions, failures, releases, snoozes, cancels, requeues,
 * lease expiries, sweeps, purges, a failed lane and restarts, they equal a tally of the rows.
 * Deterministic: a fixed seed; a failure prints it with the shrunk path.
 */
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { KindCounts } from "../../../src/shared/job.js";
import { evict, fireAlarm, setup, value, type LaneFixture } from "../../helpers/lane.js";

const SEED = 20_261_204;
const IDS = ["a", "b", "c", "d", "e", "f"];
const KINDS = ["k1", "k2", "k3"];
const QUEUES = ["q1", "q2"];

type Op =
  | { t: "enqueue"; id: number; kind: number; queue: number | null; delayMs: number }
  | { t: "batch" | "group"; ids: number[]; kind: number }
  | { t: "debounce"; key: number; kind: number; queue: number | null }
  | { t: "snooze"; id: number }
  | { t: "restart" }
  | { t: "claim"; max: number; kinds: number[] | null }
  | { t: "complete" | "release" | "cancel" | "requeue"; id: number }
  | { t: "fail"; id: number; retry: boolean }
  | { t: "tick"; ms: number }
  | { t: "sweep" }
  | { t: "purge"; queue: number }
  | { t: "failLane" };

const id = fc.nat(IDS.length - 1);
const kind = fc.nat(KINDS.length - 1);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant("enqueue" as const), id, kind, queue: fc.option(fc.nat(QUEUES.length - 1)), delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2_000 })) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constantFrom("batch" as const, "group" as const), ids: fc.array(id, { minLength: 1, maxLength: 3 }), kind }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("debounce" as const), key: fc.nat(1), kind, queue: fc.option(fc.nat(QUEUES.length - 1)) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("snooze" as const), id }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("restart" as const) }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant("claim" as const), max: fc.integer({ min: 1, max: 3 }), kinds: fc.option(fc.array(kind, { minLength: 1, maxLength: 2 })) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constantFrom("complete" as const, "release" as const, "cancel" as const, "requeue" as const), id }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("fail" as const), id, retry: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 3_000 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("sweep" as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("purge" as const), queue: fc.nat(QUEUES.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("failLane" as const) }) },
);

/** Queued and running jobs per kind, tallied from the rows. */
function tally(fixture: LaneFixture): Promise<Record<string, KindCounts>> {
  return runInDurableObject(fixture.stub, (_lane, state) => {
    const kinds: Record<string, KindCounts> = {};
    for (const row of state.storage.sql.exec<{ kind: string; state: string }>(`SELECT kind, state FROM jobs WHERE state IN ('queued', 'running')`)) {
      const counts = (kinds[row.kind] ??= { queued: 0, running: 0 });
      counts[row.state as keyof KindCounts]++;
    }
    return kinds;
  });
}

async function apply(fixture: LaneFixture, step: Op, tokens: Map<string, string>): Promise<void> {
  const { stub, clock } = fixture;
  const token = (i: number) => tokens.get(IDS[i]!) ?? "never-minted";
  switch (step.t) {
    case "enqueue":
      await stub.enqueue({ id: IDS[step.id], kind: KINDS[step.kind], queue: step.queue === null ? null : QUEUES[step.queue], delayMs: step.delayMs, maxAttempts: 2, backoff: { baseMs: 100, maxMs: 100 }, recovery: { maxRecoveries: 1, windowMs: 5_000 } });
      break;
    case "batch":
      await stub.enqueueBatch({ jobs: step.ids.map((i) => ({ id: IDS[i], kind: KINDS[step.kind] })) });
      break;
    case "group":
      await stub.enqueueGroup(step.ids.map((i) => JSON.stringify({ id: IDS[i], kind: KINDS[step.kind] })));
      break;
    case "debounce":
      await stub.enqueue({ kind: KINDS[step.kind], queue: step.queue === null ? null : QUEUES[step.queue], debounce: { key: `key-${step.key}`, delayMs: 300 } });
      break;
    case "snooze":
      await stub.snooze(IDS[step.id], { token: token(step.id), delayMs: 200 });
      break;
    case "restart":
      await evict(fixture);
      break;
    case "claim": {
      const result = value(await stub.claim({ max: step.max, leaseMs: 1_000, ...(step.kinds ? { kinds: step.kinds.map((k) => KINDS[k]!) } : {}) }));
      for (const job of result.jobs) tokens.set(job.id, job.lease.token);
      break;
    }
    case "complete":
      await stub.complete(IDS[step.id], { token: token(step.id) });
      break;
    case "release":
      await stub.release(IDS[step.id], { token: token(step.id) });
      break;
    case "fail":
      await stub.fail(IDS[step.id], { token: token(step.id), error: "e", retry: step.retry, retryAfterMs: 0 });
      break;
    case "cancel":
      await stub.cancel(IDS[step.id]);
      break;
    case "requeue":
      await stub.requeue(IDS[step.id]);
      break;
    case "tick":
      clock.advance(step.ms);
      await fireAlarm(stub); // lease expiry (a recovery or an interruption) happens on the alarm
      break;
    case "sweep":
      await stub.sweep({ settledBefore: clock.now() + 1 });
      break;
    case "purge":
      await stub.purgeQueue(QUEUES[step.queue]);
      break;
    case "failLane":
      await stub.failLane({ reason: "gone" });
      break;
  }
}

it(`keeps the counts per kind equal to a tally of the rows (fast-check seed ${SEED})`, async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 40, size: "max" }), async (steps) => {
      const fixture = await setup();
      const tokens = new Map<string, string>();
      for (const step of steps) {
        await apply(fixture, step, tokens);
        expect(value(await fixture.stub.info()).kinds, JSON.stringify(step)).toEqual(await tally(fixture));
      }
    }),
    { seed: SEED, numRuns: 25 },
  );
}, 180_000);
