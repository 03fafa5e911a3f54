/**
 * Workload 4, pull consumers: `createWorker` instances over HTTP drain a backlog of
 * pull-only jobs, and an idle worker's long-poll claim hears of enqueues. Every HTTP figure is
 * measured twice over the same bench bundle: through `wrangler dev` (whose development proxy caps
 * every HTTP figure) and served by miniflare's API directly, to show what that proxy costs. The
 * HTTP no-op floor is measured on each server in the same run, for the targets' ratios.
 *
 * Node runs this file by type stripping: no enums or parameter properties, and .ts imports by path.
 */
import { dirname } from "node:path";
import type * as WorkerModule from "../src/client/worker.js";

const load = async <T>(path: string) => (await import(new URL(path, import.meta.url).href)) as T;
// The client's sources import each other as `.js`; this hook lets Node find their `.ts`.
await load("../scripts/ts-imports.ts");
const { createWorker } = await load<typeof WorkerModule>("../src/client/worker.ts");
const { Miniflare, convertV4MiniflareOptions } = await import("miniflare");

const PULL_KIND = "bench.pull";

export interface PullSizes {
  pullN: number;
  pullConsumers: number;
  httpN: number;
  latencyN: number;
}

interface Server {
  url: URL;
  token: string;
}

type Summary = { n: number; p50: number | null; p99: number | null; mean: number | null };

function summary(values: number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : null);
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), mean: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function request(server: Server, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(new URL(path, server.url), {
    method,
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** The HTTP floor: a route of the bench worker that answers at once, `n` times at `concurrency`. */
async function floor(server: Server, n: number, concurrency: number) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < n) await request(server, "POST", "/bench/noop", {});
  }));
  const ms = performance.now() - t0;
  return { ops: n, ms, opsPerSec: (n * 1000) / ms };
}

/**
 * `consumers` workers drain `n` queued pull jobs with no-op handlers; requests counted by route. Each
 * runs 250 at once (the four together: the lane's concurrency, 1000), so keeps three claims in flight.
 */
async function drain(server: Server, lane: string, sizes: PullSizes) {
  await request(server, "POST", "/bench/fill", { lane, size: sizes.pullN, binding: "LANE" });
  const requests: Record<string, number> = {};
  const counted: typeof fetch = (input, init) => {
    const route = String(input).split("/").pop()!;
    requests[route] = (requests[route] ?? 0) + 1;
    return fetch(input, init);
  };
  let completed = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const t0 = performance.now();
  const workers = Array.from({ length: sizes.pullConsumers }, () =>
    createWorker({
      url: server.url.href, token: server.token, lane, concurrency: 250, leaseMs: 120_000, fetch: counted,
      handlers: { [PULL_KIND]: () => null },
      onEvent: (event) => {
        if (event.type === "completed" && ++completed === sizes.pullN) done();
      },
    }),
  );
  await finished;
  const ms = performance.now() - t0;
  await Promise.all(workers.map((w) => w.stop({ graceMs: 1000 })));
  const stats = workers.map((w) => w.stats());
  return {
    jobs: completed, consumers: sizes.pullConsumers, ms, jobsPerSec: (completed * 1000) / ms,
    requests, jobsPerRequest: completed / Object.values(requests).reduce((a, b) => a + b, 0),
    lost: stats.reduce((sum, s) => sum + s.lost, 0),
  };
}

/** One idle worker holds a long-poll claim; jobs are enqueued one at a time: how soon each handler starts. */
async function longPoll(server: Server, lane: string, n: number) {
  const started = new Map<string, number>();
  const worker = createWorker({ url: server.url.href, token: server.token, lane, handlers: { [PULL_KIND]: (_p, ctx) => void started.set(ctx.job.id, performance.now()) } });
  await sleep(300); // its first claim is held by now
  const fromSent: number[] = [];
  const fromAnswered: number[] = [];
  const enqueueMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const id = `lp-${i}`;
    const sent = performance.now();
    await request(server, "POST", `/v1/lanes/${lane}/jobs`, { id, kind: PULL_KIND });
    const answered = performance.now();
    for (let spins = 0; !started.has(id) && spins < 1000; spins++) await sleep(1);
    if (!started.has(id)) throw new Error(`job ${id} did not start within a second`);
    fromSent.push(started.get(id)! - sent);
    fromAnswered.push(started.get(id)! - answered);
    enqueueMs.push(answered - sent);
    await sleep(10); // the worker's next claim is held again
  }
  await worker.stop({ graceMs: 1000 });
  return { startDelayMs: summary(fromSent), afterEnqueueAnsweredMs: summary(fromAnswered), enqueueRoundTripMs: summary(enqueueMs) };
}

