/**
 * A job's stream, live (job-stream.ts): what its attempts write (chunks), its progress reports and
 * its transitions, as they happen, the newest `STREAM_KEPT` of them shown; text chunks (an LLM's
 * tokens) are also shown joined, as the text they make.
 */
import { useEffect, useRef, useState } from "hono/jsx/dom";
import type { Api } from "./api.js";
import { Alert, Section, StateBadge } from "./components.js";
import { clockTime } from "./format.js";
import { STREAM_KEPT, useJobStream, type StreamEvent, type StreamState } from "./job-stream.js";

const LABELS: Record<StreamState, string> = {
  connecting: "○ connecting…",
  live: "● live",
  offline: "○ offline, resuming",
  ended: "■ ended (the job settled)",
  unavailable: "○ unavailable",
};
/** How much of the joined text is shown: its end. */
const TEXT_SHOWN = 16_384;

function oneLine(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function describeEvent(event: StreamEvent) {
  switch (event.type) {
    case "chunk":
      return <code class="chunk">{oneLine(event.data.data)}</code>;
    case "progress":
      return <code>{oneLine(event.data.progress)}</code>;
    case "transition":
      return (
        <span>
          <span class="muted">{event.data.from ?? "new"}</span> → <StateBadge state={event.data.to} outcome={event.data.outcome} />
          {event.data.attempt > 0 ? <span class="muted"> attempt {String(event.data.attempt)}</span> : null}
        </span>
      );
  }
}

export function StreamPanel({ api, lane, id, settled }: { api: Api; lane: string; id: string; settled: boolean }) {
  const [epoch, setEpoch] = useState(0);
  const wasSettled = useRef(settled);
  useEffect(() => {
    if (wasSettled.current && !settled) setEpoch((n) => n + 1);
    wasSettled.current = settled;
  }, [settled]);
  const stream = useJobStream(api, lane, id, epoch);
  const chunks = stream.events.filter((e): e is Extract<StreamEvent, { type: "chunk" }> => e.type === "chunk");
  const text = chunks.length > 0 && chunks.every((c) => typeof c.data.data === "string") ? chunks.map((c) => c.data.data as string).join("").slice(-TEXT_SHOWN) : null;
  const { transition, progress, chunk } = stream.seen;

  return (
    <Section
      title="Stream"
      actions={
        <span class={`live live-${stream.state === "live" ? "live" : "other"}`} data-testid="stream-state" data-state={stream.state}>
          {LABELS[stream.state]}
        </span>
      }
    >
      <Alert message={stream.problem} />
      <p class="muted" data-testid="stream-counts" data-chunks={chunk} data-progress={progress} data-transitions={transition}>
        {`${chunk} chunk${chunk === 1 ? "" : "s"}, ${progress} progress report${progress === 1 ? "" : "s"}, ${transition} transition${transition === 1 ? "" : "s"}`}
        {transition + progress + chunk > STREAM_KEPT ? ` (the newest ${STREAM_KEPT} shown)` : ""}
      </p>
      {text !== null && <pre class="json stream-text" data-testid="stream-text">{text}</pre>}
      {stream.events.length > 0 && (
        <ol class="feed" data-testid="stream">
          {[...stream.events].reverse().map((event) => (
            <li key={event.seq} data-seq={event.seq} data-type={event.type}>
              <time>{clockTime(event.data.at)}</time> <span class="muted">#{String(event.seq)} {event.type}</span> {describeEvent(event)}
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}
