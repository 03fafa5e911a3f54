/**
 * A result over 128 KiB, in a lane that keeps such results in R2 (a pull consumer's `complete`, an
 * in-process executor's return): uploaded under a key of its job and attempt, then written through
 * the fence, the upload settled in the fenced write's transaction (kept by the job, or owed a
 * deletion when the fence refused it: a lost lease, a repeated call, a cancelled job).
 */
import type { ErrorBody, Result } from "../../shared/errors.js";
import { serializeJson } from "../../shared/json.js";
import type { AckItem } from "../../shared/schemas.js";
import { isBig, readHeld } from "./held.js";
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

/** A batch of acks' big results, uploaded: the reference of each by index, the refusal of each whose upload failed, and the keys. */
export type HeldAcks = { held: Map<number, string>; refused: Map<number, ErrorBody>; keys: string[] };

/**
 * Uploads the results over 128 KiB of a batch of acks' completions (not those `refused` already),
 * one after another; null when it has none (the acks apply in their own turn, as before). The caller
 * applies the acks with the references, then calls `landed` with the keys in the same turn.
 */
export function holdAckResults(payloads: PayloadStore, acks: readonly AckItem[], refused: ReadonlyMap<number, ErrorBody> | null): Promise<HeldAcks> | null {
  if (payloads.heldLimit === undefined) return null;
  const big: { index: number; id: string; text: string }[] = [];
  // A result over the held limit is refused naming that limit, not the 128 KiB of a row's value.
  const tooBig = new Map<number, ErrorBody>();
  for (const [index, item] of acks.entries()) {
    if (item.op !== "complete" || refused?.has(index)) continue;
    const json = serializeJson(item.result, "result", payloads.heldLimit);
    if (!json.ok) {
      if (json.error.code === "payload_too_large") tooBig.set(index, json.error);
    } else if (isBig(json.value, payloads.heldLimit)) big.push({ index, id: item.id, text: json.value });
  }
  if (big.length === 0 && tooBig.size === 0) return null;
  return (async () => {
    const out: HeldAcks = { held: new Map(), refused: new Map([...(refused ?? []), ...tooBig]), keys: [] };
    for (const { index, id, text } of big) {
      const generation = payloads.generationOf(id);
      if (generation === null) continue; // no such job: its item answers job_not_found, as any
      const held = await payloads.hold(id, `result-${generation}`, text);
      if (!held.ok) out.refused.set(index, held.error);
      else {
        out.held.set(index, held.value);
        out.keys.push(readHeld(held.value).key);
      }
    }
    return out;
  })();
}
