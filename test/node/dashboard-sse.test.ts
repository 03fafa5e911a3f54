/** The dashboard's SSE parser (its job view reads streams with fetch, not EventSource): events split anywhere. */
import { describe, expect, it } from "vitest";
import { SseParser } from "../../src/worker/dashboard/browser/sse.js";

const STREAM = `: opened\n\nid: 1\nevent: transition\ndata: {"from":null,"to":"queued"}\n\nid: 2\r\nevent: chunk\r\ndata: {"data":"a\\nb"}\r\n\r\n:keep-alive\n\nevent: end\ndata:{"job":{"id":"j"}}\n\n`;
const EXPECTED = [
  { id: "1", event: "transition", data: '{"from":null,"to":"queued"}' },
  { id: "2", event: "chunk", data: '{"data":"a\\nb"}' },
  { id: null, event: "end", data: '{"job":{"id":"j"}}' },
];

describe("the dashboard's SSE parser", () => {
  it("reads ids, types and data, skips comments, and takes every line ending", () => {
    expect(new SseParser().feed(STREAM)).toEqual(EXPECTED);
  });

  it("answers the same events however the text is split across reads", () => {
    for (let size = 1; size <= 7; size++) {
      const parser = new SseParser();
      const events = [];
      for (let i = 0; i < STREAM.length; i += size) events.push(...parser.feed(STREAM.slice(i, i + size)));
      expect(events, `split every ${size}`).toEqual(EXPECTED);
    }
  });

  it("holds an event back until its blank line, and joins multi-line data", () => {
    const parser = new SseParser();
    expect(parser.feed("id: 7\nevent: progress\ndata: {\ndata: }\n")).toEqual([]);
    expect(parser.feed("\n")).toEqual([{ id: "7", event: "progress", data: "{\n}" }]);
  });
});
