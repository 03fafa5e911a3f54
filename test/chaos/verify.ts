/**
 * The verdict of a chaos run, read from the lanes once everything has come to rest, against what the
 * clients saw (the ledger) and what the runtime logged (its transition lines).
 */
import { isDeepStrictEqual } from "node:util";
import { RETENTION_SLACK_MS } from "../../src/shared/defaults.js";
import { noteSettled, listAll } from "./consumers.js";
import { keyOf, PULL_KIND, type Key, type Ledger, type PullResult } from "./ledger.js";
import { sleep } from "./prng.js";
import type { ChaosRuntime } from "./runtime.js";
import { judgeSteps, leftovers } from "./steps.js";

export interface Verdict {
  enqueued: number;
  settled: number;
  lost: number;
  settledTwice: number;
  /** Settled lines the log printed for writes a kill then lost (see settlementsInLog). */
  phantomSettles: number;
  outcomes: Record<string, number>;
  problems: string[];
}

const COUNT_KEYS = ["blocked", "queued", "running", "completing", "completed", "failed", "cancelled", "interrupted"] as const;

export async function verify(
  runtime: ChaosRuntime,
  ledger: Ledger,
  lanes: readonly string[],
  logLines: readonly string[],
  incarnations: readonly number[],
): Promise<Verdict> {
  const problems: string[] = [];
  const found = new Map<Key, any>();
  for (const lane of lanes) {
    const info = await runtime.settle("GET", `/v1/lanes/${lane}`);
    const jobs = (await listAll(runtime, lane)) ?? (await listAll(runtime, lane));
    if (info.status !== 200 || !jobs) {
      problems.push(`${lane}: could not read the lane (${info.status})`);
      continue;
    }
    // Counts equal the rows.
    const rows = Object.fromEntries(COUNT_KEYS.map((k) => [k, 0])) as Record<(typeof COUNT_KEYS)[number], number>;
    for (const job of jobs) rows[job.state === "settled" ? (job.outcome as (typeof COUNT_KEYS)[number]) : (job.state as (typeof COUNT_KEYS)[number])]++;
    if (!isDeepStrictEqual(info.body.counts, rows)) problems.push(`${lane}: counts ${JSON.stringify(info.body.counts)} but rows ${JSON.stringify(rows)}`);
    // Nothing left to do but retention, so the alarm waits for the first retention horizon (days away).
    const unsettled = jobs.filter((j) => j.state !== "settled").length;
    const { completedMs, failedMs } = info.body.retention;
    const horizons = jobs.flatMap((j) => {
      const ms = j.outcome === "completed" ? completedMs : failedMs;
      return ms === null ? [] : [j.settledAt + ms + RETENTION_SLACK_MS];
    });
    const retentionWake = horizons.length > 0 ? Math.min(...horizons) : null;
    if (unsettled > 0) problems.push(`${lane}: ${unsettled} jobs unsettled, counts ${JSON.stringify(info.body.counts)}, nextWakeAt ${info.body.nextWakeAt}`);
    else {
      // A term that the last moments left due (a metrics report waits up to a second after a change,
      // the consumers' last calls come as they stop) is done by the alarm within moments; a term the
      // alarm never takes (the bug this looks for) is still there seconds later.
      const seen: (number | null)[] = [info.body.nextWakeAt];
      for (let tries = 0; seen.at(-1) !== retentionWake && tries < 3; tries++) {
        await sleep(1_500);
        seen.push((await runtime.settle("GET", `/v1/lanes/${lane}`)).body.nextWakeAt);
      }
      if (seen.at(-1) !== retentionWake) problems.push(`${lane}: everything is settled but nextWakeAt is ${seen.join(", then ")}, not the first retention horizon ${retentionWake}`);
    }
    // No id is stored twice (on a sharded lane the list merges every shard's jobs).
    const ids = new Set<string>();
    for (const job of jobs) {
      if (ids.has(job.id)) problems.push(`${lane}/${job.id}: stored twice`);
      ids.add(job.id);
    }
    for (const job of jobs) found.set(keyOf(lane, job.id), job);
  }

  let lost = 0;
  let settled = 0;
  const outcomes: Record<string, number> = {};
  for (const key of ledger.acked) {
    const job = found.get(key);
    if (!job) {
      lost++;
      problems.push(`${key}: acknowledged, then lost`);
      continue;
    }
    if (job.state !== "settled") {
      problems.push(`${key}: still ${job.state} at the end (${job.kind}, queue ${job.queue}, runAt ${job.runAt - Date.now()} ms from now, attempts ${job.attempts}, generation ${job.generation})`);
      continue;
    }
    settled++;
    outcomes[job.outcome] = (outcomes[job.outcome] ?? 0) + 1;
    const problem = judge(ledger, key, job);
    if (problem) problems.push(`${key}: ${problem}`);
    noteSettled(ledger, job.lane, job);
  }
  // Completion took each job's checkpoints with it (asked of a sample: one request a job).
  problems.push(...(await leftovers(runtime, [...found.values()], 100)));
  for (const key of found.keys()) if (!ledger.planned.has(key)) problems.push(`${key}: a job nobody enqueued`);
  for (const key of ledger.planned.keys()) if (!ledger.acked.has(key) && !found.has(key)) problems.push(`${key}: never acknowledged`);

  // Settled twice: the runtime's own transition log, and first sights against the end.
  const { settles, phantoms } = settlementsInLog(logLines, incarnations);
  const twice = new Set<Key>();
  for (const [key, n] of settles) {
    if (n > 1) {
      twice.add(key);
      problems.push(`${key}: the log says settled ${n} times`);
    }
  }
  for (const v of ledger.violations) {
    const key = v.split(":")[0]!;
    if (v.includes("settled twice")) twice.add(key);
  }
  problems.push(...ledger.violations);
  return { enqueued: ledger.acked.size, settled, lost, settledTwice: twice.size, phantomSettles: phantoms, outcomes, problems };
}

