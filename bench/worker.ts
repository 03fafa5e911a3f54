/**
 * The bench worker (wrangler.bench.toml): the real app and lane classes, plus `/bench/<workload>`
 * routes that run measurement loops inside the worker. Never deployed, so the bench routes carry no
 * auth; everything under `/v1` is the real, authenticated API.
 */
import { createApp } from "../src/worker/app.js";
import { countsWorkloads } from "./counts.js";
import { flowWorkloads } from "./flow.js";
import { groupShareWorkloads } from "./group-share.js";
import { countingObjectCalls, metricsWorkloads } from "./metrics.js";
import { scheduleWorkloads } from "./schedules.js";
import { shardWorkloads } from "./shards.js";
import { stepWorkloads } from "./steps.js";
import { tenantWorkloads } from "./tenants.js";
import { bulkWorkloads } from "./bulk.js";
import { workloads as coreWorkloads, type BenchEnv } from "./workloads.js";
import { kindWorkloads } from "./kinds.js";
import { batchWorkloads } from "./batches.js";

export { LaneRegistry } from "../src/durable/registry.js";
export { BenchLane, PlainLane } from "./lanes.js";
export { CountsLane } from "./counts.js";
export { ScheduleBenchLane } from "./schedules.js";
export { QuietBenchLane } from "./recording.js";
export { KindsBenchLane } from "./kinds.js";
export { BatchBenchLane } from "./batches.js";

const app = createApp();
const workloads = { ...coreWorkloads, ...countsWorkloads, ...scheduleWorkloads, ...stepWorkloads, ...flowWorkloads, ...metricsWorkloads, ...shardWorkloads, ...groupShareWorkloads, ...tenantWorkloads, ...bulkWorkloads };
// Typed kinds' cost on enqueue (bench/kinds.ts), on its own lane class.
Object.assign(workloads, kindWorkloads);
// Batch executors against single-job executors (bench/batches.ts), on its own lane class.
Object.assign(workloads, batchWorkloads);

export default {
  async fetch(request: Request, env: BenchEnv, ctx: ExecutionContext): Promise<Response> {
    const { pathname } = new URL(request.url);
    // A metrics request counts the object calls it makes (bench/metrics.ts).
    if (!pathname.startsWith("/bench/")) return app.fetch(request, (pathname.endsWith("/metrics") ? countingObjectCalls(env) : env) as unknown as Env, ctx);
    const workload = workloads[pathname.slice("/bench/".length)];
    if (!workload) return Response.json({ error: `no workload ${pathname}` }, { status: 404 });
    try {
      const params = request.method === "POST" ? ((await request.json()) as Record<string, unknown>) : {};
      return Response.json(await workload(env, params));
    } catch (error) {
      return Response.json({ error: String(error), stack: error instanceof Error ? error.stack : undefined }, { status: 500 });
    }
  },
} satisfies ExportedHandler<BenchEnv>;
