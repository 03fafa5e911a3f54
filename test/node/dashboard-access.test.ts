/**
 * The dashboard offers only what the token may do (docs/api.md "Access"), in a real browser against
 * the real runtime with scoped tokens (API_KEYS): an admin sees every control, a viewer the lane's
 * state without one, a producer the enqueue form, and a scoped viewer only its lanes.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Dashboard } from "./dashboard-session.js";

const VIEWER = "dashboard-viewer-token";
const PRODUCER = "dashboard-producer-token";
const SCOPED = "dashboard-scoped-viewer";

let dashboard: Dashboard;

beforeAll(async () => {
  const keys = [
    { token: VIEWER, role: "viewer" },
    { token: PRODUCER, role: "producer" },
    { token: SCOPED, role: "viewer", lanes: ["team-a-*"] },
  ];
  dashboard = await Dashboard.start(undefined, { API_KEYS: JSON.stringify(keys) });
  for (const lane of ["team-a-1", "team-b-1"]) await dashboard.enqueue(lane, { id: `${lane}-job`, kind: "demo.echo", payload: {} });
  await dashboard.jobUntil("team-a-1", "team-a-1-job", (job) => job.state === "settled");
  expect((await dashboard.runtime.api("PUT", "/v1/lanes/team-a-1/schedules/nightly", { everyMs: 3_600_000, job: { kind: "demo.echo" } })).status).toBe(201);
});

afterAll(async () => {
  await dashboard?.stop();
});

async function signedIn(token: string, view: string): Promise<Page> {
  const page = await dashboard.newPage();
  await dashboard.signIn(page, token);
  await page.locator(".page").waitFor();
  await page.goto(new URL(`/dashboard#/${view}`, dashboard.runtime.url).href);
  return page;
}

const controls = ["Pause", "Set", "Sweep…", "Fail lane…"];

describe("the dashboard under scoped tokens", () => {
  it("shows an admin every control of a lane, and a viewer none of them but the lane's state, live", async () => {
    const admin = await signedIn(dashboard.runtime.apiToken, "lanes/team-a-1");
    await admin.locator("[data-testid=live]", { hasText: "● live" }).waitFor({ timeout: 5_000 });
    await expect.poll(() => admin.locator("[data-testid=role]").textContent()).toBe("admin");
    for (const name of controls) expect(await admin.getByRole("button", { name, exact: true }).count(), name).toBeGreaterThan(0);
    await admin.getByRole("button", { name: "Delete…" }).first().waitFor();
    await admin.locator("[data-testid=bulk-actions]").waitFor();

    const viewer = await signedIn(VIEWER, "lanes/team-a-1");
    await viewer.locator("[data-testid=live]", { hasText: "● live" }).waitFor({ timeout: 5_000 });
    await expect.poll(() => viewer.locator("[data-testid=role]").textContent()).toBe("viewer");
    await expect.poll(() => viewer.locator("[data-testid=lane-concurrency]").textContent()).not.toBeNull();
    await viewer.locator("[data-testid=paused]").waitFor();
    await viewer.getByRole("cell", { name: "nightly" }).waitFor();
    for (const name of [...controls, "Delete…", "Resume"]) expect(await viewer.getByRole("button", { name, exact: true }).count(), name).toBe(0);
    expect(await viewer.locator("[data-testid=fail-lane]").count()).toBe(0);
    expect(await viewer.locator("[data-testid=bulk-actions]").count()).toBe(0);
    expect(await viewer.getByRole("link", { name: "Enqueue", exact: true }).count()).toBe(0);
    expect(dashboard.problems).toEqual([]);
  });

  it("lets a producer enqueue but not list lanes, and a scoped viewer list only its lanes", async () => {
    const producer = await signedIn(PRODUCER, "lanes");
    await producer.locator("[data-testid=cannot-list]").waitFor();
    expect(await producer.getByRole("link", { name: "Lanes", exact: true }).count()).toBe(0);
    await producer.getByRole("link", { name: "Enqueue", exact: true }).click();
    const form = producer.locator("[data-testid=enqueue]");
    await form.locator("input[name=lane]").fill("team-b-1");
    await form.locator("input[name=kind]").fill("demo.echo");
    await form.locator("input[name=id]").fill("from-producer");
    await form.locator("button[type=submit]").click();
    await dashboard.jobUntil("team-b-1", "from-producer", (job) => job.state === "settled");

    // A producer's job page: no lane link, no checkpoints (a producer reads neither), no error shown.
    await producer.goto(new URL("/dashboard#/lanes/team-b-1/jobs/from-producer", dashboard.runtime.url).href);
    await producer.locator("[data-testid=job]").waitFor();
    await new Promise((r) => setTimeout(r, 500)); // the page's reads have answered by then
    expect(await producer.getByRole("link", { name: "team-b-1", exact: true }).count()).toBe(0);
    expect(await producer.getByRole("heading", { name: "Checkpoints" }).count()).toBe(0);
    expect(await producer.locator(".alert").count()).toBe(0);

    const scoped = await signedIn(SCOPED, "lanes");
    await scoped.locator("[data-testid=lanes]").getByRole("link", { name: "team-a-1" }).waitFor();
    expect(await scoped.locator("[data-testid=lanes]").getByRole("link", { name: "team-b-1" }).count()).toBe(0);
    expect(dashboard.problems).toEqual([]);
  });
});
