/**
 * Held stream readers are bounded per lane object (docs/api.md "Results"): beyond the bound the lane
 * answers a stream's page at once, `busy`, and the SSE route asks again a moment later, never a 5xx.
 */
import { exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import { MAX_HELD_STREAM_READERS } from "../../src/shared/defaults.js";
import { claimOne, enqueue, post, request, setup } from "../helpers/http.js";

type Inner = { rpc: { streams: { streamEvents(id: unknown, after: unknown, holdMs: unknown): Promise<unknown> } }; parts: { streamReaders: { size: number } } };

describe("held stream readers", () => {
  it(`beyond ${MAX_HELD_STREAM_READERS} a lane answers a stream's page at once, busy; the route waits and asks again`, async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    await enqueue(lane, { id: "b" });
    const a = await claimOne(lane);
    const b = await claimOne(lane);
    expect([a.id, b.id].sort()).toEqual(["a", "b"]);
    // Filled from inside the object: the bound is what is tested, not thousands of RPC calls.
    const filled = runInDurableObject(lane.stub, (object: Lane) => {
      const inner = object as unknown as Inner;
      return Promise.all(Array.from({ length: MAX_HELD_STREAM_READERS }, () => inner.rpc.streams.streamEvents("a", 1_000, 25_000)));
    });
    await lane.stub.info();
    expect(await runInDurableObject(lane.stub, (object: Lane) => (object as unknown as Inner).parts.streamReaders.size)).toBe(MAX_HELD_STREAM_READERS);

    // One more is not held: answered at once, busy, with nothing new.
    const started = Date.now();
    expect(await lane.stub.streamEvents("b", 1_000, 25_000)).toMatchObject({ ok: true, value: { events: [], end: null, busy: true } });
    expect(Date.now() - started).toBeLessThan(5_000);

    // The SSE route keeps its reader: b's chunk arrives, and b's end, with no 5xx.
    const response = await exports.default.fetch(request("GET", `${lane.base}/jobs/b/stream`));
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const written = await post(`${lane.base}/jobs/b/stream`, { token: b.lease.token, chunks: ["hello"] });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    const done = await post(`${lane.base}/jobs/b/complete`, { token: b.lease.token, result: 1 });
    expect(done.status).toBe(200);
    while (!text.includes("event: end")) {
      const { value, done: closed } = await reader.read();
      if (closed) break;
      text += decoder.decode(value);
    }
    expect(text).toContain('"data":"hello"');
    expect(text).toContain("event: end");

    // a's readers are answered with its end.
    expect((await post(`${lane.base}/jobs/a/complete`, { token: a.lease.token, result: 1 })).status).toBe(200);
    const answers = (await filled) as { ok: boolean; value: { end: unknown } }[];
    expect(answers.every((r) => r.ok && r.value.end !== null)).toBe(true);
  });
});
