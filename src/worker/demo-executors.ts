/** The demo executors of shared/API.md, registered by the repo's own worker (`npm run dev`). */
import type { ExecutorRegistry } from "../durable/executors.js";
import type { Json } from "../shared/job.js";

/** The executors `npm run dev` registers (shared/API.md, "Demo executors"). */
export const demoExecutors: ExecutorRegistry = {
  "demo.echo": (payload: Json) => payload,
  "demo.sleep": async (payload: { ms?: unknown } | null, { signal }) => {
    const ms = typeof payload?.ms === "number" && payload.ms >= 0 ? payload.ms : 0;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
      }, { once: true });
    });
    return { slept: ms };
  },
  "demo.fail": (payload: { failTimes?: unknown } | null, { attempt }) => {
    const failTimes = typeof payload?.failTimes === "number" ? payload.failTimes : 0;
    if (attempt <= failTimes) throw new Error(`demo.fail: failing attempt ${attempt} of ${failTimes}`);
    return { attempts: attempt };
  },
};

