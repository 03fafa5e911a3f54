/**
 * The waitpoints' chaos run's workload, all of it drawn from one seed: waitpoints over three lanes
 * (one sharded) with a fate each, and the jobs that wait on them, through `dependsOn` at their
 * enqueue or through the fenced wait route from a pull consumer. Times are offsets (ms) from the
 * run's start; the run sends each request at its offset, whatever the runtime is going through.
 */
import type { Prng } from "./prng.js";

export const WAIT_KIND = "chaos.waiter";

/**
 * - complete: created, then completed once;
 * - twice: created, then completed twice (at once or a moment apart), two results: the first wins;
 * - timeout: created with a timeout, never completed;
 * - race: created with a timeout, completed around the moment it times out: either may win;
 * - early: completed before anything created it or waited on it (complete-before-create), and
 *   sometimes created again after that (which answers it as it is).
 */
export type Fate = "complete" | "twice" | "timeout" | "race" | "early";

export interface PlannedWaitpoint {
  lane: string;
  id: string;
  fate: Fate;
  /** When it is created (null: never by a create; the early ones). */
  createAt: number | null;
  timeoutMs: number | null;
  /** When each completion is sent, in the order of their results (`{wp, n}`, n from 1). */
  completeAt: number[];
}

export interface PlannedJob {
  lane: string;
  id: string;
  waitpoint: PlannedWaitpoint;
  /** deps: `dependsOn` its waitpoint at its enqueue (demo.deps); route: a pull consumer's wait. */
  via: "deps" | "route";
  policy: "fail" | "ignore";
  /** When it is enqueued (a deps job: once its waitpoint is known to exist, at the earliest). */
  enqueueAt: number;
}

export interface Plan {
  waitpoints: PlannedWaitpoint[];
  jobs: PlannedJob[];
}

export const completionResult = (wp: PlannedWaitpoint, n: number) => ({ wp: wp.id, n });

export function plan(rng: Prng, lanes: readonly string[], counts: { waitpoints: number; jobs: number }, spreadMs: number): Plan {
  const fates: Fate[] = ["complete", "complete", "twice", "twice", "timeout", "timeout", "race", "early", "early"];
  const waitpoints = Array.from({ length: counts.waitpoints }, (_, i): PlannedWaitpoint => {
    const fate = rng.pick(fates);
    const lane = rng.pick(lanes);
    const id = `wp-${i}.${fate}`;
    const createAt = rng.int(0, spreadMs / 4);
    switch (fate) {
      case "complete": {
        const at = createAt + rng.int(500, spreadMs / 2);
        return { lane, id, fate, createAt, timeoutMs: rng.chance(0.5) ? null : 600_000, completeAt: [at] };
      }
      case "twice": {
        const at = createAt + rng.int(500, spreadMs / 2);
        // At once (a race the lane decides) or a moment apart (the second is refused).
        return { lane, id, fate, createAt, timeoutMs: null, completeAt: [at, rng.chance(0.5) ? at : at + rng.int(1, 2_000)] };
      }
      case "timeout":
        return { lane, id, fate, createAt, timeoutMs: rng.int(2_000, spreadMs / 2), completeAt: [] };
      case "race": {
        const timeoutMs = rng.int(2_000, spreadMs / 2);
        return { lane, id, fate, createAt, timeoutMs, completeAt: [createAt + timeoutMs + rng.int(-400, 400)] };
      }
      case "early": {
        const at = rng.int(0, spreadMs / 8);
        return { lane, id, fate, createAt: rng.chance(0.5) ? at + rng.int(100, spreadMs / 2) : null, timeoutMs: null, completeAt: [at] };
      }
    }
  });
  const jobs = Array.from({ length: counts.jobs }, (_, i): PlannedJob => {
    // Every waitpoint gets a waiter first, then the rest share them.
    const waitpoint = i < waitpoints.length ? waitpoints[i]! : rng.pick(waitpoints);
    const via = rng.chance(0.5) ? "deps" : "route";
    // A wait route's waitpoint is in the job's lane; a dependsOn item may name any lane.
    const lane = via === "route" ? waitpoint.lane : rng.pick(lanes);
    const first = Math.min(waitpoint.createAt ?? Infinity, ...waitpoint.completeAt);
    // Some wait before their waitpoint settles, some after (it passes at once).
    const enqueueAt = via === "deps" ? first + rng.int(0, spreadMs / 2) : rng.int(0, spreadMs / 2);
    return { lane, id: `job-${i}.${via}`, waitpoint, via, policy: via === "deps" && rng.chance(0.3) ? "fail" : "ignore", enqueueAt };
  });
  return { waitpoints, jobs };
}
