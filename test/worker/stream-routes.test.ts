/**
 * A job's stream over HTTP (docs/api.md "Results"): the SSE route's format, its resume by
 * `Last-Event-ID` or `?after`, a settled job's replay and end, live events as they are written, a
 * sharded lane; the chunk write's route and its refusals, each changing nothing.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_STREAM_CHUNK_BYTES } from "../../src/shared/defaults.js";
import { enqueueAndClaim, expectError, get, post, PULL_KIND, request, setup, T0, type LaneFixture } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

interface Sse {
  id: string | null;
  event: string;
  data: any;
}

/** An open SSE answer, read event by event (comment lines skipped). */
async function open(path: string, headers: Record<string, string> = {}) {
  const response = await exports.default.fetch(request("GET", path, { headers }));
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let done = false;
  const pending: Sse[] = [];
  const parse = (block: string) => {
    let id: string | null = null;
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const [field, ...rest] = line.split(": ");
      const value = rest.join(": ");
      if (field === "id") id = value;
      else if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0) pending.push({ id, event, data: JSON.parse(data.join("\n")) });
  };
  /** The next `n` events (fewer when the stream ends first). */
  const next = async (n = 1): Promise<Sse[]> => {
    while (pending.length < n && !done) {
      const read = await reader.read();
      if (read.done) done = true;
      else buffer += decoder.decode(read.value, { stream: true });
      let at: number;
      while ((at = buffer.indexOf("\n\n")) >= 0) {
        parse(buffer.slice(0, at));
        buffer = buffer.slice(at + 2);
      }
    }
    return pending.splice(0, n);
  };
  /** Every event up to the stream's close. */
  const rest = async (): Promise<Sse[]> => next(Number.MAX_SAFE_INTEGER);
  return { response, next, rest, ended: () => done };
}

/** A pull job claimed, given progress and two chunks, then completed: five stored events and the end. */
async function settledWithStream(lane: LaneFixture) {
  const claimed = await enqueueAndClaim(lane);
  const path = `${lane.base}/jobs/${claimed.id}`;
  lane.clock.advance(5);
  expect((await post(`${path}/progress`, { token: claimed.lease.token, progress: { pct: 50 } })).status).toBe(200);
  expect((await post(`${path}/stream`, { token: claimed.lease.token, chunks: ["tok", { n: 2 }] })).body).toEqual({ written: 2, lastEventId: 5 });
  lane.clock.advance(5);
  expect((await post(`${path}/complete`, { token: claimed.lease.token, result: { ok: true } })).status).toBe(200);
  return { id: claimed.id as string, path };
}

