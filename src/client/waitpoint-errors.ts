/**
 * A completion refused because the waitpoint had already settled is no failure for most callers (a
 * webhook delivered twice, two approvers racing): the refusal carries the waitpoint as it is, the first
 * settlement, and this reads it without narrowing `QueueError.details` by hand.
 */
import { QueueError } from "../shared/errors.js";
import type { Waitpoint } from "../shared/waitpoint.js";

/** The waitpoint a `waitpoint_settled` refusal carries, as it is; null for any other error or value. */
export function settledWaitpoint(error: unknown): Waitpoint | null {
  if (!(error instanceof QueueError) || error.code !== "waitpoint_settled") return null;
  const details = error.details;
  return details !== undefined && "waitpoint" in details ? details.waitpoint : null;
}
