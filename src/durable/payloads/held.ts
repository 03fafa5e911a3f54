/**
 * How a job's row points at a payload or result held in R2: its `payload` (or `result`) column holds
 * `@<key> <bytes> <sha256>` instead of JSON text. No JSON text starts with `@`, so one character tells
 * the two apart: a row whose value is in the column costs nothing more to read. Pure: no SQL, no R2.
 */
import { MAX_PAYLOAD_BYTES } from "../../shared/defaults.js";
import { exceedsBytes } from "../../shared/json.js";
import type { PayloadRef } from "../../shared/payload-ref.js";

/** The first character of a reference (never the first of JSON text). */
export const HELD_MARK = "@";
const HELD_CODE = 0x40;

/** What a reference says: the object's key, the size of its JSON, and the SHA-256 of its canonical JSON (identity). */
export interface Held {
  key: string;
  bytes: number;
  hash: string;
}

/** The column text of a reference. Keys hold no space (names match the name pattern, which has none). */
export function heldText(held: Held): string {
  return `${HELD_MARK}${held.key} ${held.bytes} ${held.hash}`;
}

/** Whether a column's text is a reference rather than JSON. */
export function isHeld(text: string | null): text is string {
  return text !== null && text.charCodeAt(0) === HELD_CODE;
}

/** The reference a column's text holds (check `isHeld` first). */
export function readHeld(text: string): Held {
  const space = text.indexOf(" ");
  const last = text.lastIndexOf(" ");
  return { key: text.slice(1, space), bytes: Number(text.slice(space + 1, last)), hash: text.slice(last + 1) };
}

/**
 * The `payloadRef` (or `resultRef`) of a job read from its row: `{bytes}` as answers show it, with the
 * object's key kept on it unenumerable, so that the lane can read the object back (`PayloadStore.whole`)
 * while no answer, JSON or RPC, ever carries the key.
 */
export function refOf(text: string): PayloadRef {
  const held = readHeld(text);
  const ref: PayloadRef = { bytes: held.bytes };
  Object.defineProperty(ref, "key", { value: held.key, enumerable: false });
  return ref;
}

/** The key a `refOf` reference keeps (undefined: a reference built elsewhere, without one). */
export function keyOfRef(ref: PayloadRef): string | undefined {
  return (ref as PayloadRef & { key?: string }).key;
}

/** Two payloads' column texts hold the same value: equal text, or two references to equal content. */
export function sameHeldPayload(a: string, b: string): boolean | undefined {
  const heldA = isHeld(a);
  const heldB = isHeld(b);
  if (!heldA && !heldB) return undefined; // both JSON: the caller compares them as JSON
  if (heldA !== heldB) return false; // over 128 KiB against at most 128 KiB: never the same content
  return readHeld(a).hash === readHeld(b).hash;
}

/** Whether a value's JSON text goes to R2: over 128 KiB in a lane that keeps such values there (`heldLimit` set). */
export function isBig(text: string, heldLimit: number | undefined): boolean {
  return heldLimit !== undefined && exceedsBytes(text, MAX_PAYLOAD_BYTES);
}
