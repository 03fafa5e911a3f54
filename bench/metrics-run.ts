/**
 * What a Prometheus scrape of every lane costs (docs/benchmarks.md), from Node (run.ts calls it):
 * `lanes` active lanes (bench/metrics.ts fills them), their reports awaited until `GET /v1/metrics`
 * shows each lane's last state, then several scrapes in a row: inside the worker through the real app
 * (the target: what a scrape costs the Worker), and over HTTP through `wrangler dev` (reported: its
 * local proxy moves the megabytes a second time), each the median and p99 of the time to the last
 * byte; and the Durable Object calls each scrape made (counted by the bench worker around the
 * request, and by the registry). Its targets are `metricsTargets`, beside every other target.
 * Node runs this file by type stripping: no enums or parameter properties.
 */
import type { Target } from "./report.js";

type Mode = "full" | "quick" | "smoke";
type Bench = <T = any>(workload: string, params?: object) => Promise<T>;

/** A scrape of every lane answers within this (ms), locally. */
export const SCRAPE_GOAL_MS = 50;
/** The object calls a scrape may make, however many lanes there are. */
export const SCRAPE_CALLS_GOAL = 1;

const SIZES: Record<Mode, { lanes: number; scrapes: number }> = { full: { lanes: 1000, scrapes: 30 }, quick: { lanes: 1000, scrapes: 15 }, smoke: { lanes: 20, scrapes: 3 } };

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

export async function metricsWorkload(bench: Bench, url: URL, token: string, mode: Mode, run: string): Promise<object> {
  const { lanes, scrapes } = SIZES[mode];
  const scrape = async () => {
    const t0 = performance.now();
    const response = await fetch(new URL("/v1/metrics", url), { headers: { authorization: `Bearer ${token}` } });
    const text = await response.text();
    const ms = performance.now() - t0;
    if (response.status !== 200) throw new Error(`GET /v1/metrics: ${response.status} ${text.slice(0, 200)}`);
    return { ms, text };
  };
  const fill = await bench("metricsFill", { run, lanes, jobs: 5 });
  // Each lane's last change goes out within a second or so (its report's term): wait for all of them.
  const t0 = performance.now();
  const done = (text: string) => (text.match(new RegExp(`^switchyard_jobs\\{lane="metrics-${run}-\\d+",state="completed"\\} 5$`, "gm")) ?? []).length;
  for (;;) {
    const seen = done((await scrape()).text);
    if (seen === lanes) break;
    if (performance.now() - t0 > 120_000) throw new Error(`only ${seen} of ${lanes} lanes reported their last state within 120 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const reportedAfterMs = performance.now() - t0;
  const before = await bench("metricsCalls");
  const times: number[] = [];
  let last = "";
  for (let i = 0; i < scrapes; i++) {
    const { ms, text } = await scrape();
    times.push(ms);
    last = text;
  }
  const after = await bench("metricsCalls");
  const inWorker = await bench("metricsInWorker", { n: scrapes });
  const sorted = [...times].sort((a, b) => a - b);
  const requests = after.requests - before.requests;
  return {
    lanes,
    fill,
    reportedAfterMs,
    scrapes,
    scrapeMs: { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1), all: times },
    exposition: { bytes: Buffer.byteLength(last), lines: last.split("\n").length - 1, lanes: (last.match(/^switchyard_oldest_due_age_seconds\{/gm) ?? []).length },
    objectCallsPerScrape: requests > 0 ? (after.calls - before.calls) / requests : null,
    registryCallsPerScrape: (after.registry.scrapes - before.registry.scrapes) / scrapes,
    reportsDuringScrapes: after.registry.reports - before.registry.reports,
    inWorker,
  };
}

const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

/** The scrape's targets: its median and p99 time inside the worker, and the object calls it makes; the HTTP times reported. */
export function metricsTargets(results: Record<string, any>): Target[] {
  const m = results.metrics;
  const ms = (x: unknown) => num(x)?.toFixed(1) ?? "-";
  const size = `${m?.exposition?.lanes ?? "?"} lanes in the exposition (${m?.lanes ?? "?"} filled), ${num(m?.exposition?.bytes) === null ? "?" : Math.round(m.exposition.bytes / 1024)} KiB, ${m?.exposition?.lines ?? "?"} lines`;
  const inWorker = `${size}; ${m?.inWorker?.n ?? "?"} scrapes through the app in the worker: p50 ${ms(m?.inWorker?.app?.p50)} / p99 ${ms(m?.inWorker?.app?.p99)} ms, of which the registry's call p50 ${ms(m?.inWorker?.registryCall?.p50)} ms`;
  const http = `${size}; ${m?.scrapes ?? "?"} scrapes from Node via wrangler dev: p50 ${ms(m?.scrapeMs?.p50)} / p99 ${ms(m?.scrapeMs?.p99)} / max ${ms(m?.scrapeMs?.max)} ms`;
  const round = (x: unknown) => (num(x) === null ? null : Math.round((x as number) * 100) / 100);
  const goal = (name: string, measured: number | null, basis: string): Target => ({ name, measured, target: SCRAPE_GOAL_MS, unit: "ms", met: measured !== null && measured <= SCRAPE_GOAL_MS, comparison: "<=", basis });
  const report = (name: string, measured: number | null, basis: string): Target => ({ name, measured, target: 0, unit: "ms", met: true, comparison: ">=", basis, reported: true });
  const calls = num(m?.objectCallsPerScrape);
  return [
    goal(`GET /v1/metrics of ${m?.lanes ?? "?"} active lanes, in the worker, p50`, round(m?.inWorker?.app?.p50), inWorker),
    goal(`GET /v1/metrics of ${m?.lanes ?? "?"} active lanes, in the worker, p99`, round(m?.inWorker?.app?.p99), inWorker),
    report(`GET /v1/metrics of ${m?.lanes ?? "?"} active lanes, over HTTP via wrangler dev, p50`, round(m?.scrapeMs?.p50), http),
    report(`GET /v1/metrics of ${m?.lanes ?? "?"} active lanes, over HTTP via wrangler dev, p99`, round(m?.scrapeMs?.p99), http),
    {
      name: "GET /v1/metrics: Durable Object calls per scrape, whatever the lanes",
      measured: calls,
      target: SCRAPE_CALLS_GOAL,
      unit: "calls",
      met: calls !== null && calls <= SCRAPE_CALLS_GOAL,
      comparison: "<=",
      basis: `counted around each HTTP scrape by the bench worker; the registry served ${m?.registryCallsPerScrape ?? "?"} scrape call(s) per scrape and ${m?.reportsDuringScrapes ?? "?"} lane reports meanwhile; all lanes reported ${ms(m?.reportedAfterMs)} ms after the fill`,
    },
  ];
}
