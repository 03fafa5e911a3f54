/**
 * The dashboard's waits and streams in a real browser against the real runtime: a job's page shows
 * the waitpoints it waits on (its dependsOn items, and an in-process attempt's `ctx.waitFor`) and
 * sees them completed over the API; it shows the job's stream live,
 * chunks appearing as a pull consumer writes them and as `demo.stream` writes them, and the stream's
 * end; a running job is read once a refresh tick, its timer set once however often its view is drawn
 * before the timer's frame, and not at all once it settled or its view left; a lane's page lists its
 * pending waitpoints and completes one.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Dashboard } from "./dashboard-session.js";

let dashboard: Dashboard;

beforeAll(async () => {
  dashboard = await Dashboard.start();
});

afterAll(async () => {
  await dashboard?.stop();
});

const api = (method: string, path: string, body?: unknown) => dashboard.runtime.api(method, path, body);

async function createWaitpoint(lane: string, id: string, body: Record<string, unknown> = {}): Promise<void> {
  const made = await api("POST", `/v1/lanes/${lane}/waitpoints`, { id, ...body });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
}

const streamCounts = (page: Page) => page.locator("[data-testid=stream-counts]");

/** In the page: every stream response's body fails like a dropped connection when `__dropStreams()` is called. */
const DROPPABLE_STREAMS = `(() => {
  const original = window.fetch;
  const drops = [];
  window.__dropStreams = () => { for (const drop of drops.splice(0)) drop(); };
  window.fetch = async (...args) => {
    const response = await original(...args);
    if (!String(args[0]).includes("/stream?") || response.body === null) return response;
    let drop;
    const dropped = new Promise((_, reject) => { drop = () => reject(new TypeError("network error")); });
    dropped.catch(() => {});
    drops.push(drop);
    const reader = response.body.getReader();
    const body = new ReadableStream({
      async pull(controller) {
        try {
          const read = await Promise.race([reader.read(), dropped]);
          if (read.done) controller.close(); else controller.enqueue(read.value);
        } catch (error) {
          controller.error(error);
          reader.cancel().catch(() => {});
        }
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
})();`;

/**
 * In the page: `__holdFrames()` keeps every animation frame's callbacks (hono/jsx/dom runs a render's
 * effects in the next frame) until `__releaseFrames(keep)` runs those held so far, holding on if `keep`.
 */
const HELD_FRAMES = `(() => {
  const request = window.requestAnimationFrame.bind(window);
  let held = null;
  window.requestAnimationFrame = (callback) => (held === null ? request(callback) : (held.push(callback), 0));
  window.__holdFrames = () => { held ??= []; };
  window.__releaseFrames = (keep) => {
    const callbacks = held ?? [];
    held = keep ? [] : null;
    for (const callback of callbacks) request(callback);
  };
})();`;

/**
 * In the page: `setInterval` callbacks run only when `__tickIntervals()` runs each live one once;
 * it answers the paths the page fetched while they ran (a dashboard read calls `fetch` at once).
 */
const MANUAL_INTERVALS = `(() => {
  const live = new Map();
  let next = 1_000_000;
  let fetched = null;
  window.setInterval = (callback, _ms, ...args) => (live.set(next, () => callback(...args)), next++);
  window.clearInterval = (id) => void live.delete(id);
  const original = window.fetch;
  window.fetch = (...args) => (fetched?.push(new URL(String(args[0]), location.href).pathname), original(...args));
  window.__tickIntervals = () => {
    fetched = [];
    for (const run of [...live.values()]) run();
    const answer = fetched;
    fetched = null;
    return answer;
  };
})();`;

/** The app renders again (the same route heard again), then the held frames run. */
async function renderAgainThenRunFrames(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const window = globalThis as any;
    window.dispatchEvent(new window.HashChangeEvent("hashchange"));
    await new Promise((resolve) => setTimeout(resolve, 0));
    window.__releaseFrames(false);
  });
}

/**
 * Goes to `hash` with animation frames held, releasing them until `selector` is in the page; the
 * frame of the render that drew it stays held (checked before each release), its effects not yet run.
 */
