/**
 * The lane's events sockets (docs/api.md "Live events"). The lane accepts each socket itself with the
 * hibernation API, so an idle lane sleeps with its sockets open and pays nothing for them; the front
 * worker has checked the ticket before the upgrade reaches here. What a socket hears: a `hello` with
 * the lane as `GET /v1/lanes/{lane}` shows it, every durable transition in order (the transition
 * log's, transitions.ts), and the counts at most once a second while they change.
 */
import { COUNTS_INTERVAL_MS } from "../../shared/defaults.js";
import type { ErrorBody, Result } from "../../shared/errors.js";
import type { Counts } from "../../shared/job.js";
import type { TransitionEvent } from "../../shared/log.js";

export interface LaneEventsSource {
  /** Tells every durable transition to `listener`, in order, until the returned function is called. */
  listen(listener: (event: TransitionEvent) => void): () => void;
  counts(): Counts;
}

export class LaneEvents {
  /** Set while a socket may be open: with none, nothing listens, so no transition is even built. */
  private unlisten: (() => void) | null = null;
  private lastCounts: string | null = null;
  private lastCountsAt = 0;
  /** Whether this turn's transitions already asked for the counts. */
  private countsAsked = false;
  /** One timer for the lane, not one per socket, and only while counts wait to go out. */
  private countsTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly source: LaneEventsSource,
  ) {
    // Woken from hibernation, the object is rebuilt while its sockets stay open.
    if (ctx.getWebSockets().length > 0) this.listen();
    // Keep-alive pings are answered by the runtime without waking the lane.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /**
   * Accepts an events socket and greets it with `lane` (the lane's info). Anything else answers an
   * error body (any status: the front worker answers it with the code's own).
   */
  open(request: Request, lane: Result<{ counts: Counts }>): Response {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return refuse({ code: "upgrade_required", message: "the events route speaks WebSocket: send Upgrade: websocket" });
    }
    if (!lane.ok) return refuse(lane.error);
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server);
    this.listen();
    this.lastCounts = null; // the newcomer has only its hello's counts
    // Sent before this turn ends, so before any transition can reach the new socket.
    server.send(JSON.stringify({ type: "hello", ...lane.value }));
    return new Response(null, { status: 101, webSocket: client });
  }

  /** A socket closed or failed: answer the close, and stop listening once none is left. */
  closed(ws: WebSocket, code?: number): void {
    try {
      // 1005 and 1006 say "no code" and may not be sent back.
      ws.close(code === undefined || code === 1005 || code === 1006 ? 1000 : code);
    } catch {
      // already closed
    }
    this.openSockets();
  }

  private listen(): void {
    this.unlisten ??= this.source.listen((event) => this.transition(event));
  }

  private transition(t: TransitionEvent): void {
    const sockets = this.openSockets();
    if (sockets.length === 0) return;
    send(sockets, JSON.stringify({ type: "transition", id: t.jobId, kind: t.kind, from: t.from, to: t.to, outcome: t.outcome, attempt: t.attempt, at: t.at }));
    if (this.countsAsked) return;
    // After the whole batch of transitions told in this turn, not in its middle.
    this.countsAsked = true;
    queueMicrotask(() => {
      this.countsAsked = false;
      this.countsChanged();
    });
  }

  /** The open sockets; with none left, stop listening (and forget any counts waiting to go out). */
  private openSockets(): WebSocket[] {
    const sockets = this.ctx.getWebSockets().filter((ws) => ws.readyState === WebSocket.OPEN);
    if (sockets.length > 0) return sockets;
    this.unlisten?.();
    this.unlisten = null;
    if (this.countsTimer !== null) clearTimeout(this.countsTimer);
    this.countsTimer = null;
    return sockets;
  }

  /** Leading edge at once, then at most one send per interval, carrying the latest counts. */
  private countsChanged(): void {
    if (this.countsTimer !== null) return;
    const wait = this.lastCountsAt + COUNTS_INTERVAL_MS - Date.now();
    if (wait <= 0) return this.sendCounts();
    this.countsTimer = setTimeout(() => {
      this.countsTimer = null;
      this.sendCounts();
    }, wait);
  }

  private sendCounts(): void {
    const sockets = this.openSockets();
    if (sockets.length === 0) return;
    let counts: string;
    try {
      counts = JSON.stringify(this.source.counts());
    } catch {
      return; // runs on a timer, where a throw would take the lane down: the next change tries again
    }
    if (counts === this.lastCounts) return;
    this.lastCounts = counts;
    this.lastCountsAt = Date.now();
    send(sockets, `{"type":"counts","counts":${counts}}`);
  }
}

function refuse(error: ErrorBody): Response {
  return Response.json({ error }, { status: 400 });
}

function send(sockets: readonly WebSocket[], text: string): void {
  for (const ws of sockets) {
    try {
      ws.send(text);
    } catch {
      // Closing under us: its close handler tidies up.
    }
  }
}
