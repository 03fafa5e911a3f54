/**
 * A lane's events socket (docs/api.md "Live events"). A browser cannot send a bearer token on a WebSocket,
 * so each connection first mints a short-lived ticket with the token (POST /v1/tickets) and puts the
 * ticket, never the token, in the socket's URL. A dropped socket reconnects with a fresh ticket.
 * A sharded lane is heard through the same one socket, its hello and counts the whole lane's.
 */
import { useRef, useState } from "hono/jsx/dom";
import { lanePath, type Api } from "./api.js";
import { useSingleEffect } from "./single-effect.js";
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

export function useLaneEvents(api: Api, lane: string, onMessage: (message: LaneMessage) => void): LiveState {
  const [state, setState] = useState<LiveState>("connecting");
  const handler = useRef(onMessage);
  handler.current = onMessage;
  // One socket per (api, lane): a second, its cleanup lost, would stay open and deliver every message again.
  useSingleEffect(() => {
    // Tickets are minted for viewers and admins only (docs/api.md "Access"): other tokens never go live.
    if (!api.can("POST", "/v1/tickets", lane)) return setState("denied");
    let stopped = false;
    let batch: LaneMessage[] = [];
    let flush: ReturnType<typeof setTimeout> | undefined;
    const deliver = () => {
      flush = undefined;
      const messages = batch;
      batch = [];
      for (const message of messages) handler.current(message);
    };
    const opened = open();
    const ping = setInterval(() => {
      if (opened.socket?.readyState === WebSocket.OPEN) opened.socket.send("ping");
    }, PING_EVERY_MS);
    return () => {
      stopped = true;
      clearTimeout(flush);
      clearInterval(ping);
      opened.stop();
    };

    function open(): { socket: WebSocket | null; stop(): void } {
      const handle: { socket: WebSocket | null; stop(): void } = { socket: null, stop: () => undefined };
      let socket: WebSocket | null = null;
      let failures = 0;
      let retry: ReturnType<typeof setTimeout> | undefined;
      const reconnect = () => {
        if (stopped) return;
        setState("offline");
        retry = setTimeout(connect, Math.min(MAX_RETRY_MS, 500 * 2 ** failures++));
      };
      const connect = async () => {
        setState("connecting");
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
        socket = handle.socket = new WebSocket(url);
        socket.onopen = () => {
          failures = 0;
          setState("live");
        };
        socket.onmessage = (event) => {
          if (typeof event.data !== "string" || event.data === "pong") return;
          let message: LaneMessage;
          try {
            message = JSON.parse(event.data) as LaneMessage;
          } catch {
            return; // not JSON: nothing this page understands
          }
          batch.push(message);
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
  }, [api, lane]);
  return state;
}