async function drawHeld(page: Page, hash: string, selector: string): Promise<void> {
  await page.evaluate(
    async ({ hash, selector }) => {
      const window = globalThis as any;
      window.__holdFrames();
      window.location.hash = hash;
      for (let i = 0; i < 250 && window.document.querySelector(selector) === null; i++) {
        window.__releaseFrames(true);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    { hash, selector },
  );
  expect(await page.locator(selector).count()).toBe(1);
}

/**
 * A claimed (running) job of `lane` and a page that drew its view running, the frame of that render
 * held: its refresh timer and its stream not yet started. Intervals run by `__tickIntervals()`.
 */
async function runningJobHeld(lane: string, id: string, watch: (page: Page) => void = () => undefined) {
  const job = await dashboard.enqueue(lane, { id, kind: "pull.only", payload: {} });
  const claimed = await api("POST", `/v1/lanes/${lane}/claims`, { kinds: ["pull.only"] });
  expect(claimed.status).toBe(200);
  const page = await dashboard.newPage();
  await page.addInitScript(HELD_FRAMES);
  await page.addInitScript(MANUAL_INTERVALS);
  watch(page);
  await dashboard.signIn(page);
  await page.locator(".page").waitFor();
  await drawHeld(page, `#/lanes/${lane}/jobs/${job.id}`, '[data-testid=job][data-state="running"]');
  const tick = (): Promise<string[]> => page.evaluate(() => (globalThis as any).__tickIntervals());
  return { page, path: `/v1/lanes/${lane}/jobs/${job.id}`, token: claimed.body.jobs[0].lease.token as string, tick };
}

describe("the dashboard's waits and streams", () => {
  it("shows the waitpoints a job waits on, and one completed over the API as completed", async () => {
    const lane = "waits";
    await createWaitpoint(lane, "approval-1", { timeoutMs: 600_000 });
    await createWaitpoint(lane, "approval-2");
    const job = await dashboard.enqueue(lane, { id: "waiter", kind: "demo.echo", payload: {}, dependsOn: [{ waitpoint: "approval-1" }, { waitpoint: "approval-2" }] });
    const page = await dashboard.show(`lanes/${lane}/jobs/${job.id}`);
    await page.locator('[data-testid=job][data-state="blocked"]').waitFor();
    const first = page.locator(`[data-testid=waits] tr[data-waitpoint="${lane}/approval-1"]`);
    const second = page.locator(`[data-testid=waits] tr[data-waitpoint="${lane}/approval-2"]`);
    await page.locator(`[data-testid=waits] tr[data-waitpoint="${lane}/approval-1"][data-state="pending"]`).waitFor();
    expect(await first.locator(".badge").textContent()).toBe("pending");
    expect(await first.locator("td.num").textContent()).toBe("1"); // the job waits on it

    // Completing one leaves the job blocked on the other: the page sees it all the same.
    expect((await api("POST", `/v1/lanes/${lane}/waitpoints/approval-1/complete`, { result: { approvedBy: "ops" } })).status).toBe(200);
    await page.locator(`[data-testid=waits] tr[data-waitpoint="${lane}/approval-1"][data-state="completed"]`).waitFor({ timeout: 5_000 });
    expect(await first.locator("pre.json").textContent()).toContain('"approvedBy": "ops"');
    expect(await second.getAttribute("data-state")).toBe("pending");
    expect(await page.locator("[data-testid=job]").getAttribute("data-state")).toBe("blocked");

    expect((await api("POST", `/v1/lanes/${lane}/waitpoints/approval-2/complete`, {})).status).toBe(200);
    await page.locator(`[data-testid=waits] tr[data-waitpoint="${lane}/approval-2"][data-state="completed"]`).waitFor({ timeout: 5_000 });
    await page.locator('[data-testid=job][data-outcome="completed"]').waitFor({ timeout: 5_000 });
    expect(dashboard.problems).toEqual([]);
  });

  it("shows the wait an in-process attempt made (demo.approval's ctx.waitFor), and its completion", async () => {
    const lane = "approvals";
    const job = await dashboard.enqueue(lane, { id: "order-7", kind: "demo.approval", payload: { timeoutMs: 600_000 } });
    await dashboard.jobUntil(lane, job.id, (j) => j.state === "blocked");
    const page = await dashboard.show(`lanes/${lane}/jobs/${job.id}`);
    const wait = `[data-testid=waits] tr[data-waitpoint="${lane}/order-7.approval"][data-from="attempt"]`;
    await page.locator(`${wait}[data-state="pending"]`).waitFor({ timeout: 5_000 });
    expect((await api("POST", `/v1/lanes/${lane}/waitpoints/order-7.approval/complete`, { result: { by: "ops" } })).status).toBe(200);
    await page.locator('[data-testid=job][data-outcome="completed"]').waitFor({ timeout: 5_000 });
    await page.locator(`${wait}[data-state="completed"]`).waitFor({ timeout: 5_000 });
    expect(dashboard.problems).toEqual([]);
  });

  it("shows a job's stream live: chunks a pull consumer writes appear as they are written, then its end", async () => {
    const lane = "streams";
    const job = await dashboard.enqueue(lane, { id: "streamed", kind: "pull.only", payload: {} });
    const claimed = await api("POST", `/v1/lanes/${lane}/claims`, { kinds: ["pull.only"] });
    const token = claimed.body.jobs[0].lease.token;
    const page = await dashboard.show(`lanes/${lane}/jobs/${job.id}`);
    await page.locator('[data-testid=stream-state][data-state="live"]').waitFor({ timeout: 5_000 });
    // Its enqueue and its claim, so far.
    await expect.poll(() => streamCounts(page).getAttribute("data-transitions")).toBe("2");
    expect(await streamCounts(page).getAttribute("data-chunks")).toBe("0");

    const write = (chunks: unknown[]) => api("POST", `/v1/lanes/${lane}/jobs/${job.id}/stream`, { token, chunks });
    expect((await write(["Hello, ", "wor"])).status).toBe(200);
    await expect.poll(() => page.locator("[data-testid=stream-text]").textContent(), { timeout: 3_000 }).toBe("Hello, wor");
    expect((await write(["ld."])).status).toBe(200);
    await expect.poll(() => page.locator("[data-testid=stream-text]").textContent(), { timeout: 3_000 }).toBe("Hello, world.");
    expect(await page.locator('[data-testid=stream] li[data-type="chunk"]').count()).toBe(3);
    expect(await page.getAttribute("[data-testid=stream-state]", "data-state")).toBe("live");

    expect((await api("POST", `/v1/lanes/${lane}/jobs/${job.id}/complete`, { token, result: { ok: true } })).status).toBe(200);
    await page.locator('[data-testid=stream-state][data-state="ended"]').waitFor({ timeout: 5_000 });
    // running → completed (with completing between, where outcomes are delivered first).
    expect(Number(await streamCounts(page).getAttribute("data-transitions"))).toBeGreaterThanOrEqual(3);
    expect(dashboard.problems).toEqual([]);
  });

  it("resumes a dropped stream after the last event it showed: nothing missed, nothing twice", async () => {
    const lane = "stream-drops";
    const job = await dashboard.enqueue(lane, { id: "dropped", kind: "pull.only", payload: {} });
    const claimed = await api("POST", `/v1/lanes/${lane}/claims`, { kinds: ["pull.only"] });
    const token = claimed.body.jobs[0].lease.token;
    const write = (chunks: unknown[]) => api("POST", `/v1/lanes/${lane}/jobs/${job.id}/stream`, { token, chunks });
    const page = await dashboard.newPage();
    // A network that can drop the page's open streams on demand (the page's code is as served).
    await page.addInitScript(DROPPABLE_STREAMS);
    const asked: string[] = [];
    page.on("request", (request) => void (request.url().includes("/stream?") && asked.push(new URL(request.url()).search)));
    await dashboard.signIn(page);
    await page.goto(new URL(`/dashboard#/lanes/${lane}/jobs/${job.id}`, dashboard.runtime.url).href);
    await page.locator('[data-testid=stream-state][data-state="live"]').waitFor({ timeout: 5_000 });
    expect((await write(["one "])).status).toBe(200);
    await expect.poll(() => page.locator("[data-testid=stream-text]").textContent(), { timeout: 3_000 }).toBe("one ");
    const last = Number(await page.locator("[data-testid=stream] li").first().getAttribute("data-seq"));

    await page.evaluate(() => (globalThis as any).__dropStreams());
    expect((await write(["two ", "three"])).status).toBe(200);
    await expect.poll(() => page.locator("[data-testid=stream-text]").textContent(), { timeout: 10_000 }).toBe("one two three");
    expect(asked).toEqual(["?after=0", `?after=${last}`]);
    expect(await streamCounts(page).getAttribute("data-chunks")).toBe("3");
    expect(await page.locator('[data-testid=stream] li[data-type="chunk"]').count()).toBe(3);
    expect(await page.getAttribute("[data-testid=stream-state]", "data-state")).toBe("live");
    await page.context().close();
  });

  it("reads a job's stream once when its view renders again before the stream's effect has run", async () => {
    const lane = "stream-renders";
    const job = await dashboard.enqueue(lane, { id: "rendered", kind: "pull.only", payload: {} });
    const claimed = await api("POST", `/v1/lanes/${lane}/claims`, { kinds: ["pull.only"] });
    const token = claimed.body.jobs[0].lease.token;
    const page = await dashboard.newPage();
    await page.addInitScript(HELD_FRAMES);
    const asked: string[] = [];
    page.on("request", (request) => void (request.url().includes("/stream?") && asked.push(new URL(request.url()).search)));
    await dashboard.signIn(page);
    await page.locator(".page").waitFor();
    await page.evaluate((hash) => {
      const window = globalThis as any;
      window.__holdFrames();
      window.location.hash = hash;
    }, `#/lanes/${lane}/jobs/${job.id}`);
    // Frame by frame until the job is read and its stream panel drawn, its effect still to run.
    const panel = page.locator("[data-testid=stream-state]");
    await expect.poll(async () => (await page.evaluate(() => (globalThis as any).__releaseFrames(true)), panel.count()), { timeout: 5_000 }).toBe(1);
    await renderAgainThenRunFrames(page);
    await page.locator('[data-testid=stream-state][data-state="live"]').waitFor({ timeout: 5_000 });
    expect((await api("POST", `/v1/lanes/${lane}/jobs/${job.id}/stream`, { token, chunks: ["once"] })).status).toBe(200);
    await expect.poll(() => page.locator("[data-testid=stream-text]").textContent(), { timeout: 3_000 }).toBe("once");
    // One reader: its enqueue, its claim and the chunk, each counted and shown once.
    expect(asked).toEqual(["?after=0"]);
    expect(await streamCounts(page).getAttribute("data-transitions")).toBe("2");
    expect(await streamCounts(page).getAttribute("data-chunks")).toBe("1");
    expect(await page.locator("[data-testid=stream] li").count()).toBe(3);
    expect(dashboard.problems).toEqual([]);
    await page.context().close();
  });

  it("reads a running job once a timer tick when its view renders again before the refresh timer is set", async () => {
    const { page, path, tick } = await runningJobHeld("refresh-renders", "refreshed");
    await renderAgainThenRunFrames(page);
    // Its stream's effect runs in the same frame as its refresh timer's: once live, the timer is set.
    await page.locator('[data-testid=stream-state][data-state="live"]').waitFor({ timeout: 5_000 });
    // One refresh timer: each tick reads the job once (failed before: twice, one timer never cleared).
    expect([await tick(), await tick(), await tick()]).toEqual([[path], [path], [path]]);
    expect(dashboard.problems).toEqual([]);
    await page.context().close();
  });

  it("sets no refresh timer for a running job that settled before the timer's frame", async () => {
    const { page, path, token, tick } = await runningJobHeld("refresh-replaced", "settles");
    // Completed while the running view's effects wait: the socket's transition draws it settled.
    expect((await api("POST", `${path}/complete`, { token, result: { ok: true } })).status).toBe(200);
    await page.locator('[data-testid=job][data-outcome="completed"]').waitFor({ timeout: 5_000 });
    await page.evaluate(() => (globalThis as any).__releaseFrames(false));
    await page.locator('[data-testid=stream-state][data-state="ended"]').waitFor({ timeout: 5_000 });
    // The superseded run (running) started nothing: no timer reads the settled job (failed before: one read a tick, never cleared).
    expect([await tick(), await tick()]).toEqual([[], []]);
    expect(dashboard.problems).toEqual([]);
    await page.context().close();
  });

  it("starts neither the refresh timer nor the stream of a job view left before their frame", async () => {
    const lane = "refresh-left";
    const asked: string[] = [];
    const { page, path, tick } = await runningJobHeld(lane, "left", (page) => {
      page.on("request", (request) => void (request.url().includes("/stream?") && asked.push(request.url())));
    });
    // The lane's page replaces the job's view, then the held frames run (the view's effects among them).
    await page.evaluate((hash) => {
      const window = globalThis as any;
      window.location.hash = hash;
      window.dispatchEvent(new window.HashChangeEvent("hashchange"));
      window.__releaseFrames(false);
    }, `#/lanes/${lane}`);
    await page.locator("[data-testid=counts]").waitFor({ timeout: 5_000 });
    await page.evaluate(() => new Promise((resolve) => (globalThis as any).requestAnimationFrame(() => (globalThis as any).requestAnimationFrame(resolve))));
    // Failed before: the removed view's timer read the job each tick, and its stream was read, never closed.
    expect([...(await tick()), ...(await tick())].filter((fetched) => fetched === path)).toEqual([]);
    expect(asked).toEqual([]);
    expect(dashboard.problems).toEqual([]);
    await page.context().close();
  });

  it("shows demo.stream's chunks arrive, and keeps only the newest in the page", async () => {
    const lane = "demo-streams";
    const job = await dashboard.enqueue(lane, { id: "demo", kind: "demo.stream", payload: { chunks: 250, everyMs: 20 } });
    const page = await dashboard.show(`lanes/${lane}/jobs/${job.id}`);
    // Some arrived while it runs: live, not read once it is over.
    await expect
      .poll(async () => ({ state: await page.getAttribute("[data-testid=stream-state]", "data-state"), chunks: Number(await streamCounts(page).getAttribute("data-chunks")) }), { timeout: 5_000 })
      .toMatchObject({ state: "live", chunks: expect.toSatisfy((n: number) => n > 0 && n < 250) });
    await page.locator('[data-testid=stream-state][data-state="ended"]').waitFor({ timeout: 30_000 });
    expect(await streamCounts(page).getAttribute("data-chunks")).toBe("250");
    // Bounded: the page holds the newest 200 events, the last chunk among them.
    expect(await page.locator("[data-testid=stream] li").count()).toBe(200);
    expect(await page.locator('[data-testid=stream] li[data-type="chunk"]').first().textContent()).toContain('{"i":250}');
    expect(dashboard.problems).toEqual([]);
  });

  it("lists a lane's pending waitpoints, and completes one once confirmed", async () => {
    const lane = "pending-waitpoints";
    await createWaitpoint(lane, "wp-open", { timeoutMs: 600_000 });
    await createWaitpoint(lane, "wp-done");
    expect((await api("POST", `/v1/lanes/${lane}/waitpoints/wp-done/complete`, {})).status).toBe(200);
    const page = await dashboard.show(`lanes/${lane}`);
    const panel = page.locator("section.panel", { has: page.getByRole("heading", { name: /^Waitpoints/ }) });
    await panel.getByRole("heading", { name: "Waitpoints (1 pending)" }).waitFor({ timeout: 5_000 });
    const open = panel.locator('[data-testid=waitpoints] tr[data-waitpoint="wp-open"]');
    await open.waitFor({ timeout: 5_000 });
    expect(await open.getAttribute("data-state")).toBe("pending");
    expect(await panel.locator('[data-testid=waitpoints] tr[data-waitpoint="wp-done"]').count()).toBe(0);

    await open.getByRole("button", { name: "Complete…" }).click();
    await panel.getByRole("status").filter({ hasText: "Completed waitpoint wp-open." }).waitFor({ timeout: 5_000 });
    expect((await api("GET", `/v1/lanes/${lane}/waitpoints/wp-open`)).body.waitpoint.state).toBe("completed");
    await panel.getByText("No pending waitpoints.").waitFor({ timeout: 5_000 });
    await panel.getByRole("heading", { name: "Waitpoints (0 pending)" }).waitFor({ timeout: 5_000 });
    await panel.locator("select[name=waitpoint-state]").selectOption("completed");
    await panel.locator('[data-testid=waitpoints] tr[data-waitpoint="wp-open"][data-state="completed"]').waitFor({ timeout: 5_000 });
    expect(dashboard.problems).toEqual([]);
  });
});
