/**
 * A sharded lane's events socket (docs/api.md "Live events"): one URL hears every shard. Each shard
 * accepts a socket of its own (the lane's events sockets, durable/events/sockets.ts); the front worker
 * holds one per shard and relays what they say into the client's one socket, as one lane would say it:
 * one `hello` once every shard has said its own (their infos summed, as `GET /v1/lanes/{lane}` sums
 * them), every transition as it comes (each shard's in its order), and the lane's counts, summed,
 * at most once a second while they change. A lane of one shard is not relayed: its object takes the
 * socket itself (and sleeps with it open).
 */
import { COUNTS_INTERVAL_MS } from "../shared/defaults.js";
import type { Counts, LaneInfo } from "../shared/job.js";
import { sumCounts, sumInfo } from "../routing/lane-wide-routing.js";

/** The keep-alive a client sends, and its answer (the lane's own auto-response, here answered by the relay). */
const PING = "ping";
const PONG = "pong";

/**
 * Relays the shards' sockets (`shards`, in shard order, each accepted by its shard) into a new socket:
 * the client's end, to answer the upgrade with.
 */
export function relayShards(shards: readonly WebSocket[]): WebSocket {
  const { 0: client, 1: server } = new WebSocketPair();
  server.accept();
  const hellos: (LaneInfo | null)[] = shards.map(() => null);
  const counts: (Counts | null)[] = shards.map(() => null);
  /** Messages heard before the lane's hello went out: sent after it, in the order heard. */
  let early: string[] | null = [];
  let lastCounts: string | null = null;
  let lastCountsAt = 0;
  let countsTimer: ReturnType<typeof setTimeout> | null = null;
  let closed = false;

  const send = (text: string) => {
    try {
      server.send(text);
    } catch {
      // Closing under us: its close handler tidies up.
    }
  };
  const sendCounts = () => {
    countsTimer = null;
    if (closed || counts.some((c) => c === null)) return;
    const text = JSON.stringify(sumCounts(counts as Counts[]));
    if (text === lastCounts) return;
    lastCounts = text;
    lastCountsAt = Date.now();
    send(`{"type":"counts","counts":${text}}`);
  };
  // Leading edge at once, then at most one send per interval, carrying the latest sums.
  const countsChanged = () => {
    if (countsTimer !== null) return;
    const wait = lastCountsAt + COUNTS_INTERVAL_MS - Date.now();
    if (wait <= 0) return sendCounts();
    countsTimer = setTimeout(sendCounts, wait);
  };
  const closeAll = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    if (countsTimer !== null) clearTimeout(countsTimer);
    for (const ws of [server, ...shards]) {
      try {
        ws.close(code, reason);
      } catch {
        // already closed
      }
    }
  };

  shards.forEach((ws, shard) => {
    ws.accept();
    ws.addEventListener("message", (event) => {
      if (typeof event.data !== "string") return;
      let message: { type?: string; counts?: Counts };
      try {
        message = JSON.parse(event.data) as typeof message;
      } catch {
        return; // the pong of a ping: not the client's
      }
      if (message.type === "hello") {
        const { type: _, ...info } = message as LaneInfo & { type: string };
        hellos[shard] = info;
        counts[shard] = info.counts;
        if (early === null || hellos.some((h) => h === null)) return;
        const hello = sumInfo(hellos as LaneInfo[]);
        lastCounts = JSON.stringify(hello.counts);
        send(JSON.stringify({ type: "hello", ...hello }));
        for (const text of early) send(text);
        early = null;
        countsChanged(); // a shard's counts that moved since its hello
        return;
      }
      if (message.type === "counts" && message.counts) {
        counts[shard] = message.counts;
        if (early === null) countsChanged();
        return;
      }
      if (early === null) send(event.data);
      else early.push(event.data);
    });
    ws.addEventListener("close", (event) => closeAll(ownCode(event.code), "a shard's socket closed"));
    ws.addEventListener("error", () => closeAll(1011, "a shard's socket failed"));
  });
  server.addEventListener("message", (event) => {
    if (event.data === PING) send(PONG);
  });
  server.addEventListener("close", (event) => closeAll(ownCode(event.code), "closed"));
  server.addEventListener("error", () => closeAll(1011, "failed"));
  return client;
}

/** Every shard's counts summed, key by key. */
/** A close code that may be sent back: 1005 and 1006 say "no code" and may not be. */
function ownCode(code: number): number {
  return code === 1005 || code === 1006 ? 1000 : code;
}