interface TransitionLine {
  /** The incarnation of the runtime that printed it. */
  incarnation: number;
  lane: string;
  jobId: string;
  from: string;
  to: string;
  generation: number;
}

/**
 * Settlements per job as the transition log tells them. A line printed for a write that a kill then
 * lost is retracted by the log itself: a later incarnation of the runtime (`incarnations`, one a line)
 * shows the same attempt (generation) still running, which no settled job can be. Such
 * phantoms are counted apart; every other settled line is a settlement, and a job with two of them
 * was settled twice.
 */
export function settlementsInLog(lines: readonly string[], incarnations: readonly number[]): { settles: Map<Key, number>; phantoms: number } {
  const byJob = new Map<Key, TransitionLine[]>();
  for (const [at, line] of lines.entries()) {
    if (!line.includes('"job.transition"')) continue;
    const event = { ...(JSON.parse(line.slice(line.indexOf("{"))) as TransitionLine), incarnation: incarnations[at]! };
    const key = keyOf(event.lane, event.jobId);
    byJob.set(key, [...(byJob.get(key) ?? []), event]);
  }
  const settles = new Map<Key, number>();
  let phantoms = 0;
  for (const [key, events] of byJob) {
    for (const [i, event] of events.entries()) {
      if (event.to !== "settled") continue;
      const retracted = events
        .slice(i + 1)
        .some((later) => later.from === "running" && later.generation === event.generation && later.incarnation > event.incarnation);
      if (retracted) phantoms++;
      else settles.set(key, (settles.get(key) ?? 0) + 1);
    }
  }
  return { settles, phantoms };
}

/** Whether a settled job's outcome and result are ones its kind, its spec and the clients allow. */
function judge(ledger: Ledger, key: Key, job: any): string | null {
  const planned = ledger.planned.get(key)!;
  const spec = planned.body;
  if (job.kind !== spec.kind || !isDeepStrictEqual(job.payload, spec.payload)) return `spec changed: ${job.kind} ${JSON.stringify(job.payload)}`;
  if (job.outcome === "interrupted") return null; // a recovery budget spent across kills: legal
  if (job.outcome === "cancelled") return ledger.cancelSent.has(key) ? null : "cancelled, but nobody cancelled it";
  switch (spec.kind) {
    case "demo.echo":
      return job.outcome === "completed" && isDeepStrictEqual(job.result, spec.payload) ? null : `echo ended ${job.outcome} ${JSON.stringify(job.result)}`;
    case "demo.sleep":
      return job.outcome === "completed" && isDeepStrictEqual(job.result, { slept: spec.payload.ms }) ? null : `sleep ended ${job.outcome}`;
    case "demo.steps":
      return job.outcome === "completed" ? judgeSteps(ledger, key, job) : `steps ended ${job.outcome}`;
    case "demo.fail": {
      const maxAttempts = (spec.maxAttempts as number | undefined) ?? 3;
      const failTimes = spec.payload.failTimes as number;
      if (failTimes >= maxAttempts) return job.outcome === "failed" && job.attempts === maxAttempts ? null : `fail ×${failTimes} of ${maxAttempts} ended ${job.outcome}`;
      return job.outcome === "completed" && isDeepStrictEqual(job.result, { attempts: failTimes + 1 }) ? null : `fail ×${failTimes} of ${maxAttempts} ended ${job.outcome} ${JSON.stringify(job.result)}`;
    }
    case PULL_KIND: {
      if (job.outcome === "failed") return ledger.failSent.has(key) ? null : "failed, but no consumer failed it";
      if (job.outcome !== "completed") return `ended ${job.outcome}`;
      const result = job.result as PullResult;
      const token = ledger.byFingerprint.get(result?.fingerprint);
      const info = token === undefined ? undefined : ledger.tokens.get(token);
      if (!token || !info || info.key !== key) return `completed with a result no lease of it wrote: ${JSON.stringify(result)}`;
      if (result.generation !== job.generation || info.generation !== job.generation) {
        return `result of generation ${result.generation} (token of ${info.generation}) on a job of generation ${job.generation}`;
      }
      if (!ledger.heldAt(token, job.settledAt)) return `completed at ${job.settledAt} by a token that no longer held the lease`;
      const highest = Math.max(...(ledger.claimGenerations.get(key) ?? [0]));
      return highest > job.generation ? `claimed at generation ${highest} after it completed at ${job.generation}` : null;
    }
    default:
      return `unknown kind ${spec.kind}`;
  }
}

