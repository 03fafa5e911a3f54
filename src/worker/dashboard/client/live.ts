/**
 * A lane's events socket (API.md "Live events"). A browser cannot send a bearer token on a WebSocket,
 * so each connection first mints a short-lived ticket with the token (POST /v1/tickets) and puts the
 * ticket, never the token, in the socket's URL. A dropped socket reconnects with a fresh ticket.
 */
import { useEffect, useRef, useState } from "hono/jsx/dom";
import { lanePath, type Api } from "./api.js";
import type { Counts, LaneInfo } from "./types.js";

export type LaneMessage =
  | ({ type: "hello" } & LaneInfo)
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

export type LiveState = "connecting" | "live" | "offline";

/** Keeps the socket's idle connection open; the lane answers without waking (events.ts). */
const PING_EVERY_MS = 30_000;
const MAX_RETRY_MS = 10_000;

export function useLaneEvents(api: Api, lane: string, onMessage: (message: LaneMessage) => void): LiveState {
  const [state, setState] = useState<LiveState>("connecting");
  const handler = useRef(onMessage);
  handler.current = onMessage;
  useEffect(() => {
    let socket: WebSocket | null = null;
    let stopped = false;
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
      socket = new WebSocket(url);
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
        handler.current?.(message);
      };
      socket.onclose = reconnect;
    };
    void connect();
    const ping = setInterval(() => {
      if (socket?.readyState === WebSocket.OPEN) socket.send("ping");
    }, PING_EVERY_MS);
    return () => {
      stopped = true;
      clearTimeout(retry);
      clearInterval(ping);
      if (socket) {
        socket.onclose = null;
        socket.close();
      }
    };
  }, [api, lane]);
  return state;
}
