/**
 * Live events (docs/api.md "Live events"): tickets over HTTP, the ticket checked before the upgrade, and
 * what a lane's socket hears: hello first, then every durable transition in order, counts throttled.
 */
import { createExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { issueTicket } from "../../src/worker/tickets.js";
import { call, claimOne, enqueue, expectError, post, PULL_KIND, read, ROTATED_TOKEN, setup, T0, TOKEN } from "../helpers/http.js";
import { eventsRequest, mintTicket, openEvents, path } from "../helpers/sockets.js";

const events = async (lane: string, ticket: string | null, upgrade = true) => read(await exports.default.fetch(eventsRequest(lane, ticket, upgrade)));

describe("POST /v1/tickets", () => {
  it("mints a ticket that expires within 60 s, for one lane or every lane", async () => {
    const before = Date.now();
    for (const body of [{ lane: "lane-1" }, {}, undefined]) {
      const answer = await post("/v1/tickets", body);
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body).sort()).toEqual(["expiresAt", "ticket"]);
      expect(answer.body.expiresAt).toBeGreaterThan(before);
      expect(answer.body.expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
    }
  });

  it("requires the bearer token", async () => {
    expectError(await post("/v1/tickets", {}, { token: null }), 401, "unauthorized");
    expectError(await post("/v1/tickets", {}, { token: "wrong" }), 401, "unauthorized");
  });

  it("refuses a lane name that breaks the pattern, and unknown fields", async () => {
    expectError(await post("/v1/tickets", { lane: "no spaces" }), 400, "invalid_request");
    expectError(await post("/v1/tickets", { lanes: ["a"] }), 400, "invalid_request");
  });
});

