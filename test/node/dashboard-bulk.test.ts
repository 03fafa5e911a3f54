/**
 * The dashboard's bulk actions in a real browser against the real runtime: offered with the job
 * table's filter (not without one), confirmed first (refused: nothing changes), then their progress
 * until done.
 */
import { describe, expect, it } from "vitest";
import { dashboardPerFile } from "./dashboard-session.js";

const session = dashboardPerFile();
const { api } = session;

describe("the dashboard's bulk actions", () => {
  it("requeues the jobs the filter shows once confirmed, and shows its progress until done", async () => {
    const { dashboard } = session;
    const lane = "bulky";
    expect((await api("PATCH", `/v1/lanes/${lane}`, { paused: true })).status).toBe(200);
    const jobs = Array.from({ length: 5 }, (_, i) => ({ id: `bulky-${i}`, kind: "demo.echo", payload: {} }));
    expect((await api("POST", `/v1/lanes/${lane}/jobs/batch`, { jobs })).status).toBe(200);
    expect((await api("POST", `/v1/lanes/${lane}/fail`, { reason: "bad deploy" })).status).toBe(200);
    const page = await dashboard.laneView(lane);
    const control = page.locator("[data-testid=bulk-actions]");
    // No filter: nothing offered (the API refuses an empty filter).
    await expect.poll(() => control.getByRole("button", { name: "Requeue all…" }).isDisabled()).toBe(true);

    await page.locator("form.filters select[name=outcome]").selectOption("failed");
    await expect.poll(() => control.getByRole("button", { name: "Requeue all…" }).isDisabled()).toBe(false);
    const asked = dashboard.confirmations.length;
    dashboard.confirmAnswer = false;
    await control.getByRole("button", { name: "Requeue all…" }).click();
    await expect.poll(() => dashboard.confirmations.length).toBe(asked + 1);
    dashboard.confirmAnswer = true;
    expect(dashboard.confirmations.at(-1)).toMatch(/^Requeue every job of lane bulky enqueued before now that matches outcome failed\?/);
    await new Promise((r) => setTimeout(r, 300));
    expect((await api("GET", `/v1/lanes/${lane}`)).body.counts).toMatchObject({ failed: 5, queued: 0 });

    await control.getByRole("button", { name: "Requeue all…" }).click();
    await control.locator("[data-testid=bulk-progress][data-state=done]").filter({ hasText: "done, 5 matched · 5 acted on, 0 skipped" }).waitFor({ timeout: 10_000 });
    expect((await api("GET", `/v1/lanes/${lane}`)).body.counts).toMatchObject({ failed: 0, queued: 5 });
    expect(dashboard.problems).toEqual([]);
  });

  it("cancels the jobs the filter shows, with the reason given", async () => {
    const { dashboard } = session;
    const lane = "bulky-busy";
    expect((await api("PATCH", `/v1/lanes/${lane}`, { paused: true })).status).toBe(200);
    await dashboard.enqueue(lane, { id: "one", kind: "demo.echo", payload: {} });
    const page = await dashboard.laneView(lane);
    const control = page.locator("[data-testid=bulk-actions]");
    await page.locator("form.filters select[name=state]").selectOption("queued");
    await control.locator("input[name=reason]").fill("not needed");
    await control.getByRole("button", { name: "Cancel all…" }).click();
    await control.locator("[data-testid=bulk-progress][data-state=done]").waitFor({ timeout: 10_000 });
    expect((await api("GET", `/v1/lanes/${lane}/jobs/one`)).body).toMatchObject({ outcome: "cancelled" });
  });
});
