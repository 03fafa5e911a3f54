/**
 * The waitpoint of a job's in-process wait (`ctx.waitFor(name)`, in process and in createWorker):
 * `<job id>.<name>`. A name holding a `.` is refused, or job `a`'s wait `b.c` and job `a.b`'s wait
 * `c` would share the waitpoint `a.b.c`; job ids may hold dots, so the split is at the last one.
 */
import { QueueError } from "./errors.js";
import { WAITPOINT_ID_PATTERN } from "./waitpoint.js";

/** Job `jobId`'s wait `name` as a waitpoint id, or `invalid_request`. */
export function waitpointIdOf(jobId: string, name: unknown): string {
  const id = `${jobId}.${String(name)}`;
  if (typeof name !== "string" || name.length === 0 || name.includes(".") || !WAITPOINT_ID_PATTERN.test(id)) {
    throw new QueueError("invalid_request", `waitFor ${String(name)}: ${id} is not a waitpoint id (a wait's name holds no '.')`);
  }
  return id;
}