describe("GET …/jobs/{id}/stream", () => {
  it("replays a settled job's events as SSE (id, event, data on one line), then end without an id, and closes", async () => {
    const lane = await setup();
    const { id, path } = await settledWithStream(lane);
    const response = await exports.default.fetch(request("GET", `${path}/stream`));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("cache-control")).toBe("no-cache");
    const text = await response.text();
    const job = (await get(path)).body;
    expect(text).toBe(
      [
        `id: 1\nevent: transition\ndata: {"from":null,"to":"queued","outcome":null,"attempt":0,"at":${T0}}\n\n`,
        `id: 2\nevent: transition\ndata: {"from":"queued","to":"running","outcome":null,"attempt":1,"at":${T0}}\n\n`,
        `id: 3\nevent: progress\ndata: {"progress":{"pct":50},"at":${T0 + 5}}\n\n`,
        `id: 4\nevent: chunk\ndata: {"data":"tok","attempt":1,"at":${T0 + 5}}\n\n`,
        `id: 5\nevent: chunk\ndata: {"data":{"n":2},"attempt":1,"at":${T0 + 5}}\n\n`,
        `id: 6\nevent: transition\ndata: {"from":"running","to":"settled","outcome":"completed","attempt":1,"at":${T0 + 10}}\n\n`,
        `event: end\ndata: ${JSON.stringify({ job })}\n\n`,
      ].join(""),
    );
    expect(job).toMatchObject({ id, state: "settled" });
  });

  it("resumes after Last-Event-ID or ?after (the header wins), replaying only later events", async () => {
    const lane = await setup();
    const { path } = await settledWithStream(lane);
    const ids = (events: Sse[]) => events.map((e) => e.id ?? e.event);
    expect(ids(await (await open(`${path}/stream`, { "last-event-id": "4" })).rest())).toEqual(["5", "6", "end"]);
    expect(ids(await (await open(`${path}/stream?after=2`)).rest())).toEqual(["3", "4", "5", "6", "end"]);
    expect(ids(await (await open(`${path}/stream?after=1`, { "last-event-id": "5" })).rest())).toEqual(["6", "end"]);
    expect(ids(await (await open(`${path}/stream?after=0`)).rest())).toHaveLength(7);
    expect(ids(await (await open(`${path}/stream?after=99`)).rest())).toEqual(["end"]);
  });

  it("takes an empty Last-Event-ID as none (the SSE spec's reset): ?after then, else from the start", async () => {
    const lane = await setup();
    const { path } = await settledWithStream(lane);
    const ids = (events: Sse[]) => events.map((e) => e.id ?? e.event);
    expect(ids(await (await open(`${path}/stream`, { "last-event-id": "" })).rest())).toHaveLength(7);
    expect(ids(await (await open(`${path}/stream?after=4`, { "last-event-id": "  " })).rest())).toEqual(["5", "6", "end"]);
  });

  it("refuses a bad resume position with 400 and an unknown job with 404", async () => {
    const lane = await setup();
    const { path } = await settledWithStream(lane);
    for (const after of ["-1", "1.5", "x", ""]) expectError(await get(`${path}/stream?after=${encodeURIComponent(after)}`), 400, "invalid_request");
    expectError(await get(`${path}/stream`, { headers: { "last-event-id": "abc" } }), 400, "invalid_request");
    expectError(await get(`${lane.base}/jobs/nobody/stream`), 404, "job_not_found");
  });

  it("sends events live as they are written, then the end once the job settles", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const path = `${lane.base}/jobs/${claimed.id}`;
    const stream = await open(`${path}/stream`);
    expect((await stream.next(2)).map((e) => e.id)).toEqual(["1", "2"]);
    // Nothing new: the stream waits (the lane holds the call) until a chunk is written.
    expect((await post(`${path}/stream`, { token: claimed.lease.token, chunks: [{ t: "hello" }] })).status).toBe(200);
    expect(await stream.next()).toEqual([{ id: "3", event: "chunk", data: { data: { t: "hello" }, attempt: 1, at: T0 } }]);
    expect((await post(`${path}/progress`, { token: claimed.lease.token, progress: 1 })).status).toBe(200);
    expect(await stream.next()).toEqual([{ id: "4", event: "progress", data: { progress: 1, at: T0 } }]);
    expect((await post(`${path}/complete`, { token: claimed.lease.token })).status).toBe(200);
    const rest = await stream.rest();
    expect(rest.map((e) => e.event)).toEqual(["transition", "end"]);
    expect(JSON.stringify(rest), "a lease token in the stream").not.toContain(claimed.lease.token);
    expect(rest[1]!.data.job).toMatchObject({ id: claimed.id, state: "settled", outcome: "completed" });
    expect(stream.ended()).toBe(true);
  });

  it("streams the jobs of a 4-shard lane from their own shards", async () => {
    const lane = await setupSharded(4);
    for (let shard = 0; shard < 4; shard++) {
      const id = keyOn(shard, 4, "job");
      expect((await post(`${lane.base}/jobs`, { id, kind: PULL_KIND })).status).toBe(201);
    }
    const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND], max: 4 });
    expect(claimed.body.jobs).toHaveLength(4);
    for (const job of claimed.body.jobs) {
      const path = `${lane.base}/jobs/${job.id}`;
      expect((await post(`${path}/stream`, { token: job.lease.token, chunks: [job.id] })).body).toEqual({ written: 1, lastEventId: 3 });
      const stream = await open(`${path}/stream`);
      expect((await stream.next(3)).map((e) => e.data.data ?? e.data.to)).toEqual(["queued", "running", job.id]);
      expect((await post(`${path}/complete`, { token: job.lease.token })).status).toBe(200);
      expect((await stream.rest()).map((e) => e.event)).toEqual(["transition", "end"]);
    }
    expectError(await get(`${lane.base}/jobs/nobody/stream`), 404, "job_not_found");
  });
});

describe("POST …/jobs/{id}/stream", () => {
  it("refuses what the fence refuses, bad bodies and chunks over 64 KiB, writing nothing", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const path = `${lane.base}/jobs/${claimed.id}`;
    const token = claimed.lease.token;
    expectError(await post(`${path}/stream`, { token: "not-the-token", chunks: [1] }), 409, "lease_superseded");
    expectError(await post(`${lane.base}/jobs/nobody/stream`, { token, chunks: [1] }), 404, "job_not_found");
    expectError(await post(`${path}/stream`, { token, chunks: [] }), 400, "invalid_request");
    expectError(await post(`${path}/stream`, { token, chunks: Array.from({ length: 101 }, () => 1) }), 400, "invalid_request");
    expectError(await post(`${path}/stream`, { token }), 400, "invalid_request");
    expectError(await post(`${path}/stream`, { token, chunks: [1], extra: true }), 400, "invalid_request");
    expectError(await post(`${path}/stream`, { token, chunks: [1, "x".repeat(MAX_STREAM_CHUNK_BYTES)] }), 413, "payload_too_large");
    const stream = await open(`${path}/stream`);
    expect((await stream.next(2)).map((e) => e.data.to)).toEqual(["queued", "running"]);
    expect((await post(`${path}/complete`, { token })).status).toBe(200);
    expectError(await post(`${path}/stream`, { token, chunks: [1] }), 409, "job_settled");
    // No chunk was ever written: the completion follows the claim.
    expect((await stream.rest()).map((e) => e.id ?? e.event)).toEqual(["3", "end"]);
  });

  it("answers stream_limit with 409 past 1,000 chunks, writing none of the refused request", async () => {
    const lane = await setup();
    const claimed = await enqueueAndClaim(lane);
    const path = `${lane.base}/jobs/${claimed.id}`;
    for (let i = 0; i < 10; i++) expect((await post(`${path}/stream`, { token: claimed.lease.token, chunks: Array.from({ length: 100 }, () => i) })).status).toBe(200);
    expectError(await post(`${path}/stream`, { token: claimed.lease.token, chunks: [1] }), 409, "stream_limit");
    const stream = await open(`${path}/stream?after=1000`);
    expect((await stream.next(2)).map((e) => e.id)).toEqual(["1001", "1002"]);
    expect((await post(`${path}/complete`, { token: claimed.lease.token })).status).toBe(200);
    expect((await stream.rest()).map((e) => e.id ?? e.event)).toEqual(["1003", "end"]);
  });
});
