/**
 * Big payloads over real HTTP through `wrangler dev` from Node (run.ts calls it as `payloads`): a
 * 10 MiB payload kept in R2 (`PAYLOADS`, in wrangler dev's local persistence).
 *
 * - enqueue → start: `POST …/jobs?waitMs=` of a `bench.noop` job whose payload is 10 MiB; its executor
 *   answers the instant it started (`startedAtPrecise`, on the same clock as Node's
 *   `performance.timeOrigin + performance.now()`), so the figure is request sent → executor started:
 *   the body's upload to the worker, its way to the lane, the object's upload to R2, the row, the
 *   object's read back and the executor's call.
 * - pull claim: `POST …/claims` (`max` 1) of a `bench.pull` job whose payload is 10 MiB, enqueued
 *   beforehand: request sent → the whole answer read (the payload read back from R2, 10 MiB down).
 *
 * Node runs this file by type stripping: no enums or parameter properties, and .ts imports by path.
 */
import type { Target } from "./report.js";

type Mode = "full" | "quick" | "smoke";

const NOOP_KIND = "bench.noop";
const PULL_KIND = "bench.pull";

const SIZES: Record<Mode, { n: number; mib: number }> = {
  full: { n: 20, mib: 10 },
  quick: { n: 8, mib: 10 },
  smoke: { n: 2, mib: 1 },
};

interface Server {
  url: string | URL;
  token: string;
}

const now = () => performance.timeOrigin + performance.now();

function p50(values: number[]): number | null {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.ceil(sorted.length / 2) - 1]! : null;
}

async function post(server: Server, path: string, body: string): Promise<{ status: number; body: any }> {
  const response = await fetch(new URL(path, server.url), {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(120_000),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

export interface PayloadsResult {
  mib: number;
  n: number;
  /** Request sent → executor started, ms. */
  enqueueToStartMs: number[];
  enqueueToStartP50Ms: number | null;
  /** A claim of one job: request sent → answer read, ms. */
  claimMs: number[];
  claimP50Ms: number | null;
}

export async function payloadsWorkload(options: Server & { mode: Mode; run: string }): Promise<PayloadsResult> {
  const { n, mib } = SIZES[options.mode];
  const blob = "p".repeat(mib * 1024 * 1024 - 64);
  const lane = `payloads-${options.run}`;
  const enqueueToStartMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const body = JSON.stringify({ kind: NOOP_KIND, payload: { i, blob } });
    const sent = now();
    const answer = await post(options, `/v1/lanes/${lane}/jobs?waitMs=30000`, body);
    if (answer.status !== 201 || answer.body.job.state !== "settled") throw new Error(`enqueue of a ${mib} MiB payload: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
    enqueueToStartMs.push(answer.body.job.result.startedAtPrecise - sent);
  }
  const pullLane = `payloads-pull-${options.run}`;
  for (let i = 0; i < n; i++) {
    const answer = await post(options, `/v1/lanes/${pullLane}/jobs`, JSON.stringify({ kind: PULL_KIND, payload: { i, blob } }));
    if (answer.status !== 201) throw new Error(`enqueue of a ${mib} MiB pull job: ${answer.status}`);
  }
  const claimMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const sent = now();
    const answer = await post(options, `/v1/lanes/${pullLane}/claims`, JSON.stringify({ kinds: [PULL_KIND], max: 1 }));
    const took = now() - sent;
    const [job] = answer.body?.jobs ?? [];
    if (answer.status !== 200 || !job || job.payload?.blob?.length !== blob.length) throw new Error(`claim of a ${mib} MiB payload: ${answer.status}`);
    claimMs.push(took);
    await post(options, `/v1/lanes/${pullLane}/jobs/${job.id}/complete`, JSON.stringify({ token: job.lease.token }));
  }
  return { mib, n, enqueueToStartMs, enqueueToStartP50Ms: p50(enqueueToStartMs), claimMs, claimP50Ms: p50(claimMs) };
}

/** Reported, not judged: the figures are asked for, with no bound. */
export function payloadsTargets(results: { payloads?: PayloadsResult }): Target[] {
  const r = results.payloads;
  if (!r) return [];
  const reported = (name: string, basis: string, measured: number | null): Target => ({ name, basis, measured, target: 0, unit: "ms", met: true, comparison: "<=", reported: true });
  return [
    reported(`payloads: ${r.mib} MiB enqueue → executor start, p50`, `${r.n} jobs over HTTP: request sent → executor started`, r.enqueueToStartP50Ms),
    reported(`payloads: ${r.mib} MiB pull claim (max 1), p50`, `${r.n} claims over HTTP: request sent → answer read`, r.claimP50Ms),
  ];
}
