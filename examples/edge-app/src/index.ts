import { createApp } from "switchyard";
import { webhooks } from "./webhooks.js";

export { LaneRegistry } from "switchyard";
export { WebhookLane } from "./lane.js";

const app = createApp(); // the queue's API: /v1/…, /healthz, /openapi.json, /dashboard
app.route("/webhooks", webhooks); // this app's own routes beside it, under the same error handler
export default app;
