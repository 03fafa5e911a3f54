/**
 * A whole Worker of the library: the API (`createApp`) as its `fetch`, and the check of lost alarms
 * (`checkAlarms`) as its `scheduled` handler, for a cron trigger of `* * * * *` in its wrangler config.
 */
import type { WorkerEnv } from "./env.js";
import { createApp, type AppOptions } from "./app.js";
import { checkAlarms } from "./alarm-check.js";

/** `export default createWorker({ lane: MyLane })` in a Worker that exports its lane class and the registry. */
export function createWorker(options: AppOptions = {}) {
  const app = createApp(options);
  return {
    fetch: app.fetch,
    async scheduled(_controller: ScheduledController, env: WorkerEnv, ctx: ExecutionContext): Promise<void> {
      ctx.waitUntil(checkAlarms(env));
    },
  } satisfies ExportedHandler<WorkerEnv>;
}
