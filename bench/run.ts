/**
 * `npm run bench`: starts the bench worker (wrangler.bench.toml) under `wrangler dev` over a
 * fresh state directory, runs every workload in one process run, prints a table, and writes
 * bench/results/<timestamp>.json with a `targets` array and every raw figure.
 *
 *   npm run bench                 the full sizes (1,000,000-job backlog: minutes)
 *   npm run bench -- --quick      the same workloads, reduced, in under two minutes
 *   npm run bench:smoke           tiny sizes, about ten seconds: CI runs it so the bench cannot rot
 *   … -- --only drain,single      those workloads and the floors their ratios need
 *   … -- --observability          with wrangler dev's local trace collector on (off by default: see below)
 *
 * Exits 0 when every workload ran (targets may be unmet); 1 when the benchmark itself broke.
 * Node runs this file by type stripping: no enums or parameter properties, and .ts imports by path.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type * as RuntimeModule from "../scripts/local-runtime.js";
import type * as ProcessWatchModule from "./process-watch.js";
import type * as MetricsModule from "./metrics-run.js";
import type * as PullModule from "./pull-worker.js";
import type * as RecordingModule from "./recording-run.js";
import type * as RepeatModule from "./repeat.js";
import type * as ReportModule from "./report.js";
import type * as ScheduleRunModule from "./schedules-run.js";
import type * as ShardTargetsModule from "./shard-targets.js";
import type * as WaitsModule from "./waits.js";
import type * as PayloadsModule from "./payloads.js";
import type * as TenantsTargetsModule from "./tenants-targets.js";
import type * as KindsTargetsModule from "./kinds-targets.js";
import type * as BatchesTargetsModule from "./batches-targets.js";
import type * as BulkTargetsModule from "./bulk-targets.js";

// Imported by path so that Node (type stripping) and tsc (which refuses `.ts` specifiers here) both accept them.
const load = async <T>(path: string) => (await import(new URL(path, import.meta.url).href)) as T;
const { LocalRuntime } = await load<typeof RuntimeModule>("../scripts/local-runtime.ts");
const { ProcessWatch } = await load<typeof ProcessWatchModule>("./process-watch.ts");
const { aboveBare, buildTargets, printTables, scheduleTargets } = await load<typeof ReportModule>("./report.ts");
const { medianBy } = await load<typeof RepeatModule>("./repeat.ts");
const { scheduleWorkload } = await load<typeof ScheduleRunModule>("./schedules-run.ts");
const { pullWorkload, pullTargets, printPull } = await load<typeof PullModule>("./pull-worker.ts");
const { recordingWorkload, recordingTargets } = await load<typeof RecordingModule>("./recording-run.ts");
const { metricsWorkload, metricsTargets } = await load<typeof MetricsModule>("./metrics-run.ts");
const { shardTargets } = await load<typeof ShardTargetsModule>("./shard-targets.ts");
const { bulkTargets } = await load<typeof BulkTargetsModule>("./bulk-targets.ts");
const { waitsWorkload, waitsTargets, printWaits } = await load<typeof WaitsModule>("./waits.ts");
const { payloadsWorkload, payloadsTargets } = await load<typeof PayloadsModule>("./payloads.ts");
const { tenantsTargets } = await load<typeof TenantsTargetsModule>("./tenants-targets.ts");
const { kindsTargets } = await load<typeof KindsTargetsModule>("./kinds-targets.ts");
const { batchesTargets } = await load<typeof BatchesTargetsModule>("./batches-targets.ts");

type Mode = "full" | "quick" | "smoke";

const SIZES = {
  full: {
    floorN: 2000, sqliteN: 50_000, profileN: 1000, enqueueN: 2000, singleN: 2000, serialPerQueue: 1000, httpN: 1000, batchTotal: 100_000, drainN: 20_000,
    pullN: 10_000, pullConsumers: 4, latencyN: 500, streamMs: 10_000, growth: [1000, 100_000, 1_000_000], growthOps: 500, scalePerLane: 5000,
  },
  quick: {
    floorN: 1000, sqliteN: 50_000, profileN: 1000, enqueueN: 1000, singleN: 1000, serialPerQueue: 250, httpN: 300, batchTotal: 20_000, drainN: 4000,
    pullN: 1000, pullConsumers: 4, latencyN: 200, streamMs: 3000, growth: [1000, 10_000, 50_000], growthOps: 200, scalePerLane: 500,
  },
  smoke: {
    floorN: 50, sqliteN: 5000, profileN: 100, enqueueN: 50, singleN: 50, serialPerQueue: 10, httpN: 20, batchTotal: 1000, drainN: 200,
    pullN: 50, pullConsumers: 2, latencyN: 10, streamMs: 500, growth: [100, 500], growthOps: 20, scalePerLane: 50,
  },
} satisfies Record<Mode, unknown>;

const mode: Mode = process.argv.includes("--smoke") ? "smoke" : process.argv.includes("--quick") ? "quick" : "full";
/** `--only drain,single,latency`: those workloads and the floors their ratios need, for working on a few targets. */
const onlyArg = process.argv.indexOf("--only");
const only = onlyArg >= 0 ? new Set([...(process.argv[onlyArg + 1] ?? "").split(","), "clock", "floor", "sqlite"]) : null;
const sizes = SIZES[mode];
const run = Date.now().toString(36);
const NOOP_KIND = "bench.noop";
const PULL_KIND = "bench.pull";

