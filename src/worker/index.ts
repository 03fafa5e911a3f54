/** The repo's default worker, for `wrangler dev` and `wrangler deploy`: the API, the cron check of lost alarms, the demo executors. */
import { demoExecutors } from "./demo-executors.js";
import { demoKinds } from "./demo-kinds.js";
import { defineLane } from "../durable/lane.js";
import { createWorker } from "./worker.js";

export { LaneRegistry } from "../durable/registry.js";

/** The lane class bound as `LANE` in wrangler.toml, with the demo executors of docs/api.md and their kinds' payload schemas. */
export class DemoLane extends defineLane({ executors: demoExecutors, kinds: demoKinds }) {}

export default createWorker({ lane: DemoLane });
