/** A TestLane with in-process executors, on a manual clock, and the calls the dispatcher's tests share. */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { ManualClock } from "../../src/shared/clock.js";
import { unwrap } from "../../src/shared/errors.js";
import type { Job } from "../../src/shared/job.js";
import { waitForTransition } from "./executors.js";
import { inject, T0 } from "./lane.js";
import { PAYLOADS_LANE_PREFIX } from "./test-worker.js";

export const START = T0;

/** `payloads`: the lane sees the PAYLOADS bucket (big payloads in R2). */
export async function setup(options: { concurrency?: number; payloads?: boolean } = {}) {
  const name = `${options.payloads ? PAYLOADS_LANE_PREFIX : ""}dispatch-${crypto.randomUUID()}`;
  const lane = env.LANE.getByName(name);
  const clock = new ManualClock(START);
  await inject(lane, clock);
  if (options.concurrency) unwrap(await lane.configure({ concurrency: options.concurrency }));
  const enqueue = async (request: Record<string, unknown>): Promise<Job> => unwrap(await lane.enqueue(request)).job;
  const get = async (id: string): Promise<Job> => unwrap(await lane.getJob(id));
  /**
   * Runs `fn` in the lane's I/O context. A promise settled by a lane (an executor, a transition) can
   * only be awaited there: workerd forbids crossing I/O contexts, even within one isolate.
   */
  const inside = <T>(fn: () => T | Promise<T>): Promise<T> => runInDurableObject(lane, () => fn());
  const waitFor = (id: string, predicate: Parameters<typeof waitForTransition>[1]) => inside(() => waitForTransition(id, predicate));
  const settled = async (id: string): Promise<Job> => {
    await waitFor(id, (e) => e.to === "settled");
    return get(id);
  };
  return { lane, name, clock, enqueue, get, settled, inside, waitFor };
}