const ROOT = resolve(import.meta.dirname, "..");

/**
 * Bundles the bench worker once and writes a config that serves that bundle as is (`no_bundle`):
 * `wrangler dev` rebuilds and restarts the worker whenever a source file changes, and a run of
 * minutes in a repository where others are editing src/ must measure one version of the code.
 */
function bundleBenchWorker(dir: string): string {
  execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", dir, "--config", "wrangler.bench.toml"], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
    stdio: "pipe",
  });
  const config = readFileSync(join(ROOT, "wrangler.bench.toml"), "utf8")
    .replace(/^main = .*$/m, `main = ${JSON.stringify(join(dir, "worker.js"))}\nno_bundle = true`)
    .replace(/^\[build\]\n(?:[^[\n].*\n)*/m, ""); // built already, and its command runs in the repo only
  const path = join(dir, "wrangler.toml");
  writeFileSync(path, config);
  return path;
}

// wrangler dev's local trace collector (X_LOCAL_OBSERVABILITY, on by default) records every span —
// one per RPC and one per sql.exec — into its own SQLite in the same runtime: a development tool that
// production does not have, and that weighs on every statement of a workload and its floor alike.
// Off for the benchmark unless `--observability` (bench/README.md has one run of each).
if (!process.argv.includes("--observability")) process.env.X_LOCAL_OBSERVABILITY = "false";

const bootStart = performance.now();
const bundleDir = mkdtempSync(join(tmpdir(), "switchyard-bench-bundle-"));
const persistDir = mkdtempSync(join(tmpdir(), "switchyard-bench-"));
const logTail: string[] = [];
const runtime = await LocalRuntime.start({
  persistDir,
  config: bundleBenchWorker(bundleDir),
  apiToken: "bench-token",
  onLog: (line) => {
    logTail.push(line);
    if (logTail.length > 100) logTail.shift();
  },
});
const watch = new ProcessWatch(runtime.processGroup);

