/**
 * The dashboard's browser tests start a real runtime and Chromium together. When the browser cannot
 * start (no Chromium on the machine), the runtime must not outlive the failure: it used to keep its
 * `wrangler dev` running after the whole test run had ended.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Dashboard } from "./dashboard-session.js";
import { until } from "./support.js";

/** Processes whose command line names `text`. */
function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(text)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

it("stops its runtime and removes its state when Chromium cannot start", async () => {
  const stateDir = mkdtempSync(join(tmpdir(), "switchyard-dashboard-nobrowser-"));
  const configured = process.env.CHROMIUM_PATH;
  process.env.CHROMIUM_PATH = join(stateDir, "no-such-chromium");
  try {
    await expect(Dashboard.start(stateDir)).rejects.toThrow(); // the browser (or, on a bad day, the runtime) failed
  } finally {
    if (configured === undefined) delete process.env.CHROMIUM_PATH;
    else process.env.CHROMIUM_PATH = configured;
  }
  expect(existsSync(stateDir)).toBe(false);
  // Stopped means SIGKILLed at worst, and a killed process lingers a moment; a runtime nobody stops
  // (the old start) never goes, and this wait times out.
  await until("no process naming the state directory", () => processesNaming(stateDir).length === 0, 15_000);
});
