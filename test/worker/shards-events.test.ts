/**
 * A sharded lane's events socket (docs/api.md "Live events"): one URL hears every shard, as a lane
 * of one object is heard, its hello speaking for the whole lane.
 */
import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { get, post, PULL_KIND } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";
import { eventsRequest, mintTicket, openEvents } from "../helpers/sockets.js";

describe("shards: the events socket", () => {
  it("hears a transition of a job on a shard other than shard 0, through the one URL", async () => {
    const fixture = await setupSharded(4);
    const socket = await openEvents(fixture.lane);
    await socket.until((m) => m.type === "hello");
    const enqueued = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, queue: keyOn(3, 4, "q") });
    expect(enqueued.status).toBe(201);
    const heard = await socket.until((m) => m.type === "transition" && m.id === enqueued.body.job.id);
    expect(heard).toMatchObject({ from: null, to: "queued", kind: PULL_KIND });
    socket.ws.close();
  });

  it("says one hello for the whole lane: its counts summed over the shards", async () => {
    const fixture = await setupSharded(4);
    for (let i = 0; i < 4; i++) expect((await post(`${fixture.base}/jobs`, { kind: PULL_KIND, queue: keyOn(i, 4, "q") })).status).toBe(201);
    const socket = await openEvents(fixture.lane);
    const hello = await socket.until((m) => m.type === "hello");
    const info = (await get(fixture.base)).body;
    expect(hello.lane).toBe(fixture.lane);
    expect(hello.counts).toEqual(info.counts);
    expect(hello.counts.queued).toBe(4);
    expect(hello.concurrency).toBe(info.concurrency);
    expect(hello.paused).toBe(info.paused);
    expect(socket.messages.filter((m) => m.type === "hello")).toHaveLength(1);
    socket.ws.close();
  });

  it("sends the lane's counts, summed, when a shard's change", async () => {
    const fixture = await setupSharded(4);
    const socket = await openEvents(fixture.lane);
    await socket.until((m) => m.type === "hello");
    for (let i = 0; i < 4; i++) expect((await post(`${fixture.base}/jobs`, { kind: PULL_KIND, queue: keyOn(i, 4, "q") })).status).toBe(201);
    const counts = await socket.until((m) => m.type === "counts" && m.counts.queued === 4, 5_000);
    expect(counts.counts.queued).toBe(4);
    socket.ws.close();
  });

  it("answers a keep-alive ping with pong", async () => {
    const fixture = await setupSharded(2);
    const response = await exports.default.fetch(eventsRequest(fixture.lane, await mintTicket(fixture.lane)));
    expect(response.status).toBe(101);
    const ws = response.webSocket!;
    const pong = new Promise<unknown>((resolve) => ws.addEventListener("message", (e) => e.data === "pong" && resolve(e.data)));
    ws.accept();
    ws.send("ping");
    expect(await pong).toBe("pong");
    ws.close();
  });

  it("closes the client's socket when a shard's socket closes", async () => {
    const fixture = await setupSharded(2);
    const socket = await openEvents(fixture.lane);
    await socket.until((m) => m.type === "hello");
    await runInDurableObject(fixture.shard(1), (_lane, state) => {
      for (const ws of state.getWebSockets()) ws.close(1001, "going away");
    });
    await socket.closed;
  });
});
