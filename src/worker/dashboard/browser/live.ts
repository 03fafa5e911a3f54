/**
 * A lane's events socket (docs/api.md "Live events"). A browser cannot send a bearer token on a WebSocket,
 * so each connection first mints a short-lived ticket with the token (POST /v1/tickets) and puts the
 * ticket, never the token, in the socket's URL. A dropped socket reconnects with a fresh ticket.
 * A sharded lane has a socket per shard (`?shard=i`): each message says its shard.
 */
import { useEffect, useRef, useState } from "hono/jsx/dom";
import { lanePath, type Api } from "./api.js";
import type { Counts, LaneInfo } from "./types.js";

/** The first message: the lane's settings and counts (its stats and retention come from `GET` the lane). */
export type HelloMessage = { type: "hello" } & Pick<LaneInfo, "lane" | "counts" | "paused" | "concurrency">;

export type LaneMessage =
  | HelloMessage
  | { type: "counts"; counts: Counts }
  | TransitionMessage;

export interface TransitionMessage {
  type: "transition";
  id: string;
  kind: string;
  from: string | null;
  to: string;
  outcome: string | null;
  attempt: number;
  at: number;
}

/** `denied`: the token may not mint tickets, so the view stays as read. */
export type LiveState = "connecting" | "live" | "offline" | "denied";

/** Keeps the socket's idle connection open; the lane answers without waking (events.ts). */
const PING_EVERY_MS = 30_000;
const MAX_RETRY_MS = 10_000;
/**
 * Messages that arrive within this long of each other reach the view together, in order: each one
 * is a task of its own, and a view renders once per task, so a lane failing 500 jobs at once would
 * otherwise cost 500 renders of the whole view (seconds of a busy page) instead of a few.
 */
const BATCH_MS = 50;

/** `only`: the one shard of a sharded lane to hear (a job's page); otherwise every shard's socket. */
export function useLaneEvents(api: Api, lane: string, shards: number, onMessage: (message: LaneMessage, shard: number) => void, only?: number): LiveState {
  const [state, setState] = useState<LiveState>("connecting");
  const handler = useRef(onMessage);
  handler.current = onMessage;
  useEffect(() => {
    // Tickets are minted for viewers and admins only (docs/api.md "Access"): other tokens never go live.
    if (!api.can("POST", "/v1/tickets", lane)) return setState("denied");
    let stopped = false;
    let batch: [LaneMessage, number][] = [];
    let flush: ReturnType<typeof setTimeout> | undefined;
    const deliver = () => {
      flush = undefined;
      const messages = batch;
      batch = [];
      for (const [message, shard] of messages) handler.current(message, shard);
    };
    // The view is live when every socket it opened is.
    const heard = only === undefined ? Array.from({ length: shards }, (_, shard) => shard) : [only];
    const states = new Map<number, LiveState>(heard.map((shard) => [shard, "connecting"]));
    const tell = (shard: number, state: LiveState) => {
      states.set(shard, state);
      const all = [...states.values()];
      setState(all.includes("offline") ? "offline" : all.includes("connecting") ? "connecting" : "live");
    };
    const sockets = heard.map((shard) => openShard(shard));
    const ping = setInterval(() => {
      for (const s of sockets) if (s.socket?.readyState === WebSocket.OPEN) s.socket.send("ping");
    }, PING_EVERY_MS);
    return () => {
      stopped = true;
      clearTimeout(flush);
      clearInterval(ping);
      for (const s of sockets) s.stop();
    };

    function openShard(shard: number): { socket: WebSocket | null; stop(): void } {
      const handle: { socket: WebSocket | null; stop(): void } = { socket: null, stop: () => undefined };
      let socket: WebSocket | null = null;
      let failures = 0;
      let retry: ReturnType<typeof setTimeout> | undefined;
      const reconnect = () => {
        if (stopped) return;
        tell(shard, "offline");
        retry = setTimeout(connect, Math.min(MAX_RETRY_MS, 500 * 2 ** failures++));
      };
      const connect = async () => {
        tell(shard, "connecting");
        let ticket: string;
        try {
          ticket = (await api.post<{ ticket: string }>("/v1/tickets", { lane })).ticket;
        } catch {
          return reconnect();
        }
        if (stopped) return;
        const url = new URL(`${lanePath(lane)}/events`, location.href);
        url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
        url.searchParams.set("ticket", ticket);
        if (shards > 1) url.searchParams.set("shard", String(shard));
        socket = handle.socket = new WebSocket(url);
        socket.onopen = () => {
          failures = 0;
          tell(shard, "live");
        };
        socket.onmessage = (event) => {
          if (typeof event.data !== "string" || event.data === "pong") return;
          let message: LaneMessage;
          try {
            message = JSON.parse(event.data) as LaneMessage;
          } catch {
            return; // not JSON: nothing this page understands
          }
          batch.push([message, shard]);
          flush ??= setTimeout(deliver, BATCH_MS);
        };
        socket.onclose = reconnect;
      };
      void connect();
      handle.stop = () => {
        clearTimeout(retry);
        if (socket) {
          socket.onclose = null;
          socket.close();
        }
      };
      return handle;
    }
  }, [api, lane, shards, only]);
  return state;
}
