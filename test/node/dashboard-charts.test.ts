/**
 * The lane's charts in a real browser against the real runtime: uPlot draws throughput and depth
 * (a canvas of non-zero size), live, and the last minute each chart holds is the API's last bucket
 * after a burst of jobs, over the last hour and, toggled, the last day.
 */
import type { Locator } from "playwright-core";
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

/** What a chart says it plots last (`data-last`), or null before its first data. */
async function plotted(chart: Locator): Promise<Record<string, number> | null> {
  const last = await chart.getAttribute("data-last");
  return last === null ? null : JSON.parse(last);
}

/** The chart's last point and the API's last bucket, read until they agree (a read of the history is at most a few seconds behind). */
async function agree(lane: string, windowMs: number, throughput: Locator, depth: Locator): Promise<any> {
  let bucket: any;
  await expect
    .poll(
      async () => {
        bucket = (await api("GET", `/v1/lanes/${lane}/history?windowMs=${windowMs}`)).body.buckets.at(-1);
        const charts = { throughput: await plotted(throughput), depth: await plotted(depth) };
        const answer = {
          throughput: { at: bucket.at, started: bucket.started, completed: bucket.completed, failed: bucket.failed },
          depth: { at: bucket.at, depth: bucket.depth },
        };
        return JSON.stringify(charts) === JSON.stringify(answer) ? "agree" : `charts ${JSON.stringify(charts)}, API ${JSON.stringify(answer)}`;
      },
      { timeout: 15_000, interval: 250 },
    )
    .toBe("agree");
  return bucket;
}

describe("the lane's charts", () => {
  it("draw throughput and depth with uPlot, their last point the API's after a burst, over an hour or a day", async () => {
    const lane = "charted";
    // The lane exists (so its socket and history answer) before the page opens on it.
    expect((await api("POST", `/v1/lanes/${lane}/jobs`, { id: "first", kind: "demo.echo", payload: {} })).status).toBe(201);
    const page = await dashboard.laneView(lane);
    const throughput = page.locator("[data-testid=chart-throughput]");
    const depth = page.locator("[data-testid=chart-depth]");
    for (const chart of [throughput, depth]) {
      await chart.locator(".uplot canvas").waitFor();
      const box = await chart.locator(".uplot canvas").boundingBox();
      expect(box!.width).toBeGreaterThan(100);
      expect(box!.height).toBeGreaterThan(50);
    }
    await expect.poll(() => throughput.getAttribute("data-points")).toBe("60");

    // A burst: jobs that complete, jobs that fail, and jobs that wait (a later runAt: they stay queued).
    const later = Date.now() + 3_600_000;
    const jobs = [
      ...Array.from({ length: 40 }, (_, i) => ({ id: `ok-${i}`, kind: "demo.echo", payload: { i } })),
      ...Array.from({ length: 5 }, (_, i) => ({ id: `bad-${i}`, kind: "demo.fail", payload: { failTimes: 1 }, maxAttempts: 1 })),
      ...Array.from({ length: 7 }, (_, i) => ({ id: `later-${i}`, kind: "demo.echo", payload: {}, runAt: later })),
    ];
    expect((await api("POST", `/v1/lanes/${lane}/jobs/batch`, { jobs })).body.results).toHaveLength(52);
    await expect
      .poll(async () => (await api("GET", `/v1/lanes/${lane}`)).body.counts, { timeout: 15_000 })
      .toMatchObject({ queued: 7, running: 0, completed: 41, failed: 5 });

    const last = await agree(lane, 3_600_000, throughput, depth);
    expect(last.depth).toBe(7);
    const hour = (await api("GET", `/v1/lanes/${lane}/history`)).body.buckets;
    const sum = (key: string) => hour.reduce((n: number, b: any) => n + b[key], 0);
    expect({ enqueued: sum("enqueued"), started: sum("started"), completed: sum("completed"), failed: sum("failed") }).toEqual({
      enqueued: 53,
      started: 46,
      completed: 41,
      failed: 5,
    });

    await page.getByRole("button", { name: "Last day" }).click();
    await expect.poll(() => page.locator("[data-testid=charts]").getAttribute("data-span")).toBe("day");
    await expect.poll(() => throughput.getAttribute("data-points")).toBe("1440");
    await agree(lane, 86_400_000, throughput, depth);
    expect(await page.getByRole("button", { name: "Last day" }).getAttribute("aria-pressed")).toBe("true");
    expect(dashboard.problems).toEqual([]);
  });
});
