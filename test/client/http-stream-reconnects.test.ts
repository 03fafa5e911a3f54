/**
 * The HTTP client's stream reader over a transport that misbehaves: connections that close cleanly
 * with no event are opened again after a growing pause, a bounded number of times in a row, then a
 * QueueError; an error thrown into the iterator is the iterator's, never taken for a dropped connection.
 */
import { describe, expect, it } from "vitest";
import { readJobStream } from "../../src/client/http-stream.js";
import { QueueError } from "../../src/shared/errors.js";

const sse = (text: string) => new Response(text, { headers: { "content-type": "text/event-stream" } });

/** A reader whose every connection answers `text(n)` (n: the connection's number, from 1), pausing `reconnectMs` at first. */
function reading(text: (n: number) => string, reconnectMs = 1) {
  const at: number[] = [];
  const stream = readJobStream({
    url: "http://switchyard.test/v1/lanes/l/jobs/j/stream",
    headers: {},
    reconnectMs,
    fetch: async () => {
      at.push(Date.now());
      return sse(text(at.length));
    },
  });
  return { stream, at };
}

describe("the HTTP client's stream reader", () => {
  it("opens a connection that closed with no event again after a growing pause, and gives up after a few in a row", async () => {
    // Closes cleanly with only a comment, 30 times; then would end the stream.
    const { stream, at } = reading((n) => (n > 30 ? 'event: end\ndata: {"job":{"id":"j"}}\n\n' : ": idle\n\n"), 20);
    const error = await (async () => {
      for await (const _ of stream) return null;
      return null;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueError);
    expect((error as QueueError).code).toBe("internal");
    expect(at.length).toBeLessThanOrEqual(6);
    // Each reconnect waited, longer each time.
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(gaps.every((gap) => gap >= 15)).toBe(true);
    expect(at.at(-1)! - at[0]!).toBeGreaterThanOrEqual(20 + 40 + 80 + 160 - 20);
  });

  it("an event resets the count: a stream whose connections each bring an event goes on", async () => {
    const { stream } = reading((n) => (n > 12 ? 'event: end\ndata: {"job":{"id":"j"}}\n\n' : `id: ${n}\nevent: chunk\ndata: {"data":${n}}\n\n`));
    const ids: (number | null)[] = [];
    for await (const event of stream) ids.push(event.id);
    expect(ids).toEqual([...Array.from({ length: 12 }, (_, i) => i + 1), null]);
  });

  it("an error thrown into the iterator rejects with that error, and opens nothing again", async () => {
    const { stream, at } = reading(() => 'id: 1\nevent: chunk\ndata: {"data":1}\n\nid: 2\nevent: chunk\ndata: {"data":2}\n\n');
    expect((await stream.next()).value).toMatchObject({ id: 1 });
    const stop = new Error("the caller's own");
    await expect(stream.throw(stop)).rejects.toBe(stop);
    expect(at).toHaveLength(1);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });
});
