/**
 * createWorker's `stream.write` batches: the chunks a handler writes in one tick go in one fenced
 * POST (at most 100, within the body limit), in order, each write answered by its own batch's outcome.
 */
import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import { createWorker, type WorkerHandler } from "../../src/client/worker.js";
import type { QueueError } from "../../src/shared/errors.js";
import type { StreamEvent } from "../../src/shared/stream.js";
import { PULL_KIND, TOKEN } from "../helpers/http.js";

/** Runs `handler` on one job of a fresh lane; answers the job, its stream's chunks and the chunk POSTs sent. */
async function run(handler: WorkerHandler) {
  const name = crypto.randomUUID();
  const posts: number[] = [];
  let done!: () => void;
  const settled = new Promise<void>((resolve) => (done = resolve));
  const fetcher = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    if (request.method === "POST" && new URL(request.url).pathname.endsWith("/stream")) posts.push(((await request.clone().json()) as { chunks: unknown[] }).chunks.length);
    return exports.default.fetch(request);
  };
  const worker = createWorker({
    url: "http://switchyard.test", token: TOKEN, lane: name, waitMs: 5_000,
    handlers: { [PULL_KIND]: handler },
    fetch: fetcher,
    onEvent: (event) => (event.type === "completed" || event.type === "failed") && done(),
  });
  const lane = createLaneClient(env.LANE).lane(name);
  await lane.enqueue({ id: "w", kind: PULL_KIND });
  await settled;
  await worker.stop({ graceMs: 1_000 });
  const chunks: unknown[] = [];
  const http = createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });
  for await (const event of http.lane(name).stream("w")) if (event.event === "chunk") chunks.push((event as Extract<StreamEvent, { event: "chunk" }>).data.data);
  return { job: await lane.get("w"), chunks, posts };
}

it("50 writes in one tick make one request, in order, each write resolved", async () => {
  const { job, chunks, posts } = await run(async (_payload, { stream }) => {
    const writes = Array.from({ length: 50 }, (_, i) => stream.write({ n: i }));
    const answers = await Promise.allSettled(writes);
    return answers.every((a) => a.status === "fulfilled");
  });
  expect(job).toMatchObject({ outcome: "completed", result: true });
  expect(posts).toEqual([50]);
  expect(chunks).toEqual(Array.from({ length: 50 }, (_, i) => ({ n: i })));
});

it("at most 100 chunks a request: 250 writes in one tick make three, in order", async () => {
  const { job, chunks, posts } = await run(async (_payload, { stream }) => {
    await Promise.all(Array.from({ length: 250 }, (_, i) => stream.write(i)));
    return "ok";
  });
  expect(job).toMatchObject({ outcome: "completed", result: "ok" });
  expect(posts).toEqual([100, 100, 50]);
  expect(chunks).toEqual(Array.from({ length: 250 }, (_, i) => i));
});

it("within the body limit: 17 chunks of 60 KiB in one tick make two requests", async () => {
  const big = "x".repeat(60 * 1024);
  const { job, chunks, posts } = await run(async (_payload, { stream }) => {
    await Promise.all(Array.from({ length: 17 }, () => stream.write(big)));
    return "ok";
  });
  expect(job).toMatchObject({ outcome: "completed", result: "ok" });
  expect(posts).toEqual([16, 1]);
  expect(chunks).toHaveLength(17);
});

it("a chunk too large rejects alone; the writes of its tick still go", async () => {
  const { job, chunks, posts } = await run(async (_payload, { stream }) => {
    const [a, tooBig, b] = await Promise.allSettled([stream.write("a"), stream.write("x".repeat(70 * 1024)), stream.write("b")]);
    return [a.status, tooBig.status === "rejected" ? (tooBig.reason as QueueError).code : "written", b.status];
  });
  expect(job).toMatchObject({ outcome: "completed", result: ["fulfilled", "payload_too_large", "fulfilled"] });
  expect(posts).toEqual([2]);
  expect(chunks).toEqual(["a", "b"]);
});

it("a refused batch rejects each of its writes with the refusal", async () => {
  const { job, chunks, posts } = await run(async (_payload, { stream }) => {
    await Promise.all(Array.from({ length: 960 }, (_, i) => stream.write(i)));
    // 50 more would pass the job's 1000 chunks: the batch is refused whole.
    const over = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => stream.write(960 + i)));
    return over.map((a) => (a.status === "rejected" ? (a.reason as QueueError).code : "written"));
  });
  expect(job).toMatchObject({ outcome: "completed", result: Array.from({ length: 50 }, () => "stream_limit") });
  expect(posts).toEqual([...Array.from({ length: 9 }, () => 100), 60, 50]);
  expect(chunks).toHaveLength(960);
});
