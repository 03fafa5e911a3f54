/**
 * Big payloads and results (docs/api.md "Big payloads"): with an R2 bucket bound as `PAYLOADS`, a
 * payload or result whose JSON is over `MAX_PAYLOAD_BYTES` (at most `MAX_HELD_PAYLOAD_BYTES`) is kept
 * in R2, and a job answer that leaves it out says how big it is.
 */

/** A payload or result held in R2 and left out of an answer: the size of its JSON in UTF-8 bytes. */
export interface PayloadRef {
  bytes: number;
}

/** The most a payload or result may hold when the worker binds `PAYLOADS` (16 MiB of JSON). */
export const MAX_HELD_PAYLOAD_BYTES = 16 * 1024 * 1024;

/** The body of a single enqueue or of a `complete` when the worker binds `PAYLOADS`: the value and its envelope. */
export const MAX_HELD_BODY_BYTES = 17 * 1024 * 1024;
