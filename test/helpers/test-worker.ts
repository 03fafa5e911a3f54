/** The worker the test suite runs in workerd: the real app and lanes, plus test executors and a test clock. */
import { defineLane, Lane } from "../../src/durable/lane.js";
import type { Clock, Entropy } from "../../src/shared/clock.js";
import type { SwitchyardEnv } from "../../src/durable/env.js";
import { createWorker } from "../../src/worker/worker.js";
import { demoExecutors } from "../../src/worker/demo-executors.js";
import { recordLost, recordTransition, testExecutors } from "./executors.js";
import { testBatchExecutors } from "./batch-executors.js";
import { throwingHooks } from "./hook-throws.js";
import { deliverOutcome } from "./outcomes.js";
import { kindExecutors, testKinds } from "./kinds.js";

export { LaneRegistry } from "../../src/durable/registry.js";

/**
 * Clocks a lane of that name takes from its very start (before its start-up work, which runs after
 * its first storage read): for tests that restart a lane and must not let the new instance run a
 * moment on the platform's clock. Tests and lanes share one isolate.
 */
export const startClocks = new Map<string, Clock>();

/**
 * A lane whose clock and entropy a test can swap (a manual clock, deterministic tokens). Only test
 * classes have `useClock`: the production lane's RPC surface has no such door.
 */
/** Lanes of these names start as under `RECORDING = "off"` (a deploy that turned recording off). */
export const recordingOff = new Set<string>();

/**
 * Lanes whose names start with this prefix see the `PAYLOADS` bucket (big payloads in R2); every other
 * lane of the suite runs as a Worker without it (413 over 128 KiB), as the suite was written for.
 */
export const PAYLOADS_LANE_PREFIX = "r2-";

function withPayloadsFor(name: string | undefined, env: SwitchyardEnv): SwitchyardEnv {
  return name?.startsWith(PAYLOADS_LANE_PREFIX) ? env : { ...env, PAYLOADS: undefined };
}

export function testable(base: typeof Lane) {
  return class TestableLane extends base {
    constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
      super(ctx, withPayloadsFor(ctx.id.name, ctx.id.name !== undefined && recordingOff.has(ctx.id.name) ? { ...env, RECORDING: "off" } : env));
      const clock = ctx.id.name === undefined ? undefined : startClocks.get(ctx.id.name);
      if (clock) this.time.clock = clock;
    }
    useClock(clock: Clock, entropy?: Entropy): void {
      this.time.clock = clock;
      if (entropy) this.time.entropy = entropy;
      this.wake.know(undefined);
    }
    /**
     * Learns the stored alarm, as a lane does at its start in production (`useClock` forgets it, so
     * that every enqueue after it flushes: tests of the quiet paths call this after it).
     */
    async knowStoredAlarm(): Promise<void> {
      this.wake.know(await this.ctx.storage.getAlarm());
    }
    /** Resolves once the lane is done telling the registry that it has work (the watch list of the cron's alarm check). */
    async alarmWatchSettled(): Promise<void> {
      await this.alarmWatch.settled();
    }
    /** Resolves once no metrics report is in flight; answers how many this instance has sent. */
    async metricsSettled(): Promise<number> {
      await this.reporter.settled();
      return this.reporter.sent;
    }
  };
}
export type TestableLane = InstanceType<ReturnType<typeof testable>>;

/**
 * LANE in tests: the demo executors and the controllable test executors. The suite's lanes send no
 * metrics reports (their wakes are their jobs' alone, which tests pin to the millisecond); METRICS_LANE does.
 */
export class TestLane extends testable(
  defineLane({ executors: { ...demoExecutors, ...testExecutors, ...kindExecutors, ...testBatchExecutors }, kinds: testKinds, onTransition: recordTransition, onLost: recordLost, log: false, abortGraceMs: 200, metricsReports: false }),
) {}

/** PLAIN_LANE in tests: no executors (pull-only semantics). */
export class PlainLane extends testable(defineLane({ kinds: testKinds, metricsReports: false })) {}

/** METRICS_LANE in tests: LANE's executors, and metrics reports to the registry as in production. */
export class MetricsLane extends testable(defineLane({ executors: { ...demoExecutors, ...testExecutors }, onTransition: recordTransition, log: false, abortGraceMs: 200 })) {}

/** QUIET_LANE in tests: no executors, and its recording (history and metrics) off by its class. */
export class QuietLane extends testable(defineLane({ recording: false })) {}

/** HOOK_LANE in tests: outcomes are recorded `completing`, handed to a hook, then settled. */
export class HookLane extends testable(
  defineLane({
    executors: { ...demoExecutors, ...testExecutors },
    onTransition: recordTransition,
    onOutcome: deliverOutcome,
    log: false,
    metricsReports: false,
  }),
) {}

/** THROWING_LANE in tests: its outcome hook and observers throw what a test names (hook-throws.ts). */
export class ThrowingLane extends testable(
  defineLane({ executors: { ...demoExecutors, ...testExecutors }, ...throwingHooks, log: false, abortGraceMs: 200, metricsReports: false }),
) {}

export default createWorker({ lane: TestLane });
