/** What the Node tests that drive a real runtime share: a state directory per file, and a bounded wait. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";

/** A fresh state directory for the runtimes of one test file: made before its tests, removed after them. */
export function stateDirFor(prefix: string): { readonly path: string } {
  let path: string | undefined;
  beforeAll(() => {
    path = mkdtempSync(join(tmpdir(), `switchyard-${prefix}-`));
  });
  afterAll(() => {
    if (path) rmSync(path, { recursive: true, force: true });
  });
  return {
    get path(): string {
      if (path === undefined) throw new Error("the state directory exists only while the file's tests run");
      return path;
    },
  };
}

/** Waits until `check` holds, asking every `everyMs`; throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
