/**
 * The dashboard's operator controls in a real browser against the real runtime: failing a lane,
 * a queue's head and its purge, schedules (paging, pause and resume, delete, fires as they happen),
 * a job's checkpoints, live progress and error history, and the lifetime stats. Every destructive
 * control is tried with its confirmation refused first: then nothing may change.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shardOf } from "../../src/shared/shards.js";
import { count, Dashboard, row } from "./dashboard-session.js";

const XSS = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`;

let dashboard: Dashboard;

beforeAll(async () => {
  dashboard = await Dashboard.start();
});

afterAll(async () => {
  await dashboard?.stop();
});

const api = (method: string, path: string, body?: unknown) => dashboard.runtime.api(method, path, body);

/** Clicks a destructive control with its confirmation refused; returns the question it asked. */
async function refuse(click: () => Promise<void>): Promise<string> {
  const asked = dashboard.confirmations.length;
  dashboard.confirmAnswer = false;
  try {
    await click();
    await expect.poll(() => dashboard.confirmations.length).toBe(asked + 1);
  } finally {
    dashboard.confirmAnswer = true;
  }
  return dashboard.confirmations.at(-1)!;
}

/** A panel of the page, by its heading. */
const panel = (page: Page, title: string) => page.locator("section.panel", { has: page.getByRole("heading", { name: title, exact: true }) });

