import { defineLane } from "switchyard";
import { deliver } from "./deliver.js";

/** The lane class bound as `LANE`: one lane per topic, and the one executor that delivers. */
export class WebhookLane extends defineLane<Env>({
  executors: { "webhook.deliver": deliver },
}) {}
