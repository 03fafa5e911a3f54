/** The worker the test suite runs in workerd: the real app and lanes, plus test executors. */
import { demoExecutors } from "../../src/durable/executors.js";
import { defineLane } from "../../src/durable/lane.js";
import { createApp } from "../../src/worker/app.js";
import { recordTransition, testExecutors } from "./executors.js";
import { deliverOutcome } from "./outcomes.js";

export { LaneRegistry } from "../../src/durable/registry.js";
export { Lane } from "../../src/durable/lane.js";

/** LANE in tests: the demo executors and the controllable test executors. */
export class TestLane extends defineLane({
  executors: { ...demoExecutors, ...testExecutors },
  onTransition: recordTransition,
  log: false,
}) {}

/** HOOK_LANE in tests: outcomes are recorded `completing`, handed to a hook, then settled. */
export class HookLane extends defineLane({
  executors: { ...demoExecutors, ...testExecutors },
  onTransition: recordTransition,
  onOutcome: deliverOutcome,
  log: false,
}) {}

export default createApp();
