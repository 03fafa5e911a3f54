/**
 * Big payloads for the pull-worker runtime (docs/api.md "Big payloads"): a claim of several jobs
 * leaves out each payload and dependency's result held in R2 (`payloadRef`, `resultRef`); a handler
 * gets them whole all the same, read back over HTTP before it runs, as an in-process executor does.
 */
import type { DependencyOutcome, Json } from "../shared/job.js";
import type { WorkerContext, WorkerHandler } from "./worker-attempt.js";

/** Reads a job's payload or result whole (worker-http.ts `value`); `lane`: the job's, the worker's own by default. */
export type ReadValue = (which: "payload" | "result", id: string, lane: string | undefined) => Promise<Json>;

/** A claimed job's payload and dependencies' results, whole: each one held in R2 read back. Null when nothing is held. */
export function wholeOfPulled(job: WorkerContext["job"], read: ReadValue): Promise<{ payload: Json; dependencies: DependencyOutcome[] }> | null {
  const held = (d: DependencyOutcome) => "resultRef" in d && d.resultRef !== undefined;
  if (job.payloadRef == null && !job.dependencies.some(held)) return null;
  return Promise.all([
    job.payloadRef == null ? job.payload : read("payload", job.id, undefined),
    Promise.all(job.dependencies.map(async (d): Promise<DependencyOutcome> => {
      if (!held(d) || !("id" in d)) return d;
      const { resultRef: _, ...rest } = d;
      return { ...rest, result: await read("result", d.id, d.lane) };
    })),
  ]).then(([payload, dependencies]) => ({ payload, dependencies }));
}

/** A single-job handler that gets its job's held payload and dependencies' results whole (a read that fails fails the attempt). */
export function withWhole(handler: WorkerHandler, read: ReadValue): WorkerHandler {
  return (payload, ctx) => {
    const whole = wholeOfPulled(ctx.job, read);
    if (whole === null) return handler(payload, ctx);
    return whole.then((w) => handler(w.payload, { ...ctx, job: { ...ctx.job, payload: w.payload, dependencies: w.dependencies } }));
  };
}
