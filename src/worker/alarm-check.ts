/**
 * The cron's check of lost alarms (docs/api.md "Schedules"): alarms can be lost on deploys, so a cron trigger
 * of the front worker (every minute, wrangler.toml) asks the registry which lanes have work for
 * their alarm and has each one check its wake (`Lane.checkWake`: idempotent, it sets the alarm again
 * when it is missing or late). A lane found idle is unwatched until it has work again
 * (src/durable/wake/alarm-watch.ts says how the registry learns that without asking every lane).
 */
import type { WorkerEnv } from "./env.js";
import { REGISTRY_NAME } from "../durable/registry.js";
import { BELT_PAGE } from "../shared/defaults.js";
import { unwrap } from "../shared/errors.js";
import { describeError } from "../shared/describe-error.js";
import { log } from "../shared/log.js";

/** What one run of the check did. */
export interface AlarmCheckReport {
  /** Lanes that answered their check. */
  checked: number;
  /** Lanes whose alarm was missing or late, and was set again. */
  rearmed: number;
  /** Lanes found idle and no longer watched. */
  unwatched: number;
  /** Lanes that could not be checked (logged; the next run tries again). */
  failed: number;
}

/**
 * Checks the wake of every lane the registry watches, a page of lanes at a time. Call it from a
 * Worker's `scheduled` handler (or use `createWorker`, which does).
 */
export async function checkAlarms(env: WorkerEnv): Promise<AlarmCheckReport> {
  const registry = env.REGISTRY.getByName(REGISTRY_NAME);
  const report: AlarmCheckReport = { checked: 0, rearmed: 0, unwatched: 0, failed: 0 };
  let after = 0;
  for (;;) {
    const page = await registry.watched(after, BELT_PAGE);
    await Promise.all(
      page.lanes.map(async ({ lane, seq }) => {
        try {
          const check = unwrap(await env.LANE.getByName(lane).checkWake());
          report.checked++;
          if (check.rearmed) report.rearmed++;
          if (!check.watch && (await registry.unwatch(lane, seq))) report.unwatched++;
        } catch (error) {
          report.failed++;
          log({ event: "belt.check_failed", lane, message: describeError(error) });
        }
      }),
    );
    if (!page.more) return report;
    after = page.lanes.at(-1)!.seq;
  }
}