async function measure(server: Server, name: string, sizes: PullSizes) {
  return {
    http_floor_c1: await floor(server, sizes.httpN, 1),
    http_floor_c16: await floor(server, sizes.httpN, 16),
    drain: await drain(server, `pull-${name}`, sizes),
    longPoll: await longPoll(server, `pull-lp-${name}`, sizes.latencyN),
  };
}

/**
 * The workload: through `wrangler dev` (the runtime the bench started), then the same bundle served by
 * miniflare directly. Top-level `jobs`, `jobsPerSec` and `consumers` are the `wrangler dev` figures.
 */
export async function pullWorkload(options: { wranglerDev: Server; bundlePath: string; run: string; sizes: PullSizes }) {
  const viaWrangler = await measure(options.wranglerDev, `wrangler-${options.run}`, options.sizes);
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      scriptPath: options.bundlePath,
      modulesRoot: dirname(options.bundlePath),
      compatibilityDate: "2026-11-01",
      compatibilityFlags: ["enable_request_signal"],
      durableObjects: {
        LANE: { className: "BenchLane", useSQLite: true },
        PLAIN_LANE: { className: "PlainLane", useSQLite: true },
        REGISTRY: { className: "LaneRegistry", useSQLite: true },
      },
      bindings: { API_TOKEN: options.wranglerDev.token },
      port: 0,
    }),
  );
  const { jobs, consumers, jobsPerSec } = viaWrangler.drain;
  try {
    const viaMiniflare = await measure({ url: await mf.ready, token: options.wranglerDev.token }, `miniflare-${options.run}`, options.sizes);
    return { jobs, consumers, jobsPerSec, wranglerDev: viaWrangler, miniflare: viaMiniflare };
  } catch (error) {
    // The wrangler dev figures stand; the report shows the miniflare half as broken.
    return { jobs, consumers, jobsPerSec, wranglerDev: viaWrangler, miniflare: { error: String(error) } };
  } finally {
    await mf.dispose().catch(() => undefined);
  }
}

/**
 * The targets of this workload, in the shape of report.ts's: on `wrangler dev`, as the target
 * sets them (the miniflare figures are reported beside them, not judged).
 */
export function pullTargets(r: any) {
  const target = (name: string, measured: number | null | undefined, comparison: ">=" | "<=", goal: number, unit: string, basis: string) => {
    const rounded = typeof measured === "number" && Number.isFinite(measured) ? Math.round(measured * 1000) / 1000 : null;
    return { name, measured: rounded, target: goal, unit, met: rounded !== null && (comparison === ">=" ? rounded >= goal : rounded <= goal), comparison, basis };
  };
  const w = r?.wranglerDev;
  const floor16 = w?.http_floor_c16?.opsPerSec;
  return [
    target("pull: 4 createWorker over HTTP / HTTP no-op floor (16 at once)", w?.drain?.jobsPerSec / floor16, ">=", 10, "x",
      `${Math.round(w?.drain?.jobsPerSec)} jobs/s / ${Math.round(floor16)} req/s`),
    target("pull: enqueue -> handler start over long-poll, p50", w?.longPoll?.startDelayMs?.p50, "<=", 20, "ms",
      `${w?.longPoll?.startDelayMs?.n} enqueues; the enqueue's round trip alone p50 ${w?.longPoll?.enqueueRoundTripMs?.p50?.toFixed(1)} ms`),
  ];
}

/** The workload's figures, both ways, as lines for the printed report. */
export function printPull(r: any): void {
  if (!r || r.error) return;
  const f = (x: unknown, d = 0) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(d) : "-");
  console.log("\npull consumers over HTTP (workload 4), wrangler dev vs miniflare directly:");
  for (const [via, w] of [["wrangler dev", r.wranglerDev], ["miniflare   ", r.miniflare]] as const) {
    if (!w || w.error) {
      console.log(`  ${via}  broke: ${w?.error ?? "not measured"}`);
      continue;
    }
    console.log(
      `  ${via}  floor ${f(w.http_floor_c1.opsPerSec)} / ${f(w.http_floor_c16.opsPerSec)} req/s (1 / 16 at once);` +
        ` drain ${f(w.drain.jobsPerSec)} jobs/s = ${f(w.drain.jobsPerSec / w.http_floor_c16.opsPerSec, 1)}x the floor (${w.drain.jobs} jobs, ${w.drain.consumers} workers, ${f(w.drain.jobsPerRequest, 1)} jobs per request);` +
        ` long-poll start p50/p99 ${f(w.longPoll.startDelayMs.p50, 1)}/${f(w.longPoll.startDelayMs.p99, 1)} ms (enqueue round trip p50 ${f(w.longPoll.enqueueRoundTripMs.p50, 1)} ms)`,
    );
  }
}
