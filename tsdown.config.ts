import { defineConfig } from "tsdown";

/**
 * The published build: ESM and bundled `.d.ts` in dist/, one file per entry of package.json's
 * `exports` (a new entry is one line here and one there; `npm run check:pack` fails if they differ).
 * The repo's own tests and `wrangler dev` import src/ directly and never need this.
 */
export default defineConfig({
  entry: {
    index: "src/index.ts",
    client: "src/client/index.ts",
  },
  format: "esm",
  platform: "neutral",
  target: "es2023",
  dts: true,
  // Provided by workerd at run time; dependencies and peer dependencies stay external on their own.
  deps: { neverBundle: [/^cloudflare:/] },
  sourcemap: false,
  // The .d.ts pass runs the type checker and is slow by nature; the timing warning has nothing to act on.
  checks: { bundlerTimings: false },
});
