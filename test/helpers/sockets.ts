/**
 * Events sockets in tests: a ticket over the API, the upgrade through the worker's default export,
 * and the messages as they arrive, awaited (never polled).
 */
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { post } from "./http.js";

export interface Received {
  type: string;
  [key: string]: any;
}

export interface EventsSocket {
  ws: WebSocket;
  messages: Received[];
  /** Resolves with the first message (past or future) matching `predicate`; fails after `timeoutMs`. */
  until(predicate: (m: Received) => boolean, timeoutMs?: number): Promise<Received>;
  /** Resolves once the socket has closed. */
  closed: Promise<void>;
}

/** A ticket for `lane` (undefined: every lane) from POST /v1/tickets. */
export async function mintTicket(lane?: string): Promise<string> {
  const answer = await post("/v1/tickets", lane === undefined ? {} : { lane });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.ticket;
}

/** The events route's request: with the upgrade unless `upgrade` is false. */
export function eventsRequest(lane: string, ticket: string | null, upgrade = true): Request {
  const query = ticket === null ? "" : `?ticket=${encodeURIComponent(ticket)}`;
  return new Request(`http://switchyard.test/v1/lanes/${lane}/events${query}`, { headers: upgrade ? { upgrade: "websocket" } : {} });
}

/** Opens `lane`'s events socket with a fresh ticket. */
export async function openEvents(lane: string, ticket?: string): Promise<EventsSocket> {
  const response = await exports.default.fetch(eventsRequest(lane, ticket ?? (await mintTicket(lane))));
  expect(response.status).toBe(101);
  const ws = response.webSocket!;
  const messages: Received[] = [];
  const watchers = new Set<() => void>();
  let close!: () => void;
  const closed = new Promise<void>((resolve) => (close = resolve));
  ws.addEventListener("message", (event) => {
    messages.push(JSON.parse(event.data as string) as Received);
    for (const watch of [...watchers]) watch();
  });
  ws.addEventListener("close", () => close());
  ws.accept();
  return {
    ws,
    messages,
    closed,
    until(predicate, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = messages.find(predicate);
          if (!hit) return false;
          watchers.delete(check);
          clearTimeout(timer);
          resolve(hit);
          return true;
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`));
        }, timeoutMs);
        if (!check()) watchers.add(check);
      });
    },
  };
}

/** The transitions a socket heard, as `from>to` strings, for one job. */
export function path(socket: EventsSocket, id: string): string[] {
  return socket.messages.filter((m) => m.type === "transition" && m.id === id).map((m) => `${m.from}>${m.to}`);
}
