/**
 * The HTTP client's reader of a job's stream (docs/api.md "Results"): its Server-Sent Events as an
 * async iterator, each event once, in order, ending with `end` once the job is settled. A dropped
 * connection is opened again from the last event seen (`Last-Event-ID`), as a browser's
 * EventSource would, so a reader sees no gap and no repeat.
 */
import { QueueError, type ErrorBody } from "../shared/errors.js";
import type { StreamEvent } from "../shared/stream.js";

export interface JobStreamOptions {
  /** The stream's URL (`…/v1/lanes/{lane}/jobs/{id}/stream`). */
  url: string;
  headers: Record<string, string>;
  fetch: typeof fetch;
  /** Start after this seq (0: from the first event). */
  after?: number;
  /** Stops the reading (the iterator then throws the signal's reason). */
  signal?: AbortSignal;
  /** The first pause before opening a failed or empty connection again (doubled each time in a row); tests shorten it. */
  reconnectMs?: number;
}

/**
 * Connections in a row that may fail, or close with no event, before the reader gives up (each
 * waited for a little longer). The route sends a comment every hold and closes only when the job
 * ends or its lane keeps resetting, so an empty close is rare, and many in a row are a fault.
 */
const MAX_RECONNECTS = 5;
const RECONNECT_BASE_MS = 250;
/** A connection open this long was healthy, merely idle: its close does not count against the reader. */
const HEALTHY_CONNECTION_MS = 30_000;

/** One event of the text, or null for a comment or an event without data. */
function parseEvent(block: string): StreamEvent | null {
  let id: string | null = null;
  let event = "message";
  const data: string[] = [];
  for (const line of block.split(/\r\n|\r|\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") id = value;
    else if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return null;
  return { id: id === null ? null : Number(id), event, data: JSON.parse(data.join("\n")) } as StreamEvent;
}

/** The refusal an answer that is not the stream carries, as a `QueueError`. */
async function refusal(response: Response): Promise<QueueError> {
  const body = (await response.json().catch(() => undefined)) as { error?: ErrorBody } | undefined;
  if (body?.error && typeof body.error.code === "string") return QueueError.from(body.error);
  return new QueueError("internal", `HTTP ${response.status} ${response.statusText} without an API error body`);
}

export async function* readJobStream(options: JobStreamOptions): AsyncGenerator<StreamEvent, void, undefined> {
  let last = options.after ?? 0;
  let failures = 0;
  const base = options.reconnectMs ?? RECONNECT_BASE_MS;
  const backoff = () => new Promise((resolve) => setTimeout(resolve, base * 2 ** (failures - 1)));
  for (;;) {
    options.signal?.throwIfAborted();
    const opened = Date.now();
    let body: ReadableStream<Uint8Array>;
    try {
      const init: RequestInit = { headers: { ...options.headers, accept: "text/event-stream", "last-event-id": String(last) } };
      if (options.signal) init.signal = options.signal;
      const response = await options.fetch(options.url, init);
      if (!response.ok || !response.body) throw await refusal(response);
      body = response.body;
    } catch (error) {
      // A refusal (400, 404, 401…) is the answer; the network's failures are retried.
      if (error instanceof QueueError && error.code !== "internal") throw error;
      options.signal?.throwIfAborted();
      if (++failures > MAX_RECONNECTS) throw error;
      await backoff();
      continue;
    }
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let events = 0;
    let dropped: unknown = null;
    try {
      for (;;) {
        // Only the read is the connection's: an error thrown into the iterator at a yield is the caller's.
        let read: ReadableStreamReadResult<string>;
        try {
          read = await reader.read();
        } catch (error) {
          options.signal?.throwIfAborted();
          dropped = error;
          break;
        }
        if (read.done) break;
        buffer += read.value;
        let at: number;
        while ((at = buffer.search(/\r\n\r\n|\n\n|\r\r/)) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at).replace(/^(\r\n\r\n|\n\n|\r\r)/, "");
          const event = parseEvent(block);
          if (event === null) continue;
          failures = 0;
          events++;
          if (event.event === "end") {
            yield event;
            return;
          }
          if (event.id !== null && event.id <= last) continue; // already seen (a server that replays from further back)
          if (event.id !== null) last = event.id;
          yield event;
        }
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    // The connection ended before the job did: open it again after the last event seen, at once if
    // it brought events or lived long; else after a pause, a few times in a row at most.
    if (events > 0 || Date.now() - opened >= HEALTHY_CONNECTION_MS) continue;
    options.signal?.throwIfAborted();
    if (++failures > MAX_RECONNECTS) {
      throw dropped ?? new QueueError("internal", `the job's stream closed ${MAX_RECONNECTS + 1} times in a row with no event`);
    }
    await backoff();
  }
}
