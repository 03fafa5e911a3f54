/**
 * An external worker: runs a lane's jobs in this process, over the HTTP API, as a GPU box, a private
 * network or another language's runtime would. It uses the library as a user installs it
 * (`switchyard/client`, from the packed tarball). With the API served by `npm run dev` at the repo root:
 *
 *   npm ci && npm start
 *
 * It enqueues a few jobs of its own kinds into the lane `pull-demo` (none has an in-process executor
 * in the dev worker, so they wait for pull consumers), runs them, logs what happens, and stops
 * gracefully on Ctrl-C. Environment: SWITCHYARD_URL (default http://127.0.0.1:8787), API_TOKEN
 * (default dev-token, as `npm run dev`), LANE (default pull-demo), JOBS (how many to enqueue, default 12).
 */
import { createWorker, NonRetryableError, RetryAfterError, type WorkerContext } from "switchyard/client";

const url = process.env.SWITCHYARD_URL ?? "http://127.0.0.1:8787";
const token = process.env.API_TOKEN ?? "dev-token";
const lane = process.env.LANE ?? "pull-demo";
const jobs = Number(process.env.JOBS ?? 12);

/** Waits `ms`, or rejects as soon as the attempt is aborted (lost lease, cancel, stop). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

const worker = createWorker({
  url,
  token,
  lane,
  concurrency: 4,
  leaseMs: 15_000,
  handlers: {
    // Long work that reports its progress and honours its signal.
    "thumbnail.render": async (payload: { frames: number }, ctx: WorkerContext) => {
      for (let frame = 1; frame <= payload.frames; frame++) {
        await pause(100, ctx.signal);
        if (frame % 5 === 0) await ctx.progress({ frame, of: payload.frames });
      }
      return { frames: payload.frames };
    },
    // Durable steps: a retry resumes after the steps an earlier attempt recorded.
    "report.build": async (payload: { month: string }, ctx: WorkerContext) => {
      const rows = await ctx.step("query", async () => (await pause(200, ctx.signal), 1_000 + payload.month.length));
      if (ctx.attempt === 1) throw new Error("the PDF service hiccuped (the query step is kept)");
      const pdf = await ctx.step("render", () => `report-${payload.month}.pdf`);
      return { rows, pdf };
    },
    // Steering retries from a handler.
    "webhook.deliver": async (payload: { status: number }, ctx: WorkerContext) => {
      if (payload.status === 429 && ctx.attempt === 1) throw new RetryAfterError("rate limited: try again in 2 s", 2_000);
      if (payload.status === 410) throw new NonRetryableError("the endpoint is gone for good");
      return { delivered: true };
    },
  },
  onEvent: (event) => console.log(JSON.stringify(event)),
});

// Some work to do: a batch of jobs of the kinds above (ids are fresh each run).
const run = Date.now().toString(36);
const kinds = [
  (i: number) => ({ kind: "thumbnail.render", payload: { frames: 10 + i } }),
  (i: number) => ({ kind: "report.build", payload: { month: `2026-${String((i % 12) + 1).padStart(2, "0")}` }, backoff: { baseMs: 500, maxMs: 500 } }),
  (i: number) => ({ kind: "webhook.deliver", payload: { status: [200, 429, 410][Math.floor(i / 3) % 3] } }),
];
const response = await fetch(`${url}/v1/lanes/${lane}/jobs/batch`, {
  method: "POST",
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  body: JSON.stringify({ jobs: Array.from({ length: jobs }, (_, i) => ({ id: `demo-${run}-${i}`, ...kinds[i % 3]!(i) })) }),
});
if (!response.ok) {
  console.error(`enqueue failed: HTTP ${response.status} ${await response.text()} (is \`npm run dev\` running at ${url}?)`);
  await worker.stop({ graceMs: 0 });
  process.exit(1);
}
console.log(`enqueued ${jobs} jobs into lane ${lane}; working (Ctrl-C stops gracefully)`);

const report = setInterval(() => console.log(JSON.stringify({ stats: worker.stats() })), 5_000);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    clearInterval(report);
    console.log(JSON.stringify({ stopped: await worker.stop({ graceMs: 5_000 }), stats: worker.stats() }));
  });
}
