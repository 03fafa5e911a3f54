/**
 * A job's stream (docs/api.md "Results"): Server-Sent Events read with `fetch` and a streaming body,
 * because the API wants a bearer token and a browser's EventSource cannot send one (the token never
 * goes in a URL). The events are parsed by sse.ts; a dropped connection is resumed with `?after=` the
 * last seq seen, and the stream stops at `end`.
 */
import { useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { jobPath, type Api } from "./api.js";
import { useSingleEffect } from "./single-effect.js";
import { SseParser } from "./sse.js";
import type { Job } from "./types.js";

export type StreamEvent =
  | { seq: number; type: "transition"; data: { from: string | null; to: string; outcome: string | null; attempt: number; at: number } }
  | { seq: number; type: "progress"; data: { progress: unknown; at: number } }
  | { seq: number; type: "chunk"; data: { data: unknown; attempt: number; at: number } };

/** `unavailable`: refused or unknown (not retried); `ended`: the job settled and the server closed it. */
export type StreamState = "connecting" | "live" | "offline" | "ended" | "unavailable";

/** How many events the view keeps (the newest): a stream holds up to 1,000 chunks and its transitions. */
export const STREAM_KEPT = 200;
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;

export interface JobStream {
  state: StreamState;
  /** The newest events, oldest first, at most `STREAM_KEPT`. */
  events: StreamEvent[];
  /** Every event seen, by type (the view shows only the newest). */
  seen: { transition: number; progress: number; chunk: number };
  /** Why the stream is unavailable or offline (null: it is not). */
  problem: string | null;
  /** The job as the `end` event gave it. */
  ended: Job | null;
}

/**
 * Reads the job's stream from its first event while the view is open, resuming after drops; read
 * anew when `epoch` changes (the job left `settled`: a requeue's events follow the `end` it had).
 */
export function useJobStream(api: Api, lane: string, id: string, epoch: number): JobStream {
  const [stream, setStream] = useState<JobStream>({ state: "connecting", events: [], seen: { transition: 0, progress: 0, chunk: 0 }, problem: null, ended: null });
  const alive = useAlive();

  // One reader per (api, lane, id, epoch): a second, its cleanup lost, would count every event again.
  useSingleEffect(() => {
    const controller = new AbortController();
    let after = 0;
    let retryMs = RETRY_FIRST_MS;
    setStream({ state: "connecting", events: [], seen: { transition: 0, progress: 0, chunk: 0 }, problem: null, ended: null });
    const update = (change: (old: JobStream) => JobStream) => {
      if (alive.current && !controller.signal.aborted) setStream(change);
    };

    const connect = async (): Promise<"ended" | "stopped" | "dropped"> => {
      const response = await fetch(`${jobPath(lane, id)}/stream?after=${after}`, {
        headers: { authorization: `Bearer ${api.token}`, accept: "text/event-stream" },
        signal: controller.signal,
        cache: "no-store",
      });
      if (!response.ok || response.body === null) {
        let message = `HTTP ${response.status}`;
        try {
          const body = (await response.json()) as { error?: { code?: string; message?: string } };
          if (body.error?.message) message = `${body.error.message} (${response.status} ${body.error.code ?? ""})`;
        } catch {
          // not JSON: the status says it
        }
        // A refusal is the client's (4xx): asking again changes nothing.
        if (response.status >= 400 && response.status < 500) {
          update((old) => ({ ...old, state: "unavailable", problem: message }));
          return "stopped";
        }
        throw new Error(message);
      }
      update((old) => ({ ...old, state: "live", problem: null }));
      retryMs = RETRY_FIRST_MS;
      const parser = new SseParser();
      const decoder = new TextDecoder();
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return "dropped";
          const fresh: StreamEvent[] = [];
          let ended: Job | null = null;
          for (const raw of parser.feed(decoder.decode(value, { stream: true }))) {
            if (raw.event === "end") {
              ended = (JSON.parse(raw.data) as { job: Job }).job;
              continue;
            }
            if (raw.event !== "transition" && raw.event !== "progress" && raw.event !== "chunk") continue;
            const seq = Number(raw.id);
            if (!Number.isSafeInteger(seq) || seq <= after) continue; // a replay of one already shown
            after = seq;
            fresh.push({ seq, type: raw.event, data: JSON.parse(raw.data) } as StreamEvent);
          }
          // One render for everything one read brought: a fast stream arrives many events a read.
          if (fresh.length > 0 || ended !== null) {
            update((old) => {
              // Counted by seq once, whichever reader brought it: the newest event held is the last counted.
              const counted = old.events.at(-1)?.seq ?? 0;
              const added = fresh.filter((event) => event.seq > counted);
              const seen = { ...old.seen };
              for (const event of added) seen[event.type]++;
              return { ...old, seen, events: [...old.events, ...added].slice(-STREAM_KEPT), ...(ended ? { ended, state: "ended" as const } : {}) };
            });
          }
          if (ended !== null) return "ended";
        }
      } finally {
        reader.releaseLock();
      }
    };

    void (async () => {
      while (!controller.signal.aborted) {
        let how: "ended" | "stopped" | "dropped";
        try {
          how = await connect();
        } catch (error) {
          if (controller.signal.aborted) return;
          update((old) => ({ ...old, state: "offline", problem: error instanceof Error ? error.message : String(error) }));
          how = "dropped";
        }
        if (how !== "dropped") return;
        update((old) => (old.state === "live" ? { ...old, state: "offline" } : old));
        await new Promise((resolve) => setTimeout(resolve, retryMs));
        retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
      }
    })();
    return () => controller.abort();
  }, [api, lane, id, epoch]);

  return stream;
}
