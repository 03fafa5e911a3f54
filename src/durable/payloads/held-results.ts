/**
 * A result over 128 KiB, in a lane that keeps such results in R2 (a pull consumer's `complete`, an
 * in-process executor's return): uploaded under a key of its job and attempt, then written through
 * the fence, the upload settled in the fenced write's transaction (kept by the job, or owed a
 * deletion when the fence refused it: a lost lease, a repeated call, a cancelled job).
 */
import type { Result } from "../../shared/errors.js";
import { readHeld } from "./held.js";
import type { PayloadStore } from "./payload-store.js";

/** Uploads `text` (the result's JSON), then completes through `complete` with the reference in one transaction with the settlement. */
export async function completeHeld<T>(payloads: PayloadStore, jobId: string, text: string, complete: (json: string) => Result<T>): Promise<Result<T>> {
  const generation = payloads.generationOf(jobId);
  // No such job: the fence says so, writing nothing.
  if (generation === null) return complete("null");
  const held = await payloads.hold(jobId, `result-${generation}`, text);
  if (!held.ok) return held;
  const key = readHeld(held.value).key;
  try {
    return payloads.transaction(() => {
      const written = complete(held.value);
      payloads.landed([key]);
      return written;
    });
  } catch (error) {
    payloads.landed([key]);
    throw error;
  }
}
