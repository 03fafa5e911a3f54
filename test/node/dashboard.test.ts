/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against the real
 * runtime (`wrangler dev`): the token, the lanes, a lane live over its events socket, the job view's
 * cancel and requeue, pause, hostile payloads, a refused token. Saves the README's screenshots.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { count, Dashboard, row } from "./dashboard-session.js";

const SCREENSHOTS = resolve(import.meta.dirname, "../../docs/screenshots");
const XSS = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`;

let dashboard: Dashboard;
let runtime: Dashboard["runtime"];

beforeAll(async () => {
  dashboard = await Dashboard.start();
  runtime = dashboard.runtime;
});

afterAll(async () => {
  await dashboard?.stop();
});

const newPage = () => dashboard.newPage();
const signIn: Dashboard["signIn"] = (page, token) => dashboard.signIn(page, token);
const show = (view: string) => dashboard.show(view);
const laneView = (lane: string) => dashboard.laneView(lane);
const enqueue: Dashboard["enqueue"] = (lane, spec) => dashboard.enqueue(lane, spec);
const jobUntil: Dashboard["jobUntil"] = (lane, id, check, timeoutMs) => dashboard.jobUntil(lane, id, check, timeoutMs);

describe("the dashboard", () => {
  it("explains a wrong token, and keeps nothing of it", async () => {
    const page = await newPage();
    await signIn(page, "not-the-token");
    const alert = page.getByRole("alert");
    await expect.poll(() => alert.textContent()).toMatch(/refused this token \(401 unauthorized\)/);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.locator("[data-testid=token-form]").isVisible()).toBe(true);
    // A token the server stops accepting later brings the question back with the reason.
    const stale = await newPage();
    await stale.addInitScript(() => sessionStorage.setItem("switchyard.apiToken", "rotated-out"));
    await stale.goto(new URL("/dashboard", runtime.url).href);
    await expect.poll(() => stale.getByRole("alert").textContent()).toMatch(/401 unauthorized/);
    expect(await stale.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it("takes the token once and shows every lane with its counts", async () => {
    const lane = "counts";
    for (let i = 0; i < 3; i++) await enqueue(lane, { kind: "demo.echo", payload: { i } });
    await jobUntil(lane, (await enqueue(lane, { kind: "demo.echo", payload: {} })).id, (j) => j.state === "settled");
    const page = await newPage();
    await signIn(page);
    const lanes = page.locator(`[data-testid=lanes] tr[data-lane="${lane}"]`);
    await expect.poll(() => lanes.locator("[data-count=completed]").textContent(), { timeout: 5_000 }).toBe("4");
    expect(await page.evaluate(() => sessionStorage.getItem("switchyard.apiToken"))).toBe(runtime.apiToken);
    // Sortable: the most completed first.
    await enqueue("counts-quiet", { kind: "demo.echo", payload: {} });
    await page.locator('[data-testid=lanes] tr[data-lane="counts-quiet"]').waitFor({ timeout: 5_000 });
    await page.getByRole("button", { name: "Completed" }).click();
    expect(await page.locator("th", { hasText: "Completed" }).getAttribute("aria-sort")).toBe("descending");
    const order = await page.locator("[data-testid=lanes] tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-lane")));
    expect(order.indexOf(lane)).toBeLessThan(order.indexOf("counts-quiet"));
    await lanes.getByRole("link").click();
    await expect.poll(() => count(page, "completed").textContent()).toBe("4");
    // The token is asked for once: a reload keeps the session.
    await page.reload();
    await expect.poll(() => count(page, "completed").textContent()).toBe("4");
  });

  it("shows a job enqueued over the API appear and settle live, within a second, without a reload", async () => {
    const lane = "live";
    const page = await laneView(lane);
    await page.evaluate(() => ((globalThis as any).__sameDocument = true));
    // Timed from the moment the API has the job (the enqueue's answer) and the moment it settled.
    const job = await enqueue(lane, { id: "live-1", kind: "demo.sleep", payload: { ms: 300 } });
    const enqueuedAt = Date.now();
    await row(page, job.id).waitFor({ timeout: 1_000 });
    expect(Date.now() - enqueuedAt).toBeLessThan(1_000);
    await row(page, job.id, '[data-state="settled"][data-outcome="completed"]').waitFor({ timeout: 3_000 });
    const seenSettledAt = Date.now();
    const settled = await jobUntil(lane, job.id, (j) => j.state === "settled");
    expect(seenSettledAt - settled.settledAt).toBeLessThan(1_000);
    expect(await page.evaluate(() => (globalThis as any).__sameDocument)).toBe(true);
    await expect.poll(() => count(page, "completed").textContent()).toBe("1");
    await page.locator("[data-testid=feed] li", { hasText: "live-1" }).first().waitFor();
  });

  it("cancels a running demo.sleep from the job view", async () => {
    const lane = "cancel";
    const job = await enqueue(lane, { id: "sleeper", kind: "demo.sleep", payload: { ms: 60_000 } });
    await jobUntil(lane, job.id, (j) => j.state === "running");
    const page = await laneView(lane);
    await row(page, job.id).getByRole("link").click();
    await page.locator('[data-testid=job][data-state="running"]').waitFor();
    await page.getByRole("button", { name: "Cancel…" }).click();
    await page.locator('[data-testid=job][data-state="settled"][data-outcome="cancelled"]').waitFor({ timeout: 5_000 });
    expect((await jobUntil(lane, job.id, (j) => j.state === "settled")).outcome).toBe("cancelled");
  });

  it("requeues a failed demo.fail from the job view", async () => {
    const lane = "requeue";
    const job = await enqueue(lane, { id: "failing", kind: "demo.fail", payload: { failTimes: 1 }, maxAttempts: 1 });
    const failed = await jobUntil(lane, job.id, (j) => j.state === "settled");
    expect(failed.outcome).toBe("failed");
    const page = await show(`lanes/${lane}/jobs/${job.id}`);
    await page.locator('[data-testid=job][data-outcome="failed"]').waitFor();
    await page.getByRole("button", { name: "Requeue" }).click();
    // It ran again, with a fresh attempt budget (and failed again: demo.fail counts attempts).
    const again = await jobUntil(lane, job.id, (j) => j.generation === 2 && j.state === "settled");
    expect(again).toMatchObject({ outcome: "failed", attempts: 1 });
    await page.getByText("generation 2").waitFor({ timeout: 5_000 });
  });

  it("pauses a lane: nothing starts until it resumes", async () => {
    const lane = "pause";
    const page = await laneView(lane);
    await page.getByRole("button", { name: "Pause" }).click();
    await page.locator("[data-testid=paused]", { hasText: "paused" }).waitFor();
    expect((await runtime.api("GET", `/v1/lanes/${lane}`)).body.paused).toBe(true);
    const job = await enqueue(lane, { id: "held", kind: "demo.echo", payload: {} });
    await row(page, job.id, '[data-state="queued"]').waitFor({ timeout: 1_000 });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await row(page, job.id).getAttribute("data-state")).toBe("queued");
    expect(await count(page, "running").textContent()).toBe("0");
    expect((await runtime.api("GET", `/v1/lanes/${lane}/jobs/${job.id}`)).body).toMatchObject({ state: "queued", attempts: 0 });
    await page.getByRole("button", { name: "Resume" }).click();
    await row(page, job.id, '[data-state="settled"][data-outcome="completed"]').waitFor({ timeout: 3_000 });
  });

  it("renders hostile payloads, results and errors as inert text", async () => {
    const lane = "xss";
    const echo = await enqueue(lane, { id: "hostile", kind: "demo.echo", payload: { html: XSS } });
    await jobUntil(lane, echo.id, (j) => j.state === "settled");
    await enqueue(lane, { id: "hostile-error", kind: "pull.only", payload: XSS, maxAttempts: 1 });
    const claimed = await runtime.api("POST", `/v1/lanes/${lane}/claims`, { kinds: ["pull.only"] });
    await runtime.api("POST", `/v1/lanes/${lane}/jobs/hostile-error/fail`, { token: claimed.body.jobs[0].lease.token, error: XSS });
    const page = await laneView(lane);
    await row(page, "hostile-error", '[data-outcome="failed"]').waitFor();
    expect(await row(page, "hostile-error").locator(".error-cell").textContent()).toBe(XSS);
    await row(page, "hostile").getByRole("link").click();
    await page.locator('[data-testid=job][data-outcome="completed"]').waitFor();
    expect(await page.locator("pre.json").first().textContent()).toContain(XSS.replace(/"/g, '\\"'));
    await page.goto(new URL(`/dashboard#/lanes/${lane}/jobs/hostile-error`, runtime.url).href);
    await page.locator('[data-testid=job][data-outcome="failed"]').waitFor();
    expect(await page.locator(".fields .error-text").textContent()).toBe(XSS);
    expect(await page.locator("img, script:not([src])").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as any).__xss)).toBeUndefined();
  });

  it("enqueues from its form, sets concurrency, and sweeps only after a confirmation", async () => {
    const lane = "forms";
    const page = await laneView(lane);
    await page.getByRole("link", { name: "Enqueue a job in this lane" }).click();
    const form = page.locator("[data-testid=enqueue]");
    expect(await form.locator("input[name=lane]").inputValue()).toBe(lane);
    await form.locator("input[name=kind]").fill("demo.echo");
    await form.locator("textarea[name=payload]").fill('{"hello": "form"}');
    await form.locator("input[name=id]").fill("from-form");
    await form.getByRole("button", { name: "Enqueue" }).click();
    await page.getByRole("status").getByRole("link", { name: "from-form" }).waitFor();
    expect((await jobUntil(lane, "from-form", (j) => j.state === "settled")).result).toEqual({ hello: "form" });
    await form.locator("textarea[name=payload]").fill("{not json");
    await form.getByRole("button", { name: "Enqueue" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/not valid JSON/);

    await laneView(lane);
    await page.locator("input[name=concurrency]").fill("3");
    await page.getByRole("button", { name: "Set", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "Concurrency set to 3" }).waitFor();
    expect((await runtime.api("GET", `/v1/lanes/${lane}`)).body.concurrency).toBe(3);

    await page.locator("input[name=olderThanHours]").fill("0");
    await page.getByRole("button", { name: "Sweep…" }).click();
    await page.getByRole("status").filter({ hasText: "Swept 1 settled job" }).waitFor();
    expect(dashboard.confirmations.at(-1)).toMatch(/Delete every settled job of lane forms/);
    expect((await runtime.api("GET", `/v1/lanes/${lane}/jobs/from-form`)).status).toBe(404);
  });

  it("leaves nothing of a view behind when its reads answer after it is gone", async () => {
    const lane = "slow";
    const job = await enqueue(lane, { id: "slow-1", kind: "demo.sleep", payload: { ms: 60_000 } });
    await jobUntil(lane, job.id, (j) => j.state === "running");
    const page = await show("");
    // Answers 2.5 s late: the view asks again every second while the job runs, so when it goes, two
    // or three are in flight (hono/jsx/dom put a removed view back on the second late update).
    await page.route(`**/v1/lanes/${lane}/jobs/${job.id}`, async (route) => {
      await new Promise((r) => setTimeout(r, 2_500));
      await route.continue().catch(() => {});
    });
    await page.goto(new URL(`/dashboard#/lanes/${lane}/jobs/${job.id}`, runtime.url).href);
    await page.locator("[data-testid=job]").waitFor();
    await new Promise((r) => setTimeout(r, 2_100));
    await laneView(lane);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await page.locator("[data-testid=job]").count()).toBe(0);
    await page.unroute(`**/v1/lanes/${lane}/jobs/${job.id}`);
    await runtime.api("POST", `/v1/lanes/${lane}/jobs/${job.id}/cancel`);
  });

  it("has caused no script error, CSP violation or unexpected dialog", () => {
    expect(dashboard.problems).toEqual([]);
  });

  it("saves the README's screenshots", async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const lane = "emails";
    await runtime.api("POST", `/v1/lanes/${lane}/jobs/batch`, {
      jobs: [
        ...Array.from({ length: 6 }, (_, i) => ({ id: `welcome-${i + 1}`, kind: "demo.echo", payload: { to: `user${i + 1}@example.com` } })),
        { id: "digest-1", kind: "demo.sleep", payload: { ms: 60_000, progressEveryMs: 200 }, queue: "digests" },
        { id: "bounce-1", kind: "demo.fail", payload: { failTimes: 9 }, maxAttempts: 1 },
      ],
    });
    await jobUntil(lane, "bounce-1", (j) => j.state === "settled");
    const page = await laneView(lane);
    for (const id of ["receipt-7", "receipt-8"]) await enqueue(lane, { id, kind: "demo.sleep", payload: { ms: 400 } });
    await enqueue(lane, { id: "reminder-3", kind: "demo.echo", payload: {}, delayMs: 3_600_000 });
    await row(page, "receipt-8", '[data-state="settled"]').waitFor({ timeout: 3_000 });
    await page.screenshot({ path: join(SCREENSHOTS, "lane.png") });
    await page.goto(new URL("/dashboard#/", runtime.url).href);
    await page.locator(`[data-testid=lanes] tr[data-lane="${lane}"]`).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "lanes.png") });
    await page.goto(new URL(`/dashboard#/lanes/${lane}/jobs/digest-1`, runtime.url).href);
    await page.locator('[data-testid=job][data-state="running"]').waitFor();
    await page.getByRole("heading", { name: "Progress" }).waitFor();
    await page.getByText("None recorded").waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "job.png") });
  });
});
