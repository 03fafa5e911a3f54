/**
 * What the dashboard's browser tests share: the real runtime (`wrangler dev`) and Debian's Chromium,
 * one signed-in page that the tests of a file take turns on (one sign-in for all), and a record of
 * what went wrong on any page: script errors, CSP violations, dialogs nobody expected.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";
import { launchChromium } from "./browser.js";

export class Dashboard {
  readonly runtime: LocalRuntime;
  private readonly browser: Browser;
  private readonly stateDir: string;
  private signedIn: Page | undefined;
  /** Script errors, CSP violations and unexpected dialogs of every page: a test expects none. */
  readonly problems: string[] = [];
  /** Every confirmation a page asked for, oldest first. */
  readonly confirmations: string[] = [];
  /** How the next confirmations are answered. */
  confirmAnswer = true;

  private constructor(runtime: LocalRuntime, browser: Browser, stateDir: string) {
    this.runtime = runtime;
    this.browser = browser;
    this.stateDir = stateDir;
  }

  /** The runtime and the browser; when either fails to start, the other is stopped and the state removed. */
  static async start(stateDir = mkdtempSync(join(tmpdir(), "switchyard-dashboard-")), vars: Record<string, string> = {}): Promise<Dashboard> {
    const [runtime, browser] = await Promise.allSettled([LocalRuntime.start({ persistDir: stateDir, vars }), launchChromium()]);
    if (runtime.status === "fulfilled" && browser.status === "fulfilled") return new Dashboard(runtime.value, browser.value, stateDir);
    // A missing Chromium used to leave its `wrangler dev` running after the test run.
    if (runtime.status === "fulfilled") await runtime.value.stop();
    if (browser.status === "fulfilled") await browser.value.close();
    rmSync(stateDir, { recursive: true, force: true });
    throw runtime.status === "rejected" ? runtime.reason : (browser as PromiseRejectedResult).reason;
  }

  async stop(): Promise<void> {
    await this.browser.close();
    await this.runtime.stop();
    rmSync(this.stateDir, { recursive: true, force: true });
  }

  /** A fresh page (its own session storage) that records its problems and answers confirmations. */
  async newPage(): Promise<Page> {
    const context = await this.browser.newContext({ viewport: { width: 1280, height: 820 } });
    const page = await context.newPage();
    page.on("pageerror", (error) => this.problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) this.problems.push(`CSP: ${message.text()}`);
    });
    page.on("dialog", (dialog) => {
      if (dialog.type() === "confirm") {
        this.confirmations.push(dialog.message());
        return void (this.confirmAnswer ? dialog.accept() : dialog.dismiss());
      }
      this.problems.push(`unexpected ${dialog.type()}: ${dialog.message()}`);
      void dialog.dismiss();
    });
    return page;
  }

  async signIn(page: Page, token = this.runtime.apiToken): Promise<void> {
    await page.goto(new URL("/dashboard", this.runtime.url).href);
    await page.fill("input[name=token]", token);
    await page.click("[data-testid=token-form] button[type=submit]");
  }

  /** The shared signed-in page, showing `view` (a hash route). */
  async show(view: string): Promise<Page> {
    if (!this.signedIn) {
      this.signedIn = await this.newPage();
      await this.signIn(this.signedIn);
      await this.signedIn.locator(".page").waitFor();
    }
    await this.signedIn.goto(new URL(`/dashboard#/${view}`, this.runtime.url).href);
    return this.signedIn;
  }

  /** The shared page on `lane`'s view, its socket live. */
  async laneView(lane: string): Promise<Page> {
    const page = await this.show(`lanes/${lane}`);
    await page.getByRole("heading", { name: `Lane ${lane}`, exact: true }).waitFor();
    await page.locator("[data-testid=live]", { hasText: "● live" }).waitFor({ timeout: 5_000 });
    return page;
  }

  async enqueue(lane: string, spec: Record<string, unknown>): Promise<{ id: string }> {
    const answer = await this.runtime.api("POST", `/v1/lanes/${lane}/jobs`, spec);
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return answer.body.job;
  }

  /** Waits (bounded) until the job, read over the API, satisfies `check`. */
  async jobUntil(lane: string, id: string, check: (job: any) => boolean, timeoutMs = 10_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = (await this.runtime.api("GET", `/v1/lanes/${lane}/jobs/${id}`)).body;
      if (check(job)) return job;
      if (Date.now() > deadline) throw new Error(`job ${id} never got there: ${JSON.stringify(job)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** A job's row in the lane view's job table. */
/**
 * A dashboard started before a file's tests and stopped after them: `session.dashboard` once started,
 * `session.api` a call to its runtime's API.
 */
export function dashboardPerFile(): { readonly dashboard: Dashboard; api(method: string, path: string, body?: unknown): ReturnType<LocalRuntime["api"]> } {
  let started: Dashboard | undefined;
  beforeAll(async () => {
    started = await Dashboard.start();
  });
  afterAll(async () => {
    await started?.stop();
  });
  return {
    get dashboard() {
      if (!started) throw new Error("the dashboard has not started");
      return started;
    },
    api: (method, path, body) => started!.runtime.api(method, path, body),
  };
}

export const row = (page: Page, id: string, extra = "") => page.locator(`tr[data-job="${id}"]${extra}`);
/** One of the lane view's counts. */
export const count = (page: Page, key: string) => page.locator(`[data-testid=counts] [data-count=${key}] dd`);
