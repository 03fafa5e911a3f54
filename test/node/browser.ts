/**
 * Debian's Chromium, driven by playwright-core for the dashboard's browser tests. No browser is ever
 * downloaded: the system's is used (`apt-get install chromium`; CHROMIUM_PATH to point elsewhere).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

function chromiumPath(): string {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) return configured;
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      const found = execFileSync("which", [name], { encoding: "utf8" }).trim();
      if (found && existsSync(found)) return found;
    } catch {
      // not this name
    }
  }
  throw new Error("no Chromium found: install Debian's (apt-get install -y chromium) or set CHROMIUM_PATH");
}

/** A missing browser is a rejection, never a synchronous throw, so that a caller's `Promise.allSettled` sees it. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}
