/**
 * The waitpoints' property test: after any random interleaving of create (with or without a
 * timeout), complete, the clock's advance with the alarm, restarts and reads, every waitpoint settled
 * exactly once, by the first settlement (a completion, or its timeout once its timeoutAt passed, as a
 * model computes them), reads answer what the model says, `waitpoints.pending` is the model's, the
 * stats counted each settlement once, and the wake is the earliest pending timeout or the first
 * settled one's horizon (7 days: none passes it in a run). Deterministic: fixed seeds.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { DEFAULT_COMPLETED_RETENTION_MS, RETENTION_SLACK_MS } from "../../../src/shared/defaults.js";
import type { Waitpoint } from "../../../src/shared/waitpoint.js";
import { T0, evict, fireAlarm, setup, value, type LaneFixture } from "../../helpers/lane.js";

const SEEDS = [20_261_207, 1, 4_242];
const NUM_RUNS = 12;
const MAX_STEPS = 30;
const IDS = ["a", "b", "c", "d"];

type Op =
  | { t: "create"; id: number; timeoutMs: number | null }
  | { t: "complete"; id: number; result: number }
  | { t: "tick"; ms: number; alarm: boolean }
  | { t: "get"; id: number }
  | { t: "restart" };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant("create" as const), id: fc.nat(IDS.length - 1), timeoutMs: fc.option(fc.integer({ min: 1, max: 3000 })) }),
  fc.record({ t: fc.constant("complete" as const), id: fc.nat(IDS.length - 1), result: fc.integer({ min: 0, max: 9 }) }),
  fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 2000 }), alarm: fc.boolean() }),
  fc.record({ t: fc.constant("get" as const), id: fc.nat(IDS.length - 1) }),
  fc.record({ t: fc.constant("restart" as const) }),
);

/** What the model holds of one waitpoint. */
type Modelled = Omit<Waitpoint, "lane" | "waiters">;

class Model {
  readonly points = new Map<string, Modelled>();
  completed = 0;
  timedOut = 0;

  pending(): number {
    return [...this.points.values()].filter((p) => p.state === "pending").length;
  }

  /** The wake: the earliest pending timeout (now once passed), and the first settled one's horizon plus the slack. */
  wake(now: number): number | null {
    const timeouts = [...this.points.values()].filter((p) => p.state === "pending" && p.timeoutAt !== null).map((p) => Math.max(now, p.timeoutAt!));
    const horizons = [...this.points.values()].filter((p) => p.settledAt !== null).map((p) => p.settledAt! + DEFAULT_COMPLETED_RETENTION_MS + RETENTION_SLACK_MS);
    const terms = [...timeouts, ...horizons];
    return terms.length === 0 ? null : Math.min(...terms);
  }
}

async function apply(fixture: LaneFixture, model: Model, step: Op, context: string): Promise<void> {
  const { stub, clock } = fixture;
  const now = clock.now();
  if (step.t === "create") {
    const id = IDS[step.id]!;
    const answer = value(await stub.createWaitpoint(step.timeoutMs === null ? { id } : { id, timeoutMs: step.timeoutMs }));
    const known = model.points.get(id);
    expect(answer.created, context).toBe(known === undefined);
    if (!known) model.points.set(id, { id, state: "pending", result: null, timeoutAt: step.timeoutMs === null ? null : now + step.timeoutMs, createdAt: now, settledAt: null });
  } else if (step.t === "complete") {
    const id = IDS[step.id]!;
    // A timeout that has passed settles when the alarm runs (the test fires it): a completion before that wins.
    const answer = await stub.completeWaitpoint(id, { result: step.result });
    const known = model.points.get(id);
    if (known && known.state !== "pending") {
      expect(answer.ok ? null : answer.error.code, context).toBe("waitpoint_settled");
    } else {
      expect(value(answer).created, context).toBe(known === undefined);
      if (known) Object.assign(known, { state: "completed", result: step.result, settledAt: now });
      else model.points.set(id, { id, state: "completed", result: step.result, timeoutAt: null, createdAt: now, settledAt: now });
      model.completed++;
    }
  } else if (step.t === "tick") {
    clock.advance(step.ms);
    if (step.alarm) {
      await fireAlarm(stub);
      // The alarm settles each one at its own firing: its settledAt is the clock's now, not its timeoutAt.
      for (const point of model.points.values()) {
        if (point.state === "pending" && point.timeoutAt !== null && point.timeoutAt <= clock.now()) {
          Object.assign(point, { state: "timedOut", settledAt: clock.now() });
          model.timedOut++;
        }
      }
    }
  } else if (step.t === "restart") {
    await evict(fixture);
  }
}

it.each(SEEDS)("settles every waitpoint exactly once, by its first settlement, and counts it once (fast-check seed %i)", async (SEED) => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: MAX_STEPS }), async (steps) => {
      const fixture = await setup();
      const model = new Model();
      for (const step of steps) {
        const context = JSON.stringify(step);
        await apply(fixture, model, step, context);
        for (const id of IDS) {
          const read = await fixture.stub.getWaitpoint(id);
          const known = model.points.get(id);
          if (!known) expect(read.ok ? "found" : read.error.code, `${context}: ${id}`).toBe("waitpoint_not_found");
          else expect(value(read), `${context}: ${id}`).toEqual({ ...known, lane: fixture.name, waiters: 0 });
        }
        const info = value(await fixture.stub.info());
        expect(info.waitpoints, context).toEqual({ pending: model.pending() });
        expect({ completed: info.stats.waitpointsCompleted, timedOut: info.stats.waitpointsTimedOut }, context).toEqual({ completed: model.completed, timedOut: model.timedOut });
        // No job here, and no settled one reaches its horizon (7 days) in a run.
        expect(info.nextWakeAt, `${context}: the wake`).toBe(model.wake(fixture.clock.now()));
      }
      expect(fixture.clock.now() - T0).toBeLessThan(7 * 24 * 3_600_000);
    }),
    { seed: SEED, numRuns: NUM_RUNS },
  );
}, 300_000);
