/**
 * A whole Worker of the library: the API (`createApp`) as its `fetch`, and the check of lost alarms
 * (`checkAlarms`) as its `scheduled` handler, for a cron trigger of `* * * * *` in its wrangler config.
 */
import type { WorkerEnv } from "./env.js";
import { createApp } from "./app.js";
import { checkAlarms } from "./alarm-check.js";

/** `export default createWorker()` in a Worker that exports its lane class and the registry. */
export function createWorker() {
  const app = createApp();
  return {
    fetch: app.fetch,
    async scheduled(_controller: ScheduledController, env: WorkerEnv, ctx: ExecutionContext): Promise<void> {
      ctx.waitUntil(checkAlarms(env));
    },
  } satisfies ExportedHandler<WorkerEnv>;
}