// However the run ends (a throw, Ctrl-C), the runtime's process group and the temporary state go with it.
process.on("exit", () => {
  try {
    process.kill(-runtime.processGroup, "SIGKILL");
  } catch {
    // already gone
  }
  rmSync(persistDir, { recursive: true, force: true });
  rmSync(bundleDir, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));

/** A bench route inside the worker: its loop runs there; the answer is its figures. */
async function bench<T = any>(workload: string, params: object = {}): Promise<T> {
  const response = await fetch(new URL(`/bench/${workload}`, runtime.url), {
    method: "POST",
    body: JSON.stringify({ run, ...params }),
    signal: AbortSignal.timeout(900_000),
  });
  const body = (await response.json()) as any;
  if (!response.ok) throw new Error(`/bench/${workload}: ${response.status} ${body.error}\n${body.stack ?? ""}`);
  return body as T;
}

async function pool(n: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

async function expectStatus(response: Promise<{ status: number; body: any }>, status: number): Promise<any> {
  const answer = await response;
  if (answer.status !== status) throw new Error(`expected ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body;
}

const results: Record<string, any> = {};
const failures: string[] = [];

/** Runs one workload under the process watch (workerd memory and CPU); a failure is recorded and the run goes on. */
async function workload(name: string, fn: () => Promise<object>): Promise<void> {
  if (only && !only.has(name)) return;
  process.stdout.write(`  ${name} … `);
  watch.start();
  const t0 = performance.now();
  try {
    results[name] = await fn();
    results[name].process = watch.stop();
    process.stdout.write(`${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  } catch (error) {
    watch.stop();
    failures.push(name);
    results[name] = { error: String(error) };
    process.stdout.write(`FAILED\n${String(error)}\n`);
  }
}

console.log(`runtime up in ${((performance.now() - bootStart) / 1000).toFixed(1)} s`);
console.log(`switchyard bench (${mode}), ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}, state in ${persistDir}`);
const startedAt = new Date();

await workload("clock", () => bench("clock"));
await workload("floor", () => bench("floor", { n: sizes.floorN }));
// On the lane's schema and on the bare table, in alternating rounds (workloads.ts).
await workload("sqlite", () => bench("sqlite", { n: sizes.sqliteN, rounds: mode === "smoke" ? 2 : 5 }));
await workload("profile", () => bench("profile", { n: sizes.profileN }));

/**
 * The RPC enqueue against its floor (a one-row-writing RPC) in three repetitions (one in --smoke),
 * each on lanes of its own with the floor in alternating rounds: the figure is the median repetition's
 * µs a call above the floor (reported, no goal), each repetition's kept.
 */
async function enqueueRpc(concurrency: number, tag = run, loadLane?: string) {
  const reps: any[] = [];
  for (let rep = 0; rep < (mode === "smoke" ? 1 : 3); rep++) reps.push(await bench("enqueueRpc", { run: `${tag}-r${rep}`, n: sizes.enqueueN, concurrency, loadLane }));
  // The figure: how many µs a call the enqueue takes over the write RPC beside it (the median
  // repetition's); the ratio of the two moved inside the machine's noise, and means less.
  const median = { ...medianBy(reps, (r: any) => 1e6 / r.enqueue.opsPerSec - 1e6 / r.write.opsPerSec), enqueueToWrite: reps.map((r: any) => r.enqueue.opsPerSec / r.write.opsPerSec) };
  if (!loadLane) return median;
  // Over all repetitions: the fires inside the timed rounds of each side.
  const inRounds = (side: "enqueue" | "write") => reps.reduce((sum: number, r: any) => sum + r.firesInRounds[side], 0);
  return { ...median, firesInRounds: { enqueue: inRounds("enqueue"), write: inRounds("write") } };
}

await workload("enqueue", async () => {
  const rpc1 = await enqueueRpc(1);
  const rpc16 = await enqueueRpc(16);
  const timedHttp = async (concurrency: number, call: (i: number) => Promise<unknown>) => {
    const t0 = performance.now();
    await pool(sizes.httpN, concurrency, call);
    const ms = performance.now() - t0;
    return { ops: sizes.httpN, ms, opsPerSec: (sizes.httpN * 1000) / ms };
  };
  // The HTTP floor: the same path through `wrangler dev` into the worker, answering at once.
  const floor = (concurrency: number) => timedHttp(concurrency, () => bench("noop"));
  const http = async (concurrency: number) => {
    const lane = `enqueue-http-c${concurrency}-${run}`;
    await expectStatus(runtime.api("POST", `/v1/lanes/${lane}/jobs`, { kind: PULL_KIND, payload: { warm: true } }), 201);
    return timedHttp(concurrency, (i) => expectStatus(runtime.api("POST", `/v1/lanes/${lane}/jobs`, { kind: PULL_KIND, payload: { i } }), 201));
  };
  const httpGroupsBefore = await bench("httpGroups");
  const figures = {
    rpc_c1: rpc1, rpc_c16: rpc16,
    http_floor_c1: await floor(1), http_c1: await http(1), http_floor_c16: await floor(16), http_c16: await http(16),
  };
  const httpGroupsAfter = await bench("httpGroups");
  const calls = httpGroupsAfter.calls - httpGroupsBefore.calls;
  const items = httpGroupsAfter.items - httpGroupsBefore.items;
  return { ...figures, httpGroups: { calls, items, meanSize: calls > 0 ? items / calls : null } };
});

// Group commit: 16 producers each awaiting its own single enqueue, grouped and not, in one run.
await workload("groupCommit", async () => ({
  c16: await bench("groupCommit", { n: mode === "smoke" ? 400 : sizes.enqueueN * 10, concurrency: 16, rounds: mode === "smoke" ? 2 : 10 }),
  c1: await bench("groupCommit", { n: mode === "smoke" ? 100 : sizes.enqueueN, concurrency: 1, rounds: mode === "smoke" ? 2 : 10 }),
}));

// Group commit's share: one more caller in a group against one more job in a batch (bench/group-share.ts).
await workload("groupShare", () => bench("groupShare", { rounds: { full: 20, quick: 10, smoke: 2 }[mode] }));
// Typed kinds (bench/kinds.ts): 1,000-job batches and single enqueues of a kind declared with a 10-field zod schema against an undeclared kind.
await workload("kinds", () => bench("kinds", { rounds: { full: 30, quick: 15, smoke: 2 }[mode], singles: { full: 2000, quick: 1000, smoke: 200 }[mode] }));

await workload("batch", () => bench("batch", { total: sizes.batchTotal }));
// Batch executors (bench/batches.ts): the same drain by a batch executor of size 100 and by single-job executors.
await workload("batches", () => bench("batches", { run, n: { full: 10_000, quick: 4000, smoke: 500 }[mode], rounds: mode === "smoke" ? 1 : 3 }));

/**
 * Drains in three repetitions (one in --smoke), each with the raw claim rate measured right before
 * it: a drain's ratio is the median of its repetitions' ratios, each against its own floor, where one
 * drain against the sqlite workload's one claim reading, a minute apart, swung 0.36–0.54 over runs of
 * the same code. Each repetition's figures are kept, and the ratio to the sqlite claim reading too.
 */
async function drains(reps: number) {
  const runs: { floor: any; c1: any; c16: any; c1_limited: any; c16_limited: any; c1_first: any; c16_first: any }[] = [];
  const never = { limit: 100_000 }; // the same drains on a lane whose rate limit never bites (100,000 per 100 ms), beside each repetition
  for (let rep = 0; rep < reps; rep++) {
    const tag = `${run}-r${rep}`;
    const floor = await bench("claimFloor", { run: tag, n: sizes.drainN, ...(mode === "smoke" ? { bareN: 5000 } : {}) });
    const c1 = await bench("drain", { run: tag, n: sizes.drainN, concurrency: 1 });
    const c1_limited = await bench("drain", { run: tag, n: sizes.drainN, concurrency: 1, ...never });
    const c16 = await bench("drain", { run: tag, n: sizes.drainN, concurrency: 16 });
    const c16_limited = await bench("drain", { run: tag, n: sizes.drainN, concurrency: 16, ...never });
    // Claims and completions alone: every job enqueued while the lane is paused, the clock started at the resume.
    const first = (concurrency: number) => bench("drain", { run: tag, n: sizes.drainN, concurrency, enqueueFirst: true });
    runs.push({ floor, c1, c16, c1_limited, c16_limited, c1_first: await first(1), c16_first: await first(16) });
  }
  const median = (key: "c1" | "c16") => medianBy(runs.map((r) => ({ ...r[key], claimFloor: r.floor.opsPerSec })), (d) => d.jobsPerSec / d.claimFloor);
  // Cost is 1/rate: the limited drain's cost over the plain one's is plain rate / limited rate.
  const limitCost = (key: "c1" | "c16") => medianBy(runs.map((r) => ({ plain: r[key], limited: r[`${key}_limited`] })), (d) => d.plain.jobsPerSec / d.limited.jobsPerSec);
  // Against the bare table (bench/bare.ts): a drain's µs a job over its repetition's bare claim-shaped
  // UPDATE plus bare UPDATE, the floor of one claim and one completion that no schema change moves.
  const aboveBare = (key: "c1" | "c16" | "c1_first" | "c16_first") =>
    medianBy(
      runs.map((r) => ({ jobs: r[key].jobs, usPerJob: 1e6 / r[key].jobsPerSec, bareClaimUs: 1e6 / r.floor.bare.claim.opsPerSec, bareUpdateUs: 1e6 / r.floor.bare.update.opsPerSec })),
      (d) => d.usPerJob / (d.bareClaimUs + d.bareUpdateUs),
    );
  return {
    c1: median("c1"), c16: median("c16"), rateLimitCost: { c1: limitCost("c1"), c16: limitCost("c16") },
    bare: { c1: aboveBare("c1"), c16: aboveBare("c16"), c1_first: aboveBare("c1_first"), c16_first: aboveBare("c16_first") }, repetitions: runs,
  };
}

await workload("drain", async () => ({
  ...(await drains(mode === "smoke" ? 1 : 3)),
  // What-if: the same drain with setAlarm writing nothing, the most that coalescing alarm writes could gain.
  c16_noAlarmWrites: await bench("drain", { n: sizes.drainN, concurrency: 16, skipAlarmWrites: true }),
}));

// What recording (history and metrics) costs the drain: on and off in the same run (bench/recording-run.ts).
await workload("recording", () => recordingWorkload(bench, mode, run, sizes.drainN));

await workload("single", () => bench("single", { n: sizes.singleN }));
await workload("serialQueues", () => bench("serialQueues", { queues: 16, perQueue: sizes.serialPerQueue }));

await workload("steps", async () => ({
  // 20 rounds (was 5): a round is ~15 ms timed in whole milliseconds, and one pause of the isolate in one of 5 rounds halved the figure.
  ...(await bench("steps", { kind: NOOP_KIND, steps: 1000, rounds: mode === "smoke" ? 1 : 20 })),
  // The drain again, each job recording one checkpoint through ctx.step.
  drain_c16: await bench("drain", { n: sizes.drainN, concurrency: 16, steps: 1 }),
}));

await workload("pull", () =>
  pullWorkload({ wranglerDev: { url: runtime.url, token: runtime.apiToken }, bundlePath: join(bundleDir, "worker.js"), run, sizes }),
);

await workload("latency", () => bench("latency", { n: sizes.latencyN, gapMs: 10 }));

// Waiting both ways over HTTP (bench/waits.ts): held reads and SSE streams idle then answered; a waitpoint's completion → its job's start; a chunk → an SSE reader.
await workload("waits", () => waitsWorkload({ url: runtime.url, token: runtime.apiToken, processGroup: runtime.processGroup, mode, run }));

// Big payloads over HTTP (bench/payloads.ts): a 10 MiB payload in R2, enqueue → its executor's start, and a pull claim of one.
await workload("payloads", () => payloadsWorkload({ url: runtime.url, token: runtime.apiToken, mode, run }));

// Flow control: a bucket of 100 a second over a backlog; round-robin over many queues.
const flowSizes = { full: { n: 10_000, windowMs: 10_000, queues: 1_000, perQueue: 100 }, quick: { n: 10_000, windowMs: 5_000, queues: 1_000, perQueue: 20 }, smoke: { n: 1_000, windowMs: 1_000, queues: 20, perQueue: 5 } }[mode];
await workload("bucket", () => bench("bucket", { n: flowSizes.n, limit: 100, windowMs: flowSizes.windowMs }));
await workload("roundRobin", () => bench("roundRobin", { queues: flowSizes.queues, perQueue: flowSizes.perQueue }));
// Many tenants in one lane (bench/tenants.ts): one hot backlog beside thousands of one-job tenants, every queue on queueDefaults.
const tenantSizes = { full: { hot: 100_000, cold: 10_000 }, quick: { hot: 20_000, cold: 2_000 }, smoke: { hot: 1_000, cold: 100 } }[mode];
await workload("tenants", () => bench("tenants", { run, hot: tenantSizes.hot, cold: tenantSizes.cold, single: mode === "smoke" ? 50 : 200 }));

// Jobs that wait for jobs: a fan-in of 1,000 children over 10 lanes (a join level of 10: dependsOn holds 100), five runs.
await workload("fanIn", async () => {
  const runs: any[] = [];
  const reps = mode === "smoke" ? 2 : 5;
  for (let rep = 0; rep < reps; rep++) runs.push(await bench("fanIn", { run: `${run}-r${rep}`, groups: mode === "smoke" ? 2 : 10, perGroup: 100, lanes: 10 }));
  const sorted = runs.map((r) => r.parentAfterLastChildMs as number).sort((a, b) => a - b);
  const percentile = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  const calls = runs.reduce((n, r) => n + r.noticeCalls, 0);
  const children = runs.reduce((n, r) => n + r.children, 0);
  return { runs, parentAfterLastChildMs: { p50: percentile(50), p99: percentile(99), max: sorted.at(-1) }, callsPerChild: calls / children, children: runs[0]?.children };
});
await workload("stream", () => bench("stream", { durationMs: sizes.streamMs, producers: 4, concurrency: 16 }));

await workload("growth", async () => {
  // One lane per backlog size, then the measurement in rounds that visit every lane in turn, so that
  // the machine's drifting load weighs on every size alike.
  const lanes = sizes.growth.map((size) => ({ size, lane: `growth-${size}-${run}`, fill: { added: 0, ms: 0 }, rounds: [] as any[] }));
  for (const level of lanes) {
    // Chunks of at most 100,000 jobs per request, so that no request runs for minutes.
    for (let filled = 0; filled < level.size; ) {
      filled = Math.min(level.size, filled + 100_000);
      const fill = await bench("fill", { lane: level.lane, size: filled });
      level.fill.added += fill.added;
      level.fill.ms += fill.ms;
    }
  }
  const rounds = 5;
  for (let round = 0; round < rounds; round++) {
    for (const level of lanes) level.rounds.push(await bench("growth", { lane: level.lane, ops: Math.ceil(sizes.growthOps / rounds) }));
  }
  const total = (rs: any[], key: "enqueue" | "claim") => {
    const ops = rs.reduce((sum, r) => sum + r[key].ops, 0);
    const ms = rs.reduce((sum, r) => sum + r[key].ms, 0);
    return { ops, ms, opsPerSec: ms > 0 ? (ops * 1000) / ms : null, perOp: rs.at(-1)[key].perOp };
  };
  const levels = lanes.map(({ size, fill, rounds: rs }) => ({
    size,
    fill: { ...fill, jobsPerSec: fill.ms > 0 ? (fill.added * 1000) / fill.ms : null },
    queued: rs.at(-1).queued,
    enqueue: total(rs, "enqueue"),
    claim: total(rs, "claim"),
    infoMs: rs.at(-1).infoMs,
    wake: rs.at(-1).wake,
  }));
  return { levels, rounds, note: mode === "full" ? undefined : `reduced sizes (${sizes.growth.join(", ")}) in --${mode} mode, not 1k/100k/1M` };
});

// The operator's lane (bench/counts.ts): the cost of keeping counts, info() at the growth lanes' backlogs, one retention pass.
const countsSizes = { full: { n: 20_000, expired: 100_000 }, quick: { n: 10_000, expired: 100_000 }, smoke: { n: 1000, expired: 2000 } }[mode];
await workload("countsCost", () => bench("countsCost", { n: countsSizes.n }));
await workload("info", () => bench("infoGrowth", { lanes: sizes.growth.map((size) => `growth-${size}-${run}`) }));
await workload("retention", () => bench("retentionPass", { n: countsSizes.expired }));
// A bulk requeue of every failed job of a lane while a producer and a consumer call it (bench/bulk.ts).
await workload("bulk", () => bench("bulkRequeue", { run, n: { full: 100_000, quick: 20_000, smoke: 1_000 }[mode] }));

await workload("scale", async () => {
  const out: Record<string, unknown> = {};
  for (const lanes of [1, 4, 16]) out[`lanes_${lanes}`] = await bench("drain", { n: sizes.scalePerLane, lanes, concurrency: 16 });
  return out;
});

await workload("schedules", () => scheduleWorkload(bench, mode, run, (lane) => enqueueRpc(1, `${run}-sched`, lane)));

// A Prometheus scrape of every lane: 1,000 active lanes (and every lane the run made before), GET /v1/metrics (bench/metrics-run.ts).
await workload("metrics", () => metricsWorkload(bench, runtime.url, runtime.apiToken, mode, run));

// Sharded lanes (bench/shards.ts): the CPU of workerd per job (the process watch around each phase
// alone) on a 4-shard lane against one shard, for enqueue and drain; a claim with work in one of 16
// shards against a 1-shard claim; the info of a 64-shard lane.
const shardN = { full: 20_000, quick: 5_000, smoke: 500 }[mode];
for (const shards of [1, 4]) {
  for (const phase of ["shardEnqueue", "shardDrain"]) {
    await workload(`${phase}${shards}`, async () => {
      const t0 = performance.now();
      const figures = await bench(phase, { shards, n: shardN, lane: `shards-${shards}-${run}` });
      return { ...figures, watchedMs: performance.now() - t0 };
    });
  }
}
// The same enqueues one call each (group commit off): what routing costs, without the groups split among shards.
const soloN = { full: 5_000, quick: 2_000, smoke: 200 }[mode];
for (const shards of [1, 4]) {
  await workload(`shardEnqueueSolo${shards}`, async () => {
    const t0 = performance.now();
    const figures = await bench("shardEnqueue", { shards, n: soloN, solo: true, lane: `shards-solo-${shards}-${run}` });
    return { ...figures, watchedMs: performance.now() - t0 };
  });
}
await workload("shardClaim1", () => bench("shardClaim", { shards: 1, k: mode === "smoke" ? 20 : 200 }));
await workload("shardClaim16", () => bench("shardClaim", { shards: 16, k: mode === "smoke" ? 20 : 200 }));
await workload("shardInfo", async () => ({ one: await bench("shardInfo", { shards: 1 }), sixtyFour: await bench("shardInfo", { shards: 64 }) }));

const finishedAt = new Date();
const targets = [...buildTargets(results, mode), ...scheduleTargets(results), ...pullTargets(results.pull), ...recordingTargets(results), ...metricsTargets(results), ...shardTargets(results, shardN, soloN), ...waitsTargets(results), ...tenantsTargets(results), ...bulkTargets(results)];
targets.push(...kindsTargets(results));
targets.push(...payloadsTargets(results));
targets.push(...batchesTargets(results));
printTables(results, targets);
printPull(results.pull);
printWaits(results.waits);

const report = {
  startedAt: startedAt.toISOString(),
  finishedAt: finishedAt.toISOString(),
  mode,
  machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAtEnd: loadavg() },
  sizes,
  targets,
  aboveBare: aboveBare(results),
  failures,
  workloads: results,
};
const resultsDir = join(ROOT, "bench", "results");
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `${startedAt.toISOString().replaceAll(":", "-").replace(/\.\d+Z$/, "Z")}.json`);
writeFileSync(file, JSON.stringify(report, null, 2) + "\n");
console.log(`\nwrote ${file}`);

await runtime.kill(); // the state is thrown away: no need for a polite stop

// Broken is a workload that threw or a target with no figure; an unmet target is a finding, not a failure.
// (With --only, a target whose workload did not run has no figure, and that is no breakage.)
const broken = [...failures, ...(only ? [] : targets.filter((t) => typeof t.measured !== "number" || !Number.isFinite(t.measured)).map((t) => `target ${t.name}`))];
if (broken.length > 0) {
  console.error(`\nthe benchmark broke: ${broken.join("; ")}\n--- last runtime output ---\n${logTail.join("\n")}`);
  process.exit(1);
}
