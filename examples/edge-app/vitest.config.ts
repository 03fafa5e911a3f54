import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/** Topics whose subscribers answer as their path says (test/subscribers/worker.js). */
const SUBSCRIBERS = {
  orders: ["https://billing.test/ok", "https://crm.test/ok"],
  invoices: ["https://billing.test/flaky/2"],
  leads: ["https://crm.test/gone"],
  shipments: ["https://warehouse.test/stuck"],
};

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: { API_TOKEN: "api-token", INGEST_TOKEN: "ingest-token", WEBHOOK_SECRET: "webhook-secret", SUBSCRIBERS },
        // Every fetch the app makes lands on the stub subscribers, and the tests read what arrived.
        outboundService: "subscribers",
        serviceBindings: { SUBSCRIBERS_LOG: "subscribers" },
        workers: [
          {
            name: "subscribers",
            modules: true,
            scriptPath: "./test/subscribers/worker.js",
            compatibilityDate: "2026-11-01",
            // request.signal fires when the sender aborts: how a test sees a delivery given up.
            compatibilityFlags: ["enable_request_signal"],
          },
        ],
      },
    }),
  ],
  // Generous: deliveries and retries run in real time, and CI machines are shared.
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    // Lanes log one JSON line per transition; they would bury the test report.
    onConsoleLog: (log) => !log.includes('"event":"job.transition"'),
  },
});
