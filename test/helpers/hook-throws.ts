/**
 * Hooks and observers that throw what `demo.throw` throws (values `String()` cannot be trusted
 * with, and plain ones), for THROWING_LANE. A test names what each throws; the hooks record what
 * they were told before they throw, so a test can see that nothing after a throw was lost.
 */
import { DEMO_THROWS, type DemoThrow } from "../../src/worker/demo-executors.js";
import type { LostEvent, TransitionEvent } from "../../src/durable/lane.js";
import type { Job } from "../../src/shared/job.js";
import { recordTransition } from "./executors.js";

export const hookThrows: { outcome: DemoThrow | null; transition: DemoThrow | null; lost: DemoThrow | null } = {
  outcome: null,
  transition: null,
  lost: null,
};

export const told = { outcomes: [] as Job[], transitions: [] as TransitionEvent[], lost: [] as LostEvent[] };

function throwIf(name: DemoThrow | null): void {
  if (name !== null) throw DEMO_THROWS[name]();
}

export const throwingHooks = {
  onOutcome: (job: Job) => {
    told.outcomes.push(job);
    throwIf(hookThrows.outcome);
  },
  onTransition: (event: TransitionEvent) => {
    told.transitions.push(event);
    recordTransition(event); // so that tests can wait for transitions as on any test lane
    throwIf(hookThrows.transition);
  },
  onLost: (event: LostEvent) => {
    told.lost.push(event);
    throwIf(hookThrows.lost);
  },
};
