/**
 * The documents' library code is examples/edge-app's, file by file: a fenced block whose first line
 * names a file of examples/ (`// examples/…` or `# examples/…`) must hold exactly that file, in
 * README.md and in every guide of docs/. The guide to using Switchyard in your own Worker shows the
 * whole example. The example is built and tested against the packed library in CI, so the
 * documents cannot drift.
 */
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const GUIDE = "docs/your-own-worker.md";
const documents = ["README.md", ...readdirSync(resolve(ROOT, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];

const blocksOf = (document: string) =>
  [...readFileSync(resolve(ROOT, document), "utf8").matchAll(/^```\w*\n(?:\/\/|#) (examples\/\S+)\n([\s\S]*?)^```$/gm)].map(([, path, body]) => ({
    document,
    path: path!,
    body: body!,
  }));
const blocks = documents.flatMap(blocksOf);

describe("documents' code copied from the example app", () => {
  it(`${GUIDE} shows the example's worker, lane, executor, wrangler.toml and route`, () => {
    expect(blocksOf(GUIDE).map((block) => block.path)).toEqual(
      expect.arrayContaining([
        "examples/edge-app/src/index.ts",
        "examples/edge-app/src/lane.ts",
        "examples/edge-app/src/deliver.ts",
        "examples/edge-app/wrangler.toml",
        "examples/edge-app/src/webhooks.ts",
      ]),
    );
  });

  it.each(blocks)("$document: $path is the file as it is", ({ path, body }) => {
    expect(body).toBe(readFileSync(resolve(ROOT, path), "utf8"));
  });
});
