/**
 * An enqueue whose payload is over 128 KiB, in a lane that keeps such payloads in R2: the object is
 * uploaded first, then the row that points at it is written, and in that write's transaction the
 * upload is settled (kept by its job, or owed a deletion: a duplicate, a conflict, a refusal).
 * Identity compares payloads by the hash of their canonical JSON, so an id enqueued again with the
 * same payload is a duplicate without a second upload.
 */
import type { Result } from "../../shared/errors.js";
import type { Json } from "../../shared/job.js";
import type { JobSpec } from "../../shared/job-spec.js";
import { canonicalJson, utf8Length } from "../../shared/json.js";
import { heldText, readHeld } from "./held.js";
import type { PayloadStore } from "./payload-store.js";

/** What the held write answers: the new job's payload value rides along, since its spec holds the reference. */
export type HeldWrite<T> = (spec: JobSpec) => Result<T> | Promise<Result<T>>;

/**
 * Writes `spec` (its `payload` the JSON text to hold) through `write` with its payload in R2. `owners`
 * names the jobs a write's answer says it pointed at the object (a debounce replaced another job's).
 * A refused upload is 503 `payload_store_unavailable`, nothing written.
 */
export async function writeHeld<T>(
  payloads: PayloadStore,
  store: { row(id: string): unknown; transactionSync<R>(body: () => R): R },
  spec: JobSpec,
  payload: Json | undefined,
  write: HeldWrite<T>,
  owners: (answer: Result<T>) => string[],
): Promise<Result<T>> {
  const identity = canonicalJson(payload);
  const { heldPayload: _, ...plain } = spec;
  // An id that exists answers as any enqueue of it (duplicate or conflict), compared by hash: no upload.
  if (store.row(spec.id)) {
    const hash = await payloads.hashOf(identity);
    if (store.row(spec.id)) return write({ ...plain, payload: heldText({ key: "", bytes: utf8Length(spec.payload), hash }) });
  }
  const held = await payloads.hold(spec.id, "payload", spec.payload, identity);
  if (!held.ok) return held;
  const key = readHeld(held.value).key;
  const pointed = { ...plain, payload: held.value };
  let written: Result<T> | Promise<Result<T>> | undefined;
  // In this turn: the write and the upload's settlement in one transaction.
  let now: boolean;
  try {
    now = store.transactionSync(() => {
      written = write(pointed);
      if (written instanceof Promise) return false;
      payloads.landed([key], owners(written));
      return true;
    });
  } catch (error) {
    payloads.landed([key]); // nothing written: the object is owed a deletion
    throw error;
  }
  if (now) return written!;
  // Out of turn (dependencies registered first): settled once written; a kill between leaves the
  // upload recorded, and the sweep keeps it for the job its key names.
  try {
    const answer = await written!;
    payloads.landed([key], owners(answer));
    return answer;
  } catch (error) {
    payloads.landed([key]);
    throw error;
  }
}


