import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";
import { buildDashboard } from "./scripts/build-dashboard.js";

// The worker imports the dashboard's bundle, so it is built before any test loads the worker.
await buildDashboard();

/**
 * The chaos suite: minutes of load, hard kills and restarts of the real runtime. Only
 * `npm run test:chaos` (which sets SWITCHYARD_CHAOS=1) runs it, so `npm test` stays quick.
 */
const chaos: TestProjectInlineConfiguration[] =
  process.env.SWITCHYARD_CHAOS === "1"
    ? [{ test: { name: "chaos", include: ["test/chaos/**/*.test.ts"], environment: "node", testTimeout: 420_000, sequence: { groupOrder: 2 } } }]
    : [];

export default defineConfig({
  test: {
    // Lanes log one JSON line per transition; thousands of them would bury the test report.
    onConsoleLog: (log) => !log.includes('"event":"job.transition"'),
    projects: [
      {
        // The suite proper: inside workerd, against real Durable Objects, SQLite and alarms.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.test.toml" },
            miniflare: { bindings: { API_TOKEN: "test-token,rotated-in-token", SIGNING_SECRET: "test-signing-secret" } },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/**/*.test.ts"],
          exclude: ["test/node/**", "test/chaos/**"],
          testTimeout: 20_000,
          // Vitest's default is one worker on a 2-core machine; each file's import into workerd is
          // mostly waiting, so two files at once cut the suite's wall time by about a sixth.
          maxWorkers: 2,
          // Projects of different maxWorkers run as groups, one after another: this one first.
          sequence: { groupOrder: 0 },
        },
      },
      {
        // The real runtime driven from Node: kill it, restart it over persisted state.
        test: { name: "node", include: ["test/node/**/*.test.ts"], environment: "node", testTimeout: 180_000, hookTimeout: 120_000, sequence: { groupOrder: 1 } },
      },
      ...chaos,
    ],
  },
});
