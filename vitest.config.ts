import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        // The suite proper: inside workerd, against real Durable Objects, SQLite and alarms.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.test.toml" },
            miniflare: { bindings: { API_TOKEN: "test-token,rotated-in-token" } },
          }),
        ],
        test: { name: "workers", include: ["test/**/*.test.ts"], exclude: ["test/node/**"], testTimeout: 20_000 },
      },
      {
        // The real runtime driven from Node: kill it, restart it over persisted state.
        test: { name: "node", include: ["test/node/**/*.test.ts"], environment: "node", testTimeout: 180_000, hookTimeout: 120_000 },
      },
    ],
  },
});
