/**
 * A batch kind's term of the wake is a field of the one wake's terms (wake/terms.ts), the flush
 * step's (wake/alarm-steps.ts): when the pump that starts batches throws, the step backs off, and the
 * batch waits for the step's retry with it, or the alarm would come back at once, again and again,
 * for a pump that is not run. Tested on the terms themselves: a claim that throws in the lane leaves
 * its job running (recovered at its lease's end), so no due batch would be left to show it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { ALARM_STEP_BACKOFF_BASE_MS } from "../../../src/shared/defaults.js";
import { AlarmSteps } from "../../../src/durable/wake/alarm-steps.js";
import { earliest, wakeTerms, type WakeInputs } from "../../../src/durable/wake/terms.js";
import { START } from "../../helpers/dispatch.js";

beforeEach(() => void vi.spyOn(console, "error").mockImplementation(() => {}));
afterEach(() => vi.restoreAllMocks());

const memory = { outcomesWaiting: false, heldCancels: 0, heldClaims: 0, reportDueAt: null, stepRetryAt: null };

/** The inputs of a lane with nothing to do but a batch kind's due jobs, ready at `nextBatch`. */
function inputs(nextBatch: number | null, laneToken: number | null = null): WakeInputs {
  return {
    completing: 0, lease: null, running: 0, cancels: 0, dueExecutorHead: false, futureHead: null, expiry: null, laneToken, queueToken: null,
    retentionPass: null, nextScheduleFire: null, nextNotice: null, nextBatch,
  };
}

describe("the batch term of the wake", () => {
  it("is the instant a batch is ready, never before the lane's bucket has a token again", () => {
    expect(wakeTerms(inputs(START + 1000), memory, START).batch).toBe(START + 1000);
    expect(earliest(wakeTerms(inputs(START + 1000), memory, START))).toBe(START + 1000);
    expect(wakeTerms(inputs(START + 1000, START + 1500), memory, START).batch).toBe(START + 1500);
    expect(wakeTerms(inputs(null, START + 1500), memory, START).batch).toBeNull();
  });

  it("waits for the flush step's retry when the pump threw", () => {
    const clock = new ManualClock(START);
    const steps = new AlarmSteps("batch-wake", clock);
    steps.run("flush", () => {
      throw new Error("the pump threw");
    });
    const retryAt = START + ALARM_STEP_BACKOFF_BASE_MS;
    expect(steps.retryAt()).toBe(retryAt);
    const deferred = steps.defer(wakeTerms(inputs(START), { ...memory, stepRetryAt: steps.retryAt() }, START));
    expect(deferred.batch).toBe(retryAt);
    expect(earliest(deferred)).toBe(retryAt);
  });
});
