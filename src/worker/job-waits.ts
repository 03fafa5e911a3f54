/**
 * Waiting for a job over HTTP (docs/api.md "Results", `?waitMs`): the read of a job, held in its lane
 * until it settles or `waitMs` passes, and the same wait after an enqueue. `readJob` is the handler of
 * every route that reads one job, `GET …/jobs/{id}` and a signed link's read alike.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { EnqueueAnswer } from "../shared/answers.js";
import { MAX_JOB_WAIT_MS } from "../shared/defaults.js";
import { unwrap } from "../shared/errors.js";
import type { Job } from "../shared/job.js";
import { waitForJob } from "../routing/job-waits.js";
import { routerOf } from "./lane-call.js";
import type { AppEnv } from "./openapi.js";

/** `waitMs` as a query string carries it: digits only (no sign, fraction, exponent or blank), 0..30000. */
export const WaitQuery = z.object({
  waitMs: z
    .string()
    .regex(/^[0-9]{1,6}$/, `an integer 0..${MAX_JOB_WAIT_MS}`)
    .transform(Number)
    .pipe(z.number().int().min(0).max(MAX_JOB_WAIT_MS))
    .optional()
    .openapi({
      param: { name: "waitMs", in: "query" },
      type: "integer",
      minimum: 0,
      maximum: MAX_JOB_WAIT_MS,
      description: `hold the answer until the job is settled, at most this many ms (0..${MAX_JOB_WAIT_MS}; default 0: at once)`,
    }),
});

/**
 * Job `id` of `lane`: at once without `waitMs` (or with 0); else once it is settled, or as it stands
 * once `waitMs` has passed. A refusal (404 `job_not_found`) is thrown for the app's error handler.
 */
export async function readJob(c: Context<AppEnv>, lane: string, id: string, waitMs: number | undefined): Promise<Job> {
  const router = routerOf(c);
  if (!waitMs) return unwrap(await router.byId(lane, id, (stub) => stub.getJob(id)));
  return unwrap(await waitForJob(router, lane, id, waitMs, c.req.raw.signal));
}

/**
 * An enqueue's answer after the wait: its status as the enqueue said (201 `queued`, 200 `duplicate`,
 * `debounced`, …), its job (the one the answer names) once settled or as it stands once `waitMs` has
 * passed. A job gone meanwhile (deleted by a purge) keeps the enqueue's own view of it.
 */
export async function waitAfterEnqueue(c: Context<AppEnv>, lane: string, answer: EnqueueAnswer, waitMs: number | undefined): Promise<EnqueueAnswer> {
  if (!waitMs || answer.job.state === "settled") return answer;
  const job = await waitForJob(routerOf(c), lane, answer.job.id, waitMs, c.req.raw.signal);
  return job.ok ? { ...answer, job: job.value } : answer;
}
