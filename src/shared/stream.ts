/**
 * A job's stream (docs/api.md "Results"): its events as the lane answers them and the SSE route
 * sends them, the chunk write's request, and the resume position's reading. Plain TypeScript,
 * shared by the lane, the front worker and the clients.
 */
import { z } from "@hono/zod-openapi";
import { MAX_STREAM_CHUNK_BYTES, MAX_STREAM_CHUNKS_PER_WRITE, MAX_TOKEN_CHARS } from "./defaults.js";
import { fail, ok, type Result } from "./errors.js";
import { serializeJson } from "./json.js";
import type { Job, JobState, Json, Outcome } from "./job.js";

/** The stored types of a job's events; the stream adds `end`, which is not stored. */
export type StreamEventType = "transition" | "progress" | "chunk";

/**
 * One stored event as the lane answers it: `data` is already the one-line JSON the SSE route sends
 * (the lane builds it from its columns and the stored JSON, parsing nothing).
 */
export interface StoredStreamEvent {
  seq: number;
  type: StreamEventType;
  data: string;
}

/** A page of a job's events after a seq; `end` is the job, once it is settled and this page holds its last event. */
export interface StreamPage {
  events: StoredStreamEvent[];
  end: Job | null;
  /** The lane held no call (it holds as many stream readers as it may) and answered at once. */
  busy?: boolean;
}

/** What a chunk write answers. */
export interface StreamWritten {
  written: number;
  lastEventId: number;
}

/** Each event's `data`, by type, parsed (what the HTTP client's `stream` yields). */
export type StreamEvent =
  | { id: number; event: "transition"; data: { from: JobState | null; to: JobState; outcome: Outcome | null; attempt: number; at: number } }
  | { id: number; event: "progress"; data: { progress: Json; at: number } }
  | { id: number; event: "chunk"; data: { data: Json; attempt: number; at: number } }
  | { id: null; event: "end"; data: { job: Job } };

export const StreamWriteRequest = z
  .strictObject({
    token: z.string().min(1).max(MAX_TOKEN_CHARS),
    chunks: z.array(z.unknown().openapi({ description: "any JSON value, at most 64 KiB serialized" })).min(1).max(MAX_STREAM_CHUNKS_PER_WRITE),
  })
  .openapi("StreamWriteRequest");
export type StreamWriteRequest = z.infer<typeof StreamWriteRequest>;

/** The largest seq a resume may name (a job's seqs stay far below it). */
const MAX_AFTER = Number.MAX_SAFE_INTEGER;

/**
 * Where a stream resumes: `Last-Event-ID` when given, else `?after`, else 0. Each must be an
 * integer ≥ 0 in decimal digits (a browser sends back the `id:` it saw last). An empty
 * `Last-Event-ID` is none: the SSE spec's reset, which a browser sends after an `id:` line with no value.
 */
export function resumeAfter(lastEventId: string | undefined, after: string | undefined): Result<number> {
  const header = lastEventId?.trim() === "" ? undefined : lastEventId;
  const [text, where] = header !== undefined ? [header, "Last-Event-ID"] : [after, "after"];
  if (text === undefined) return ok(0);
  const n = /^\d{1,16}$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n > MAX_AFTER) return fail("invalid_request", `${where} must be an integer ≥ 0`, [{ path: [where], message: "an integer ≥ 0" }]);
  return ok(n);
}

/** Each chunk's JSON text, each within its limit, or the first refusal (413 for one too large). */
export function chunkTexts(chunks: readonly unknown[]): Result<string[]> {
  const texts: string[] = [];
  for (const [i, chunk] of chunks.entries()) {
    const text = serializeJson(chunk, `chunks[${i}]`, MAX_STREAM_CHUNK_BYTES);
    if (!text.ok) return text;
    texts.push(text.value);
  }
  return ok(texts);
}