/** Log lines that hold a secret: the bearer token, or any lease token a consumer was handed. */
export function secretsInLog(lines: readonly string[], bearer: string, leaseTokens: ReadonlySet<string>): string[] {
  const leaks: string[] = [];
  const lengths = new Set([...leaseTokens].map((t) => t.length));
  for (const line of lines) {
    if (line.includes(bearer)) leaks.push(`bearer token in: ${line.slice(0, 200)}`);
    for (const word of line.match(/[A-Za-z0-9_-]+/g) ?? []) {
      for (const length of lengths) {
        for (let i = 0; i + length <= word.length; i++) {
          if (leaseTokens.has(word.slice(i, i + length))) leaks.push(`lease token in: ${line.slice(0, 200)}`);
        }
      }
    }
  }
  return leaks;
}

/**
 * Whether the rate-limited lane ever started more jobs than its bucket allows over a span, from the
 * start lines of the log (their `at`: the claim's own instant). A start line printed for a claim that
 * a kill then lost is retracted by the log itself, as settlementsInLog retracts settlements: a later
 * incarnation shows the job at an earlier generation (it was never claimed that time: cancelled,
 * say, while still queued) or claims that same generation again. Its token was lost with it.
 */
export function bucketOverflows(
  lines: readonly string[],
  incarnations: readonly number[],
  lane: string,
  rate: { limit: number; periodMs: number },
): { starts: number; overflows: string[]; retracted: number } {
  const byJob = new Map<string, (TransitionLine & { at: number })[]>();
  for (const [i, line] of lines.entries()) {
    if (!line.includes('"job.transition"') || !line.includes(`"lane":"${lane}"`)) continue;
    const event = { ...(JSON.parse(line.slice(line.indexOf("{"))) as TransitionLine & { at: number }), incarnation: incarnations[i] ?? 0 };
    byJob.set(event.jobId, [...(byJob.get(event.jobId) ?? []), event]);
  }
  const starts = new Map<string, { at: number; incarnation: number }>();
  let retracted = 0;
  for (const events of byJob.values()) {
    for (const [i, event] of events.entries()) {
      if (event.from !== "queued" || event.to !== "running") continue;
      const lost = events
        .slice(i + 1)
        .some((later) => later.incarnation > event.incarnation && (later.generation < event.generation || (later.from === "queued" && later.to === "running" && later.generation === event.generation)));
      if (lost) retracted++;
      else starts.set(`${event.jobId}#${event.generation}`, { at: event.at, incarnation: event.incarnation });
    }
  }
  const sorted = [...starts.entries()].sort((a, b) => a[1].at - b[1].at);
  const times = sorted.map(([, s]) => s.at);
  const overflows: string[] = [];
  for (let i = 0; i < times.length && overflows.length < 10; i++) {
    for (let j = i; j < times.length; j++) {
      const allowed = rate.limit + Math.floor((rate.limit * (times[j]! - times[i]!)) / rate.periodMs);
      if (j - i + 1 > allowed) {
        // The span's starts (job#generation@incarnation+ms from its first), so a failure can be read.
        const span = sorted.slice(i, j + 1).map(([key, s]) => `${key}@${s.incarnation}+${s.at - times[i]!}`).join(" ");
        overflows.push(`${j - i + 1} starts of ${lane} in ${times[j]! - times[i]!} ms (the bucket allows ${allowed}) from ${times[i]}: ${span}`);
        break;
      }
    }
  }
  return { starts: times.length, overflows, retracted };
}
