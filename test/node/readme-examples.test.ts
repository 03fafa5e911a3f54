/**
 * The README's library code is examples/edge-app's, file by file: a fenced block whose first line
 * names a file of examples/ (`// examples/…` or `# examples/…`) must hold exactly that file. The
 * example is built and tested against the packed library in CI, so the README cannot drift.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const readme = readFileSync(resolve(ROOT, "README.md"), "utf8");
const blocks = [...readme.matchAll(/^```\w*\n(?:\/\/|#) (examples\/\S+)\n([\s\S]*?)^```$/gm)].map(([, path, body]) => ({ path: path!, body: body! }));

describe("README code copied from the example app", () => {
  it("shows the example's worker, lane, executor, wrangler.toml and route", () => {
    expect(blocks.map((block) => block.path)).toEqual(
      expect.arrayContaining([
        "examples/edge-app/src/index.ts",
        "examples/edge-app/src/lane.ts",
        "examples/edge-app/src/deliver.ts",
        "examples/edge-app/wrangler.toml",
        "examples/edge-app/src/webhooks.ts",
      ]),
    );
  });

  it.each(blocks)("$path is the file as it is", ({ path, body }) => {
    expect(body).toBe(readFileSync(resolve(ROOT, path), "utf8"));
  });
});