describe("the dashboard's controls", () => {
  it("fails a lane only once confirmed, and offers to go on while jobs are left", async () => {
    const lane = "doomed";
    expect((await api("PATCH", `/v1/lanes/${lane}`, { paused: true })).status).toBe(200);
    const jobs = Array.from({ length: 501 }, (_, i) => ({ id: `doomed-${i}`, kind: "demo.echo", payload: {} }));
    expect((await api("POST", `/v1/lanes/${lane}/jobs/batch`, { jobs })).body.results).toHaveLength(501);
    const page = await dashboard.laneView(lane);
    await expect.poll(() => count(page, "queued").textContent()).toBe("501");
    const control = page.locator("[data-testid=fail-lane]");
    await control.locator("input[name=reason]").fill("downstream gone");

    const question = await refuse(() => control.getByRole("button", { name: "Fail lane…" }).click());
    expect(question).toMatch(/^Fail every queued and running job of lane doomed with the error "downstream gone"\?/);
    await new Promise((r) => setTimeout(r, 300));
    expect((await api("GET", `/v1/lanes/${lane}`)).body.counts).toMatchObject({ queued: 501, failed: 0 });

    await control.getByRole("button", { name: "Fail lane…" }).click();
    await control.getByRole("status").filter({ hasText: "Failed 500 jobs so far: more are queued or running." }).waitFor();
    expect((await api("GET", `/v1/lanes/${lane}`)).body.counts).toMatchObject({ queued: 1, failed: 500 });
    await control.getByRole("button", { name: "Fail more" }).click();
    await control.getByRole("status").filter({ hasText: "Failed 501 jobs: none are left." }).waitFor();
    expect(await control.getByRole("button", { name: "Fail more" }).count()).toBe(0);
    expect((await api("GET", `/v1/lanes/${lane}`)).body.counts).toMatchObject({ queued: 0, failed: 501 });
    expect((await api("GET", `/v1/lanes/${lane}/jobs/doomed-500`)).body).toMatchObject({ outcome: "failed", error: "downstream gone" });
    await expect.poll(() => count(page, "failed").textContent(), { timeout: 3_000 }).toBe("501");
  });

  it("looks up a queue's head, follows it live, and purges its queued jobs once confirmed", async () => {
    const lane = "serial";
    expect((await api("PUT", `/v1/lanes/${lane}/queues/digests`, { concurrency: 1, rateLimit: { limit: 30, periodMs: 60_000 } })).status).toBe(200);
    expect((await api("PATCH", `/v1/lanes/${lane}`, { rateLimit: { limit: 1_000, periodMs: 1_000 } })).status).toBe(200);
    await dashboard.enqueue(lane, { id: "holder", kind: "demo.sleep", payload: { ms: 60_000 }, queue: "digests" });
    await dashboard.jobUntil(lane, "holder", (j) => j.state === "running");
    for (const id of ["next-1", "next-2"]) await dashboard.enqueue(lane, { id, kind: "demo.echo", payload: {}, queue: "digests" });
    const page = await dashboard.laneView(lane);
    // The lane's limits as the API has them.
    await expect.poll(() => page.locator("[data-testid=lane-rate-limit]").textContent()).toBe("1000 per 1.0 s");
    expect(await page.locator("[data-testid=lane-fairness]").textContent()).toBe("fifo");
    const lookUp = page.locator("[data-testid=queue-lookup]");
    await lookUp.locator("input[name=queue]").fill("digests");
    await lookUp.getByRole("button", { name: "Look up" }).click();
    const shown = page.locator('[data-testid=queue][data-queue="digests"]');
    await shown.waitFor();
    expect(await shown.locator("[data-testid=queue-head]").getAttribute("data-state")).toBe("running");
    expect(await shown.locator("[data-testid=queue-head] a").textContent()).toBe("holder");
    expect(await shown.locator("[data-testid=queue-queued]").textContent()).toBe("2");
    // The queue's settings and slots as the API has them.
    expect(await shown.locator("[data-testid=queue-running]").textContent()).toBe("1");
    expect(await shown.locator("[data-testid=queue-concurrency]").textContent()).toBe("1");
    expect(await shown.locator("[data-testid=queue-rate-limit]").textContent()).toBe("30 per 60 s");
    // Live: a job enqueued over the API counts without another look-up.
    await dashboard.enqueue(lane, { id: "next-3", kind: "demo.echo", payload: {}, queue: "digests" });
    await expect.poll(() => shown.locator("[data-testid=queue-queued]").textContent(), { timeout: 3_000 }).toBe("3");

    const purge = () => shown.getByRole("button", { name: "Purge queued jobs…" }).click();
    expect(await refuse(purge)).toBe("Delete the 3 queued jobs of queue digests in lane serial? A running head runs on. This cannot be undone.");
    await new Promise((r) => setTimeout(r, 300));
    expect((await api("GET", `/v1/lanes/${lane}/queues/digests`)).body.queued).toBe(3);
    await purge();
    await panel(page, "Queue").getByRole("status").filter({ hasText: "Purged 3 queued jobs of queue digests." }).waitFor();
    await expect.poll(() => shown.locator("[data-testid=queue-queued]").textContent()).toBe("0");
    expect(await shown.locator("[data-testid=queue-head] a").textContent()).toBe("holder");
    expect((await api("GET", `/v1/lanes/${lane}/jobs/next-1`)).status).toBe(404);
    expect((await api("GET", `/v1/lanes/${lane}/jobs/holder`)).body.state).toBe("running");

    await lookUp.locator("input[name=queue]").fill("nobody");
    await lookUp.getByRole("button", { name: "Look up" }).click();
    const idle = page.locator('[data-testid=queue][data-queue="nobody"]');
    await idle.waitFor();
    expect(await idle.locator("[data-testid=queue-head]").getAttribute("data-state")).toBe("idle");
    expect(await idle.getByRole("button", { name: "Purge queued jobs…" }).isDisabled()).toBe(true);
    await api("POST", `/v1/lanes/${lane}/jobs/holder/cancel`);
  });

  it("lists schedules a page at a time, pauses and resumes one, and deletes one once confirmed", async () => {
    const lane = "timed";
    const put = async (name: string, definition: Record<string, unknown>) =>
      expect((await api("PUT", `/v1/lanes/${lane}/schedules/${name}`, definition)).status).toBe(201);
    await put("nightly", { cron: "0 3 * * *", timezone: "Europe/Paris", job: { kind: "demo.echo", payload: { report: "daily" } } });
    await put("heartbeat", { everyMs: 3_600_000, job: { kind: "demo.echo", queue: "beats" } });
    for (let i = 1; i <= 19; i++) await put(`tick-${String(i).padStart(2, "0")}`, { everyMs: 3_600_000, job: { kind: "demo.echo" } });
    const page = await dashboard.laneView(lane);
    const schedules = panel(page, "Schedules");
    const nightly = schedules.locator('tr[data-schedule="nightly"]');
    await nightly.waitFor();
    expect(await nightly.locator("code").textContent()).toBe("0 3 * * *");
    await nightly.getByText("Europe/Paris", { exact: true }).waitFor();
    expect(await nightly.locator("[data-testid=next-run]").textContent()).not.toBe("—");
    await schedules.locator('tr[data-schedule="heartbeat"]', { hasText: "every 60 min" }).waitFor();
    // 21 schedules: the first page holds 20 by name, the next one the last.
    expect(await schedules.locator("tbody tr").count()).toBe(20);
    await schedules.getByRole("button", { name: "Next" }).click();
    await schedules.locator('tr[data-schedule="tick-19"]').waitFor();
    expect(await schedules.locator("tbody tr").count()).toBe(1);
    await schedules.getByRole("button", { name: "Previous" }).click();
    await nightly.waitFor();

    await nightly.getByRole("button", { name: "Pause" }).click();
    await schedules.locator('tr[data-schedule="nightly"][data-paused="true"]').waitFor();
    expect(await nightly.locator("[data-testid=next-run]").textContent()).toBe("—");
    const paused = (await api("GET", `/v1/lanes/${lane}/schedules/nightly`)).body;
    expect(paused).toMatchObject({ paused: true, nextRunAt: null, cron: "0 3 * * *", timezone: "Europe/Paris", job: { kind: "demo.echo", payload: { report: "daily" } } });
    await nightly.getByRole("button", { name: "Resume" }).click();
    await schedules.locator('tr[data-schedule="nightly"][data-paused="false"]').waitFor();
    const resumed = (await api("GET", `/v1/lanes/${lane}/schedules/nightly`)).body;
    expect(resumed).toMatchObject({ paused: false, cron: "0 3 * * *", timezone: "Europe/Paris" });
    expect(resumed.nextRunAt).toBeGreaterThan(Date.now());

    const heartbeat = schedules.locator('tr[data-schedule="heartbeat"]');
    const remove = () => heartbeat.getByRole("button", { name: "Delete…" }).click();
    expect(await refuse(remove)).toBe("Delete schedule heartbeat of lane timed? The jobs it enqueued stay. This cannot be undone.");
    await new Promise((r) => setTimeout(r, 300));
    expect((await api("GET", `/v1/lanes/${lane}/schedules/heartbeat`)).status).toBe(200);
    await remove();
    await schedules.getByRole("status").filter({ hasText: "Deleted schedule heartbeat." }).waitFor();
    await expect.poll(() => heartbeat.count()).toBe(0);
    expect((await api("GET", `/v1/lanes/${lane}/schedules/heartbeat`)).status).toBe(404);
  });

  it("shows a schedule's fires as they happen", async () => {
    const lane = "ticking";
    const page = await dashboard.laneView(lane);
    const schedules = panel(page, "Schedules");
    await schedules.getByText("This lane has no schedules").waitFor();
    expect((await api("PUT", `/v1/lanes/${lane}/schedules/fast`, { everyMs: 1_000, job: { kind: "demo.echo" } })).status).toBe(201);
    // The page learns of it from its first fire (a job `fast@<T>` enqueued): no reload, no click.
    const fired = schedules.locator('tr[data-schedule="fast"] a');
    await fired.first().waitFor({ timeout: 4_000 });
    expect(await fired.first().textContent()).toMatch(/^fast@\d+$/);
    await api("DELETE", `/v1/lanes/${lane}/schedules/fast`);
  });

  it("shows a job's checkpoints, its progress live, and its error history, all as text", async () => {
    const lane = "steps";
    await dashboard.enqueue(lane, { id: "pulled", kind: "pull.only", payload: {}, maxAttempts: 2 });
    const claim = async () => (await api("POST", `/v1/lanes/${lane}/claims`, { kinds: ["pull.only"] })).body.jobs[0].lease.token as string;
    const token = await claim();
    const checkpoint = async (name: string, value: unknown) =>
      expect((await api("PUT", `/v1/lanes/${lane}/jobs/pulled/checkpoints/${name}`, { token, value })).status).toBe(200);
    await checkpoint("b-step", XSS);
    await checkpoint("a-step", { n: 1 });
    expect((await api("POST", `/v1/lanes/${lane}/jobs/pulled/progress`, { token, progress: { done: 1 } })).status).toBe(200);

    const page = await dashboard.show(`lanes/${lane}/jobs/pulled`);
    await page.locator('[data-testid=job][data-state="running"]').waitFor();
    await page.evaluate(() => ((globalThis as any).__sameDocument = true));
    const checkpoints = page.locator("[data-testid=checkpoints] tbody tr");
    await expect.poll(() => checkpoints.evaluateAll((rows) => rows.map((r) => r.getAttribute("data-checkpoint")))).toEqual(["a-step", "b-step"]);
    expect(await checkpoints.locator("[data-testid=generation]").allTextContents()).toEqual(["1", "1"]);
    expect(await page.locator('tr[data-checkpoint="b-step"] pre').textContent()).toBe(JSON.stringify(XSS));
    const progress = panel(page, "Progress").locator("pre");
    expect(await progress.textContent()).toContain('"done": 1');

    // While it runs, progress and new checkpoints show as they are recorded.
    expect((await api("POST", `/v1/lanes/${lane}/jobs/pulled/progress`, { token, progress: { done: 2 } })).status).toBe(200);
    await expect.poll(() => progress.textContent(), { timeout: 3_000 }).toContain('"done": 2');
    await checkpoint("c-step", { n: 3 });
    await page.locator('tr[data-checkpoint="c-step"]').waitFor({ timeout: 3_000 });

    // A failed attempt is retried: its error joins the history, and the checkpoints stay.
    expect((await api("POST", `/v1/lanes/${lane}/jobs/pulled/fail`, { token, error: XSS, retryAfterMs: 0 })).status).toBe(200);
    await page.locator('[data-testid=job][data-state="queued"]').waitFor({ timeout: 3_000 });
    const errors = page.locator("[data-testid=errors] tbody tr");
    await errors.first().waitFor();
    expect(await errors.locator(".error-text").allTextContents()).toEqual([XSS]);
    expect(await errors.locator("td").first().textContent()).toBe("1");
    expect(await checkpoints.count()).toBe(3);

    // Its completion deletes them.
    const again = await claim();
    await api("POST", `/v1/lanes/${lane}/jobs/pulled/complete`, { token: again, result: { ok: true } });
    await page.locator('[data-testid=job][data-outcome="completed"]').waitFor({ timeout: 3_000 });
    await panel(page, "Checkpoints").getByText("None recorded").waitFor({ timeout: 3_000 });
    expect(await page.locator("img, script:not([src])").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as any).__xss)).toBeUndefined();
    expect(await page.evaluate(() => (globalThis as any).__sameDocument)).toBe(true);
  });

  it("shows a blocked job's dependencies and their states, a dependency's dependents, and the blocked count, live", async () => {
    const lane = "flows";
    const other = "flows-children";
    await dashboard.enqueue(other, { id: "child-remote", kind: "pull.only", payload: {} });
    await dashboard.enqueue(lane, { id: "child-local", kind: "pull.only", payload: {} });
    await dashboard.enqueue(lane, { id: "parent", kind: "demo.echo", payload: {}, dependsOn: [{ id: "child-local" }, { lane: other, id: "child-remote" }] });
    const page = await dashboard.show(`lanes/${lane}/jobs/parent`);
    await page.locator('[data-testid=job][data-state="blocked"]').waitFor();
    const deps = page.locator("[data-testid=dependencies] tbody tr");
    await expect.poll(() => deps.evaluateAll((rows) => rows.map((r) => r.getAttribute("data-dependency")))).toEqual([`${lane}/child-local`, `${other}/child-remote`]);
    await expect.poll(() => deps.locator(".badge").allTextContents()).toEqual(["queued", "queued"]);

    // One page for all views: the child's lists its dependent, a link to it; the lane counts it blocked.
    await dashboard.show(`lanes/${other}/jobs/child-remote`);
    const dependent = page.locator(`[data-testid=dependents] [data-dependent="${lane}/parent"] a`);
    await dependent.waitFor();
    expect(await dependent.getAttribute("href")).toBe(`#/lanes/${lane}/jobs/parent`);
    await dashboard.laneView(lane);
    await expect.poll(() => count(page, "blocked").textContent()).toBe("1");

    // Both children complete: the parent is released and runs; its page follows.
    await dashboard.show(`lanes/${lane}/jobs/parent`);
    await page.locator('[data-testid=job][data-state="blocked"]').waitFor();
    for (const [l, id] of [[lane, "child-local"], [other, "child-remote"]] as const) {
      const claimed = (await api("POST", `/v1/lanes/${l}/claims`, { kinds: ["pull.only"] })).body.jobs[0];
      expect(claimed.id).toBe(id);
      expect((await api("POST", `/v1/lanes/${l}/jobs/${id}/complete`, { token: claimed.lease.token, result: { id } })).status).toBe(200);
    }
    await page.locator('[data-testid=job][data-outcome="completed"]').waitFor({ timeout: 5_000 });
    await expect.poll(() => deps.locator(".badge").allTextContents(), { timeout: 5_000 }).toEqual(["completed", "completed"]);
    await dashboard.laneView(lane);
    await expect.poll(() => count(page, "blocked").textContent(), { timeout: 5_000 }).toBe("0");
  });

  it("shows a lane's lifetime stats, which a sweep leaves, and follows them live", async () => {
    const lane = "lifetime";
    for (const id of ["done-1", "done-2", "done-3"]) await dashboard.enqueue(lane, { id, kind: "demo.echo", payload: {} });
    for (const id of ["done-1", "done-2", "done-3"]) await dashboard.jobUntil(lane, id, (j) => j.state === "settled");
    expect((await api("POST", `/v1/lanes/${lane}/sweep`, { settledBefore: Date.now() + 1_000 })).body.removed).toBe(3);
    const page = await dashboard.laneView(lane);
    const stat = (key: string) => page.locator(`[data-testid=stats] [data-stat=${key}] dd`);
    await expect.poll(() => stat("enqueued").textContent()).toBe("3");
    expect(await stat("completed").textContent()).toBe("3");
    expect(await stat("claimed").textContent()).toBe("3");
    expect(await count(page, "completed").textContent()).toBe("0");
    await dashboard.enqueue(lane, { id: "done-4", kind: "demo.echo", payload: {} });
    await row(page, "done-4", '[data-state="settled"]').waitFor({ timeout: 3_000 });
    await expect.poll(() => stat("completed").textContent(), { timeout: 3_000 }).toBe("4");
    expect(await stat("enqueued").textContent()).toBe("4");

    await page.goto(new URL("/dashboard#/", dashboard.runtime.url).href);
    const overview = page.locator(`[data-testid=lanes] tr[data-lane="${lane}"]`);
    await expect.poll(() => overview.locator("[data-stat=enqueued]").textContent(), { timeout: 5_000 }).toBe("4");
    expect(await overview.locator("[data-count=completed]").textContent()).toBe("1");
  });

  it("shows a sharded lane as one lane with its shards listed, and a job on any shard live on its page", async () => {
    const lane = "sharded";
    expect((await api("PATCH", `/v1/lanes/${lane}`, { shards: 4 })).status).toBe(200);
    const onShard = (target: number) => {
      for (let n = 0; ; n++) if (shardOf(`q-${n}`, 4) === target) return `q-${n}`;
    };
    for (const target of [0, 1, 3, 3]) await dashboard.enqueue(lane, { kind: "pull.only", queue: onShard(target), payload: {} });
    const page = await dashboard.laneView(lane);
    await expect.poll(() => page.locator("[data-testid=shards]").textContent()).toMatch(/^4 shards: #0 1 queued, 0 running · #1 1 queued, 0 running · #2 0 queued, 0 running · #3 2 queued, 0 running/);
    await expect.poll(() => count(page, "queued").textContent()).toBe("4");

    // A queued job on shard 3 (no running job's timer reloads it): its page hears its shard's socket.
    const job = await dashboard.enqueue(lane, { id: "on-shard-3", kind: "pull.only", queue: onShard(3), payload: {} });
    await dashboard.show(`lanes/${lane}/jobs/${job.id}`);
    await page.locator('[data-testid=job][data-state="queued"][data-live="live"]').waitFor();
    await page.waitForTimeout(1_000); // the socket's hello reloads the job once: let it, so that only a transition can show the cancel
    expect((await api("POST", `/v1/lanes/${lane}/jobs/${job.id}/cancel`, {})).status).toBe(200);
    await page.locator('[data-testid=job][data-outcome="cancelled"]').waitFor({ timeout: 3_000 });
  });

  it("has caused no script error, CSP violation or unexpected dialog", () => {
    expect(dashboard.problems).toEqual([]);
  });
});
