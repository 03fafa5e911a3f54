/**
 * Dead letters (docs/api.md "Dead letters"): the kind and id of a copy, and the one refusal a lane's
 * `deadLetter` setting has beyond its schema (a lane that names itself), said alike by the router
 * before any shard changes and by each lane (which trusts no caller).
 */
import { fail, type ErrorBody } from "./errors.js";

/** The kind of every copy. */
export const DEAD_LETTER_KIND = "deadletter";

/**
 * The longest copy id a lane makes and a route takes: a copy of a copy grows by its lane's name each
 * time, so a bound must be stated; a copy whose id would pass it is not made (and logged), where a
 * cycle of dead-letter lanes whose copies keep failing would otherwise copy forever.
 */
export const MAX_DEAD_LETTER_ID_CHARS = 4096;

/** A copy's id in its dead-letter lane: `<lane>.<id>`. */
export function deadLetterId(lane: string, id: string): string {
  return `${lane}.${id}`;
}

/** The refusal of a patch whose `deadLetter` names `lane` itself (null: none). */
export function selfDeadLetter(lane: string, patch: { deadLetter?: { lane: string } | null | undefined }): { ok: false; error: ErrorBody } | null {
  if (patch.deadLetter?.lane !== lane) return null;
  const message = "deadLetter.lane must name another lane: a lane cannot be its own dead-letter lane";
  return fail("invalid_request", message, [{ path: ["deadLetter", "lane"], message }]);
}
