/**
 * Server-Sent Events parsed from text as it arrives (the WHATWG format's few rules the API's streams
 * use: `id:`, `event:`, `data:` lines, comments, any line ending), for a reader that cannot use
 * EventSource (job-stream.ts: it sends a bearer token).
 */

/** One SSE event as sent: its `id:` (null when none), `event:` and `data:` lines. */
export interface RawEvent {
  id: string | null;
  event: string;
  data: string;
}

/** An SSE parser fed text as it arrives; answers each whole event (blank-line terminated). */
export class SseParser {
  private buffer = "";
  private current: { id: string | null; event: string; data: string[] } = { id: null, event: "message", data: [] };

  feed(text: string): RawEvent[] {
    this.buffer += text;
    const events: RawEvent[] = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      // A lone CR at the end may be the first half of a CRLF split across two reads.
      if (end < 0 || (end === this.buffer.length - 1 && this.buffer[end] === "\r")) break;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + (this.buffer.startsWith("\r\n", end) ? 2 : 1));
      if (line === "") {
        if (this.current.data.length > 0) events.push({ id: this.current.id, event: this.current.event, data: this.current.data.join("\n") });
        this.current = { id: null, event: "message", data: [] };
        continue;
      }
      if (line.startsWith(":")) continue; // a comment: keeps the connection open
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + (line[colon + 1] === " " ? 2 : 1));
      if (field === "id") this.current.id = value;
      else if (field === "event") this.current.event = value;
      else if (field === "data") this.current.data.push(value);
    }
    return events;
  }
}