describe("GET /v1/lanes/{lane}/events", () => {
  it("without a ticket is 401, with or without the upgrade", async () => {
    expectError(await events("lane-1", null), 401, "unauthorized");
    expectError(await events("lane-1", null, false), 401, "unauthorized");
    expectError(await events("lane-1", ""), 401, "unauthorized");
  });

  it("with a wrong, tampered, expired or other-lane ticket is 401, with or without the upgrade", async () => {
    const good = await mintTicket("lane-1");
    const [version, claims, mac] = good.split(".") as [string, string, string];
    const tampered = `${version}.${claims}.${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
    const expired = (await issueTicket([TOKEN], "lane-1", Date.now() - 61_000)).ticket;
    const unlisted = (await issueTicket(["never-listed"], "lane-1", Date.now())).ticket;
    const bearer = TOKEN; // the API token itself is no ticket
    for (const ticket of ["nonsense", tampered, expired, unlisted, bearer, await mintTicket("lane-2")]) {
      for (const upgrade of [true, false]) expectError(await events("lane-1", ticket, upgrade), 401, "unauthorized");
    }
  });

  it("with a good ticket but no upgrade is 426 upgrade_required", async () => {
    expectError(await events("lane-1", await mintTicket("lane-1"), false), 426, "upgrade_required");
    expectError(await events("lane-1", await mintTicket(), false), 426, "upgrade_required");
  });

  it("opens with a ticket for the lane, for every lane, or signed under a rotated-in token", async () => {
    const lane = await setup();
    const rotated = (await issueTicket([ROTATED_TOKEN], lane.lane, Date.now())).ticket;
    for (const ticket of [await mintTicket(lane.lane), await mintTicket(), rotated]) {
      const socket = await openEvents(lane.lane, ticket);
      expect((await socket.until((m) => m.type === "hello")).lane).toBe(lane.lane);
      socket.ws.close();
    }
  });

  it("fails closed without API_TOKEN: 503, whatever the ticket", async () => {
    const ticket = await mintTicket("lane-1");
    for (const apiToken of ["", " , "]) {
      const response = await createApp().fetch(eventsRequest("lane-1", ticket), { ...env, API_TOKEN: apiToken }, createExecutionContext());
      expectError(await read(response), 503, "auth_not_configured");
    }
  });

  it("needs no bearer token, and a ticket is not accepted as one elsewhere", async () => {
    const ticket = await mintTicket();
    expectError(await call("GET", "/v1/lanes", { token: ticket }), 401, "unauthorized");
  });
});

describe("a lane's events socket", () => {
  it("says hello first: the lane, its counts, paused and concurrency", async () => {
    const lane = await setup();
    await enqueue(lane);
    await call("PATCH", lane.base, { json: { paused: true, concurrency: 4 } });
    const socket = await openEvents(lane.lane);
    const hello = await socket.until((m) => m.type === "hello");
    expect(socket.messages[0]).toBe(hello);
    expect(hello).toMatchObject({ type: "hello", lane: lane.lane, paused: true, concurrency: 4 });
    expect(hello.counts).toMatchObject({ queued: 1, running: 0, completed: 0 });
  });

  it("sends every transition in order: the enqueue, the claim, the outcome", async () => {
    const lane = await setup();
    const socket = await openEvents(lane.lane);
    await socket.until((m) => m.type === "hello");
    const job = await enqueue(lane, { id: "j1" });
    const claimed = await claimOne(lane);
    await post(`${lane.base}/jobs/${job.id}/complete`, { token: claimed.lease.token, result: { ok: true } });
    const settled = await socket.until((m) => m.type === "transition" && m.to === "settled");
    expect(path(socket, "j1")).toEqual(["null>queued", "queued>running", "running>settled"]);
    expect(settled).toEqual({ type: "transition", id: "j1", kind: PULL_KIND, from: "running", to: "settled", outcome: "completed", attempt: 1, at: T0 });
    const enqueued = socket.messages.find((m) => m.type === "transition")!;
    expect(enqueued).toEqual({ type: "transition", id: "j1", kind: PULL_KIND, from: null, to: "queued", outcome: null, attempt: 0, at: T0 });
  });

  it("sends a retry as running → queued, and a batch's enqueues in request order", async () => {
    const lane = await setup();
    const socket = await openEvents(lane.lane);
    await socket.until((m) => m.type === "hello");
    const batch = await post(`${lane.base}/jobs/batch`, { jobs: ["b1", "b2", "b3", "b2"].map((id) => ({ id, kind: PULL_KIND, payload: {} })) });
    expect(batch.status).toBe(200);
    const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
    await post(`${lane.base}/jobs/b1/fail`, { token: claimed.body.jobs[0].lease.token, error: "again" });
    await socket.until((m) => m.type === "transition" && m.id === "b1" && m.from === "running");
    const enqueues = socket.messages.filter((m) => m.type === "transition" && m.from === null).map((m) => m.id);
    expect(enqueues).toEqual(["b1", "b2", "b3"]);
    expect(path(socket, "b1")).toEqual(["null>queued", "queued>running", "running>queued"]);
  });

  it("sends the counts after transitions, then at most once a second while they change", async () => {
    const lane = await setup();
    const socket = await openEvents(lane.lane);
    await socket.until((m) => m.type === "hello");
    await enqueue(lane, { id: "c1" });
    const first = await socket.until((m) => m.type === "counts");
    const firstAt = Date.now();
    expect(first.counts).toMatchObject({ queued: 1 });
    for (const id of ["c2", "c3", "c4"]) await enqueue(lane, { id });
    const last = await socket.until((m) => m.type === "counts" && m.counts.queued === 4, 3_000);
    expect(Date.now() - firstAt).toBeGreaterThanOrEqual(900);
    // The three enqueues after the first share one counts message, sent once the second was up.
    expect(socket.messages.filter((m) => m.type === "counts")).toEqual([first, last]);
    const transitionsBefore = socket.messages.slice(0, socket.messages.indexOf(first)).filter((m) => m.type === "transition");
    expect(transitionsBefore.map((m) => m.id)).toEqual(["c1"]);
  });

  it("is heard by every open socket of the lane, and by none of another lane", async () => {
    const lane = await setup();
    const other = await setup();
    const [a, b, elsewhere] = await Promise.all([openEvents(lane.lane), openEvents(lane.lane), openEvents(other.lane)]);
    await enqueue(lane, { id: "shared" });
    for (const socket of [a, b]) await socket.until((m) => m.type === "transition" && m.id === "shared");
    await enqueue(other, { id: "mine" });
    await elsewhere.until((m) => m.type === "transition" && m.id === "mine");
    expect(elsewhere.messages.some((m) => m.id === "shared")).toBe(false);
  });

  it("stops hearing transitions once closed, and the lane goes on", async () => {
    const lane = await setup();
    const socket = await openEvents(lane.lane);
    await socket.until((m) => m.type === "hello");
    socket.ws.close(1000, "bye");
    await socket.closed;
    await enqueue(lane, { id: "after" });
    expect((await call("GET", `${lane.base}/jobs/after`)).body.state).toBe("queued");
    expect(socket.messages.some((m) => m.id === "after")).toBe(false);
  });
});
