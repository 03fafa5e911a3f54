/**
 * The fence (docs/concepts.md): a write on behalf of an attempt touches its job only while that attempt's
 * token holds an unexpired lease on a running job nobody asked to cancel. Every fenced statement,
 * single or batch, builds its WHERE from `fenceClause`; when one matches nothing, `explainMiss`
 * (pure: it reads the row, writes nothing) says why, and the caller does what the answer asks.
 */
import { fail, type ErrorBody } from "../../shared/errors.js";
import type { AttemptEnd } from "../store/job-row.js";
import type { JobState, Outcome } from "../../shared/job.js";

/**
 * The fence over the `jobs` row, given the SQL expressions of the job id, the token and now: bound
 * parameters in a single statement (`?1`…), columns of a `json_each` list in a batch.
 */
export function fenceClause(id: string, token: string, now: string): string {
  return `jobs.id = ${id} AND jobs.state = 'running' AND jobs.lease_token = ${token} AND jobs.lease_until > ${now}
    AND jobs.cancel_requested = 0`;
}

/** The fence of a single statement: binds ?1 the job id, ?2 the token, ?3 now. */
export const FENCE = fenceClause("?1", "?2", "?3");

/** The writes an attempt's holder makes through the fence. */
export type FenceOp = "renew" | "complete" | "fail" | "release" | "snooze" | "progress" | "checkpoint";

/** What `explainMiss` reads of the row. */
export interface FenceRow {
  state: JobState;
  outcome: Outcome | null;
  lease_token: string | null;
  lease_until: number | null;
  cancel_requested: number;
  attempt_end: AttemptEnd | null;
}

/**
 * Why a fenced write matched nothing:
 * - `repeat`: the same token repeating a settling write it already made (complete after complete,
 *   fail after fail, whether that fail settled the job or queued a retry): answer the job as it is.
 * - `cancel`: the holder of a cancel-requested running job spoke; the caller settles the job
 *   `cancelled`, then answers `job_cancelled`.
 * - `refuse`: the refusal to answer, in docs/concepts.md's order: settled, cancelled, superseded, expired.
 */
export type FenceMiss = { kind: "repeat" } | { kind: "cancel"; error: ErrorBody } | { kind: "refuse"; error: ErrorBody };

export function explainMiss(row: FenceRow | undefined, id: string, token: string, op: FenceOp, now: number): FenceMiss {
  if (!row) return refuse(fail("job_not_found", `no job ${id} in this lane`).error);
  const own = row.lease_token === token;
  if (row.state === "settled" || row.state === "completing") {
    if (own && row.outcome === "cancelled") return refuse(cancelled(id));
    const repeated = (op === "complete" && row.outcome === "completed") || (op === "fail" && row.outcome === "failed");
    if (own && repeated) return { kind: "repeat" };
    return refuse(fail("job_settled", `job ${id} is already settled (${row.outcome})`).error);
  }
  if (row.state === "running" && own && row.cancel_requested === 1) return { kind: "cancel", error: cancelled(id) };
  if (!own) return refuse(fail("lease_superseded", `the token is not the current lease of job ${id}`).error);
  // Still the job's last token, but the job went back to queued: a fail that queued a retry may be
  // repeated (its answer may have been cut off); after a release or a recovery the attempt is over.
  if (row.state === "queued" && op === "fail" && row.attempt_end === "retry") return { kind: "repeat" };
  if (row.lease_until !== null && row.lease_until <= now) {
    return refuse(fail("lease_expired", `the lease of job ${id} expired at ${row.lease_until}`).error);
  }
  return refuse(fail("lease_superseded", `the attempt holding this token of job ${id} has already ended`).error);
}

function refuse(error: ErrorBody): FenceMiss {
  return { kind: "refuse", error };
}

function cancelled(id: string): ErrorBody {
  return fail("job_cancelled", `job ${id} was cancelled`).error;
}
