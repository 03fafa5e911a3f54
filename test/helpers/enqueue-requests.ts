/** Generators of enqueue requests the lane accepts, for the properties that compare answers built two ways. */
import fc from "fast-check";
import { T0 } from "./lane.js";

export const names = fc.stringMatching(/^[a-z][a-z0-9.-]{0,10}$/);
export const duration = fc.integer({ min: 1, max: 86_400_000 });

/** The fields of a request of one job, but its kind, debounce and dependencies (for `fc.record`; runAt and delayMs both: filter them). */
export const requestFields = {
  id: names,
  payload: fc.jsonValue({ maxDepth: 3 }),
  queue: fc.option(names),
  priority: fc.integer({ min: -100, max: 100 }),
  runAt: fc.integer({ min: 0, max: T0 + 10_000 }),
  delayMs: fc.nat(10_000),
  maxAttempts: fc.integer({ min: 1, max: 20 }),
  backoff: duration.map((baseMs) => ({ baseMs, maxMs: baseMs * 2 })),
  timeoutMs: duration,
  recovery: fc.record({ maxRecoveries: fc.nat(5), windowMs: duration }),
};

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`)).filter((h) => /[1-9a-f]/.test(h));

/** A trace context: version 00, or a later version with more after its first 55 characters (only those are kept). */
export const traceparents = fc
  .tuple(fc.constantFrom("00", "01", "cc"), hex(32), hex(16), fc.constantFrom("00", "01", "ff"), fc.constantFrom("", "-more"))
  .map(([version, traceId, parentId, flags, more]) => `${version}-${traceId}-${parentId}-${flags}${version === "00" ? "" : more}`);
