/**
 * W3C Trace Context (`traceparent`, https://www.w3.org/TR/trace-context/): the header a producer
 * enqueues with is stored on its job (docs/api.md "The job"). Plain functions, shared by the front
 * worker (the header), the lane (a lane trusts no caller) and the clients (createWorker's spans).
 */

/** A `traceparent` read into its parts, every one lower-case hex. */
export interface TraceParent {
  /** What is stored: the header as given (version 00), or the first 55 characters of a later version. */
  traceparent: string;
  /** 32 hex characters, not all zeros. */
  traceId: string;
  /** The caller's span: 16 hex characters, not all zeros. */
  parentId: string;
  /** 2 hex characters; the low bit is `sampled`. */
  flags: string;
}

/** How long a version-00 `traceparent` is: `00-` + 32 + `-` + 16 + `-` + 2. */
export const TRACEPARENT_CHARS = 55;

/** The four fields of version 00's format, at the start of the header; then the end, or a dash (a later version's more). */
const FIELDS = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/;
const ZEROS_32 = "0".repeat(32);
const ZEROS_16 = "0".repeat(16);

/** What a valid `traceparent` looks like, for refusals. */
export const TRACEPARENT_FORMAT = "a W3C traceparent: 00-<32 lower-case hex trace-id>-<16 lower-case hex parent-id>-<2 hex flags>, ids not all zeros";

/**
 * A `traceparent` header's parts, or null when it is not one. Version 00 is exactly 55 characters;
 * version ff is invalid; a later version is read as the spec asks of a version it does not know: its
 * first 55 characters in version 00's format, followed by the end or a dash, and only those are kept.
 */
export function parseTraceparent(value: string): TraceParent | null {
  const match = FIELDS.exec(value);
  if (!match) return null;
  const [, version, traceId, parentId, flags] = match as unknown as [string, string, string, string, string];
  if (version === "ff" || (version === "00" && value.length !== TRACEPARENT_CHARS)) return null;
  if (traceId === ZEROS_32 || parentId === ZEROS_16) return null;
  return { traceparent: value.length === TRACEPARENT_CHARS ? value : value.slice(0, TRACEPARENT_CHARS), traceId, parentId, flags };
}

/** The trace id (32 hex) of a stored, valid `traceparent`: its characters 3 to 35, without parsing it again. */
export function traceIdOf(traceparent: string): string {
  return traceparent.slice(3, 35);
}
