/**
 * The helpers the bench worker's measurement loops share (workloads.ts and the workload files beside
 * it): pools and timed runs, the wait until a lane's jobs are settled, the lanes' counters per op,
 * and the executor start times a lane's jobs record.
 */
import type { LaneClient } from "../src/client/types.js";
import { unwrap } from "../src/shared/errors.js";
import type { Counts } from "../src/shared/job.js";
import { NOOP_KIND, type BenchLane, type LaneCounters } from "./lanes.js";

export type Params = Record<string, unknown>;

export const BATCH = 1000;
/** How often a drain asks whether it is done: the resolution of every drain figure. */
export const POLL_MS = 5;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const rate = (ops: number, ms: number) => (ms > 0 ? (ops * 1000) / ms : null);
export const int = (params: Params, key: string, fallback: number) => (typeof params[key] === "number" ? (params[key] as number) : fallback);
export const str = (params: Params, key: string) => {
  if (typeof params[key] !== "string") throw new Error(`missing string parameter ${key}`);
  return params[key] as string;
};

/** Runs `task(i)` for i < n with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

/** Times `n` calls of `task` at `concurrency`, in ops/s. */
export type Timed = { ops: number; ms: number; opsPerSec: number | null };

export async function timed(n: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<Timed> {
  const t0 = Date.now();
  await pool(n, concurrency, task);
  const ms = Date.now() - t0;
  return { ops: n, ms, opsPerSec: rate(n, ms) };
}

/** One call that runs many statements and answers how many: its rate. */
export async function counted(call: () => Promise<number>): Promise<Timed> {
  const t0 = Date.now();
  const ops = await call();
  const ms = Date.now() - t0;
  return { ops, ms, opsPerSec: rate(ops, ms) };
}

/** `a` and `b` in alternating rounds, so that a noisy machine's drift weighs on both alike; totals of each. */
export async function interleaved(rounds: number, a: (round: number) => Promise<Timed>, b: (round: number) => Promise<Timed>): Promise<{ a: Timed; b: Timed }> {
  const sum = { a: { ops: 0, ms: 0 }, b: { ops: 0, ms: 0 } };
  for (let round = 0; round < rounds; round++) {
    for (const [key, fn] of [["a", a], ["b", b]] as const) {
      const t = await fn(round);
      sum[key].ops += t.ops;
      sum[key].ms += t.ms;
    }
  }
  const total = (t: { ops: number; ms: number }): Timed => ({ ...t, opsPerSec: rate(t.ops, t.ms) });
  return { a: total(sum.a), b: total(sum.b) };
}


export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function summary(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? null,
    mean: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null,
  };
}

const settledCount = (c: Counts) => c.completed + c.failed + c.cancelled + c.interrupted;

/**
 * Polls the lanes until `total` jobs are settled; answers when (ms epoch). The poll asks each lane's
 * O(1) settled counter (lanes.ts); the lanes' `info()` counts then confirm the end once.
 */
export async function untilSettled(lanes: DurableObjectStub<BenchLane>[], total: number, timeoutMs = 600_000) {
  const deadline = Date.now() + timeoutMs;
  let polls = 0;
  for (;;) {
    const settled = (await Promise.all(lanes.map((lane) => lane.benchSettled()))).reduce((a, b) => a + b, 0);
    polls++;
    if (settled >= total) break;
    if (Date.now() > deadline) throw new Error(`only ${settled} of ${total} jobs settled in ${timeoutMs} ms`);
    await sleep(POLL_MS);
  }
  const at = Date.now();
  const counts = (await Promise.all(lanes.map((lane) => lane.info()))).map((info) => unwrap(info).counts);
  const confirmed = counts.reduce((sum, c) => sum + settledCount(c), 0);
  if (confirmed < total) throw new Error(`the settled counter says ${total}, info() counts ${confirmed}`);
  return { at, polls, counts };
}

export const noopJobs = (from: number, count: number, kind = NOOP_KIND) =>
  Array.from({ length: count }, (_, k) => ({ kind, payload: { i: from + k } }));

/** Every job of a lane, in enqueue order (pages of 500). */
async function allJobs(client: LaneClient) {
  const jobs = [];
  let cursor: string | null | undefined;
  do {
    const page = await client.list({ limit: 500, ...(cursor ? { cursor } : {}) });
    jobs.push(...page.jobs);
    cursor = page.cursor;
  } while (cursor);
  return jobs;
}

/** Per-op cost from a lane's counters. */
export function perOp(counters: LaneCounters, ops: number) {
  const per = (n: number) => Math.round((n / ops) * 1000) / 1000;
  return {
    statements: per(counters.statements), transactions: per(counters.transactions), alarmWrites: per(counters.alarmWrites),
    alarms: per(counters.alarms), sqlUs: per(counters.sqlMs * 1000),
  };
}

export function sumCounters(all: LaneCounters[]): LaneCounters {
  return all.reduce((a, c) => ({
    statements: a.statements + c.statements, transactions: a.transactions + c.transactions, alarmWrites: a.alarmWrites + c.alarmWrites,
    alarms: a.alarms + c.alarms, sqlMs: a.sqlMs + c.sqlMs,
  }));
}

/** For each job the no-op executor ran: when it started, when the producer called, when the lane stored it. */
export async function startTimes(lane: LaneClient): Promise<{ start: number; called: number; created: number; startPrecise: number | null; calledPrecise: number | null }[]> {
  const jobs = await allJobs(lane);
  return jobs.flatMap((job) => {
    const result = job.result as { startedAt?: number; startedAtPrecise?: number } | null;
    const payload = job.payload as { t: number; tp?: number };
    const start = result?.startedAt;
    if (typeof start !== "number") return [];
    const startPrecise = typeof result?.startedAtPrecise === "number" ? result.startedAtPrecise : null;
    return [{ start, called: payload.t, created: job.createdAt, startPrecise, calledPrecise: typeof payload.tp === "number" ? payload.tp : null }];
  });
}

/** A clock reading in fractions of a millisecond, on the same scale in every isolate of the runtime. */
export const preciseNow = () => performance.timeOrigin + performance.now();
