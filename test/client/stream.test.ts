/**
 * A job's stream from the clients (docs/api.md "Results"): the HTTP client's `stream()` (replay, live,
 * resume after a dropped connection with no gap and no repeat, 404) and `writeStream()`, and a
 * `createWorker` handler's `stream.write`.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import { createWorker, type WorkerEvent } from "../../src/client/worker.js";
import { MAX_STREAM_CHUNK_BYTES } from "../../src/shared/defaults.js";
import { QueueError } from "../../src/shared/errors.js";
import type { StreamEvent } from "../../src/shared/stream.js";
import { claimOne, enqueue, PULL_KIND, setup, TOKEN } from "../helpers/http.js";

/** The HTTP client on the worker's own fetch; `cut` ends a stream's body after that many events (once each). */
function client(options: { cut?: number[]; seen?: (string | null)[] } = {}) {
  const cuts = [...(options.cut ?? [])];
  const fetcher = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    if (request.url.endsWith("/stream")) options.seen?.push(request.headers.get("last-event-id"));
    const response = await exports.default.fetch(request);
    const cut = request.method === "GET" && request.url.endsWith("/stream") ? cuts.shift() : undefined;
    if (cut === undefined || !response.body) return response;
    // A connection that drops after `cut` whole events.
    let events = 0;
    let text = "";
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (;;) {
          const at = text.indexOf("\n\n");
          if (at >= 0) {
            controller.enqueue(new TextEncoder().encode(text.slice(0, at + 2)));
            text = text.slice(at + 2);
            if (++events >= cut) {
              controller.close();
              await reader.cancel();
            }
            return;
          }
          const read = await reader.read();
          if (read.done) return controller.close();
          text += read.value;
        }
      },
    });
    return new Response(body, response);
  };
  return createHttpClient({ baseUrl: "http://switchyard.test/", token: TOKEN, fetch: fetcher });
}

const shape = (e: StreamEvent) => [e.id, e.event, e.event === "chunk" ? e.data.data : e.event === "transition" ? e.data.to : e.event === "end" ? e.data.job.state : e.data.progress];

describe("the HTTP client's stream()", () => {
  it("yields a job's events live, ending with end once settled; writeStream writes chunks", async () => {
    const fixture = await setup();
    await enqueue(fixture);
    const claimed = await claimOne(fixture);
    const lane = client().lane(fixture.lane);
    const read: StreamEvent[] = [];
    const reading = (async () => {
      for await (const event of lane.stream(claimed.id)) read.push(event);
    })();
    expect(await lane.writeStream(claimed.id, { token: claimed.lease.token, chunks: ["a", { b: 2 }] })).toEqual({ written: 2, lastEventId: 4 });
    await lane.complete(claimed.id, { token: claimed.lease.token });
    await reading;
    expect(read.map(shape)).toEqual([
      [1, "transition", "queued"],
      [2, "transition", "running"],
      [3, "chunk", "a"],
      [4, "chunk", { b: 2 }],
      [5, "transition", "settled"],
      [null, "end", "settled"],
    ]);
    const after: StreamEvent[] = [];
    for await (const event of lane.stream(claimed.id, { after: 3 })) after.push(event);
    expect(after.map((e) => e.id)).toEqual([4, 5, null]);
  });

  it("opens a dropped connection again after the last event it saw: no gap, no repeat", async () => {
    const fixture = await setup();
    await enqueue(fixture);
    const claimed = await claimOne(fixture);
    const base = client();
    await base.lane(fixture.lane).writeStream(claimed.id, { token: claimed.lease.token, chunks: [1, 2, 3] });
    await base.lane(fixture.lane).complete(claimed.id, { token: claimed.lease.token });
    const seen: (string | null)[] = [];
    const lane = client({ cut: [2, 1], seen }).lane(fixture.lane);
    const events: StreamEvent[] = [];
    for await (const event of lane.stream(claimed.id)) events.push(event);
    expect(events.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6, null]);
    expect(seen).toEqual(["0", "2", "3"]);
  });

  it("throws job_not_found for an unknown job", async () => {
    const fixture = await setup();
    const lane = client().lane(fixture.lane);
    const refused = await (async () => {
      for await (const _ of lane.stream("nobody")) return null;
      return null;
    })().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(QueueError);
    expect((refused as QueueError).code).toBe("job_not_found");
  });
});

describe("createWorker's stream.write", () => {
  it("writes a handler's chunks through the route, and a chunk over 64 KiB rejects without ending the attempt", async () => {
    const name = crypto.randomUUID();
    const events: WorkerEvent[] = [];
    let done!: () => void;
    const completed = new Promise<void>((resolve) => (done = resolve));
    const worker = createWorker({
      url: "http://switchyard.test", token: TOKEN, lane: name, waitMs: 5_000,
      handlers: {
        [PULL_KIND]: async (_payload, { stream }) => {
          await stream.write({ step: 1 });
          const big = await stream.write("x".repeat(MAX_STREAM_CHUNK_BYTES)).catch((e: unknown) => (e as QueueError).code);
          await stream.write({ step: 2 });
          return { big };
        },
      },
      fetch: (input, init) => exports.default.fetch(new Request(input, init)),
      onEvent: (event) => {
        events.push(event);
        if (event.type === "completed") done();
      },
    });
    const lane = createLaneClient(env.LANE).lane(name);
    await lane.enqueue({ id: "w", kind: PULL_KIND });
    await completed;
    await worker.stop({ graceMs: 1_000 });
    expect(await lane.get("w")).toMatchObject({ outcome: "completed", result: { big: "payload_too_large" } });
    const read: StreamEvent[] = [];
    for await (const event of client().lane(name).stream("w")) read.push(event);
    expect(read.filter((e) => e.event === "chunk").map(shape)).toEqual([
      [3, "chunk", { step: 1 }],
      [4, "chunk", { step: 2 }],
    ]);
  });
});
