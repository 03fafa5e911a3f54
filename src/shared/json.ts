import { MAX_PAYLOAD_BYTES } from "./defaults.js";
import { fail, type Result } from "./errors.js";
import type { Json } from "./job.js";

const encoder = new TextEncoder();

/** Whether a string's UTF-8 encoding is over `limit` bytes; encodes only when it could be. */
export function exceedsBytes(text: string, limit: number): boolean {
  // n UTF-16 units encode to at least n and at most 3n bytes.
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  return encoder.encode(text).byteLength > limit;
}

/** The length of a string's UTF-8 encoding, without encoding it. */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A surrogate pair (2 units) is 4 bytes: 2 counted already, 1 more for each unit.
    if (unit >= 0x80) bytes += unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}

/**
 * Serializes a payload, result, checkpoint or progress for storage: `undefined` is stored as null;
 * anything `JSON.stringify` refuses (cycles, BigInt, too deep) is `invalid_request`; more than
 * `limit` bytes (default 128 KiB) is `payload_too_large`.
 */
export function serializeJson(value: unknown, what: string, limit = MAX_PAYLOAD_BYTES): Result<string> {
  let text: string | undefined;
  try {
    text = JSON.stringify(value ?? null);
  } catch {
    return fail("invalid_request", `${what} is not a JSON value`, [{ path: [what], message: "not serializable as JSON" }]);
  }
  if (text === undefined) {
    return fail("invalid_request", `${what} is not a JSON value`, [{ path: [what], message: "not serializable as JSON" }]);
  }
  if (exceedsBytes(text, limit)) {
    return fail("payload_too_large", `${what} is larger than ${limit} bytes serialized`);
  }
  return { ok: true, value: text };
}

/** JSON with object keys sorted, so that two equal values compare equal as strings. */
export function canonicalJson(value: Json | undefined): string {
  return JSON.stringify(value ?? null, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}
