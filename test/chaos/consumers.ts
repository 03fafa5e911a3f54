/**
 * Pull consumers over HTTP: claim `chaos.pull` jobs and renew, complete, fail or release them, or stall
 * past the lease and then speak with the stale token. Every result names the attempt that wrote it
 * (generation and token fingerprint), so the verification can tell a fenced write from a stale one.
 * Also the canceller (cancels random jobs) and the watcher (the alarm and first sight of each settlement).
 */
import { fingerprint, keyOf, PULL_KIND, type Ledger, type PullResult } from "./ledger.js";
import { sleep, type Prng } from "./prng.js";
import type { Answer, ChaosRuntime } from "./runtime.js";
import { checkClaim, runSteps, stepNames, type StepHolder } from "./steps.js";

/** Refusals a lease holder may legitimately get (docs/api.md, the fence). */
const FENCE_CODES = new Set(["lease_expired", "lease_superseded", "job_cancelled", "job_settled"]);
/** Client-side slack for "sent after the lease ran out" (one machine, one clock; workerd's clock is coarse). */
const EXPIRY_SLACK_MS = 50;

export interface Shared {
  runtime: ChaosRuntime;
  ledger: Ledger;
  lanes: readonly string[];
  stopping: boolean;
  /** No kill is to come: nothing to stall across. */
  killsDone: boolean;
}

/** A job a consumer holds: the lease it writes through (steps.ts names its shape). */
type Held = StepHolder;

export async function consume(shared: Shared, name: string, rng: Prng): Promise<void> {
  const { runtime, ledger } = shared;
  while (!shared.stopping) {
    const lane = rng.pick(shared.lanes);
    const leaseMs = rng.int(1500, 4000);
    const sentAt = Date.now();
    const answer = await runtime.request("POST", `/v1/lanes/${lane}/claims`, { kinds: [PULL_KIND], max: rng.int(1, 5), leaseMs });
    if (answer.status === 0) continue; // a lease nobody holds: the alarm recovers it
    if (answer.status !== 200) {
      ledger.violation(`claim in ${lane} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      await sleep(100);
      continue;
    }
    const jobs = answer.body.jobs as {
      id: string;
      kind: string;
      payload: { steps?: number } | null;
      lease: { token: string; generation: number; expiresAt: number };
      checkpoints: Record<string, unknown>;
    }[];
    if (jobs.length === 0) {
      await sleep(rng.int(20, 150));
      continue;
    }
    for (const job of jobs) {
      if (job.kind !== PULL_KIND) ledger.violation(`${keyOf(lane, job.id)}: a claim for ${PULL_KIND} answered a ${job.kind} job`);
      ledger.claimed(lane, job);
      checkClaim(ledger, keyOf(lane, job.id), sentAt, job.checkpoints);
    }
    await Promise.all(
      jobs.map((job) =>
        work(
          shared,
          name,
          rng.fork(`${name}:${lane}/${job.id}@${job.lease.generation}`),
          leaseMs,
          { lane, id: job.id, key: keyOf(lane, job.id), generation: job.lease.generation, token: job.lease.token, expiresAt: job.lease.expiresAt },
          { names: stepNames(job.payload), recorded: job.checkpoints ?? {} },
        ),
      ),
    );
  }
}

async function work(shared: Shared, consumer: string, rng: Prng, leaseMs: number, held: Held, steps: { names: string[]; recorded: Record<string, unknown> }): Promise<void> {
  const { ledger } = shared;
  await sleep(rng.int(0, 40));
  // The job's steps first, those its earlier attempts did not record; a refused record ends the attempt.
  if (!(await runSteps(shared.runtime, ledger, held, steps.names, steps.recorded))) return;
  if (rng.chance(0.2)) {
    const old = held.token;
    const renewed = await write(shared, held, "renew", { token: old, leaseMs });
    if (renewed.status !== 200) return; // lost or refused: the job is someone else's business now
    const lease = renewed.body.lease as { token: string; generation: number; expiresAt: number };
    ledger.renewed(held.key, old, lease, leaseMs);
    held = { ...held, token: lease.token, expiresAt: lease.expiresAt };
    if (rng.chance(0.3)) {
      // The token a renewal replaced must never write again.
      const stale = await write(shared, { ...held, token: old }, "complete", { token: old, result: resultOf(consumer, held.generation, old) });
      ledger.refused(stale);
    }
  }
  const roll = rng.next();
  if (roll < 0.06) {
    // Stall just past the lease (racing its recovery by the alarm), or across the next kill (racing
    // the new incarnation's start), then speak with the lapsed token: never a success.
    ledger.tally.stalls++;
    if (roll < 0.03 || shared.killsDone) await sleep(Math.max(0, held.expiresAt - Date.now()) + rng.int(0, 40));
    else await Promise.race([shared.runtime.restarted(), sleep(8_000)]);
    const stale = await write(shared, held, "complete", { token: held.token, result: resultOf(consumer, held.generation, held.token) });
    ledger.refused(stale);
    return;
  }
  if (roll < 0.15) {
    ledger.failSent.add(held.key);
    ledger.tally.fails++;
    await write(shared, held, "fail", { token: held.token, error: "chaos: transient", retryAfterMs: rng.int(0, 200) });
    return;
  }
  if (roll < 0.2) {
    ledger.failSent.add(held.key);
    ledger.tally.fails++;
    await write(shared, held, "fail", { token: held.token, error: "chaos: fatal", retry: false });
    return;
  }
  if (roll < 0.28) {
    ledger.tally.releases++;
    await write(shared, held, "release", { token: held.token });
    return;
  }
  ledger.tally.completes++;
  const body = { token: held.token, result: resultOf(consumer, held.generation, held.token) };
  const first = await write(shared, held, "complete", body);
  // Cut off by a kill, or repeated on purpose: the same token completing again is idempotent.
  if (first.status === 0 || (first.status === 200 && rng.chance(0.1))) await write(shared, held, "complete", body);
}

function resultOf(consumer: string, generation: number, token: string): PullResult {
  return { consumer, generation, fingerprint: fingerprint(token) };
}

/**
 * One fenced write, checked on the spot: a success must come from the lease holder (the job it
 * answers was written by this token, while it held the lease); a refusal must be a fence code.
 */
async function write(shared: Shared, held: Held, op: "renew" | "complete" | "fail" | "release", body: unknown): Promise<Answer> {
  const { runtime, ledger } = shared;
  const sentAt = Date.now();
  const answer = await runtime.request("POST", `/v1/lanes/${held.lane}/jobs/${held.id}/${op}`, body);
  if (answer.status === 0) return answer;
  const what = `${held.key}: ${op} with a token of generation ${held.generation}`;
  if (answer.status === 200) {
    if (op === "renew") {
      if (sentAt > held.expiresAt + EXPIRY_SLACK_MS) ledger.violation(`${what} renewed a lease after it ran out`);
      if (!ledger.heldAt(held.token, answer.body.lease.expiresAt - ((body as { leaseMs: number }).leaseMs ?? 0))) {
        ledger.violation(`${what} renewed a lease it did not hold`);
      }
      return answer;
    }
    const job = answer.body.job as { generation: number; updatedAt: number; settledAt: number | null; result: unknown };
    if (job.generation !== held.generation) ledger.violation(`${what} succeeded on generation ${job.generation}`);
    if (op === "complete") {
      const result = job.result as PullResult | null;
      if (result?.fingerprint !== fingerprint(held.token)) ledger.violation(`${what} answered 200 for a result another attempt wrote`);
      if (job.settledAt === null || !ledger.heldAt(held.token, job.settledAt)) ledger.violation(`${what} was recorded without the lease`);
    } else if (!ledger.heldAt(held.token, job.updatedAt)) {
      ledger.violation(`${what} was recorded without the lease`);
    }
    return answer;
  }
  if (answer.status === 409 && FENCE_CODES.has(answer.body?.error?.code)) return answer;
  ledger.violation(`${what} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  return answer;
}

/** Cancels random recently acknowledged jobs now and then: 200 cancelled, 202 cancelling or 409 job_settled. */
export async function cancelRandomly(shared: Shared, rng: Prng, everyMs: number): Promise<void> {
  const { runtime, ledger } = shared;
  while (!shared.stopping) {
    await sleep(rng.int(everyMs / 2, (everyMs * 3) / 2));
    // The latest acknowledged jobs: most of them are still queued or running.
    const acked = [...ledger.acked].slice(-100);
    if (acked.length === 0) continue;
    const key = rng.pick(acked);
    const { lane, id } = ledger.planned.get(key)!;
    ledger.cancelSent.add(key);
    ledger.tally.cancels++;
    const answer = await runtime.request("POST", `/v1/lanes/${lane}/jobs/${id}/cancel`, { reason: "chaos" });
    const code = answer.body?.error?.code;
    if (answer.status === 0 || answer.status === 200 || answer.status === 202 || (answer.status === 409 && code === "job_settled")) continue;
    ledger.violation(`${key}: cancel answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  }
}

/**
 * Watches every lane: a lane with a running job must have its alarm set (a lease expires), and a
 * job once seen settled must never change again.
 */
export async function watch(shared: Shared, everyMs: number): Promise<void> {
  while (!shared.stopping) {
    for (const lane of shared.lanes) {
      const info = await shared.runtime.request("GET", `/v1/lanes/${lane}`);
      if (info.status === 200 && info.body.counts.running > 0 && info.body.nextWakeAt === null) {
        shared.ledger.violation(`${lane}: ${info.body.counts.running} running jobs and no alarm`);
      }
      const settled = await listAll(shared.runtime, lane, "state=settled");
      if (settled) for (const job of settled) noteSettled(shared.ledger, lane, job);
    }
    await sleep(everyMs);
  }
}

export function noteSettled(ledger: Ledger, lane: string, job: { id: string; outcome: string; settledAt: number; generation: number; result: unknown }): void {
  const key = keyOf(lane, job.id);
  const seen = JSON.stringify([job.outcome, job.settledAt, job.generation, job.result]);
  const first = ledger.firstSettled.get(key);
  if (first === undefined) ledger.firstSettled.set(key, seen);
  else if (first !== seen) ledger.violation(`${key}: settled twice: first ${first}, now ${seen}`);
}

/** Every job of a lane (matching `query`), page by page; null if a kill cut the listing off. */
export async function listAll(runtime: ChaosRuntime, lane: string, query = ""): Promise<any[] | null> {
  const jobs: any[] = [];
  let cursor: string | null = null;
  do {
    const params = [query, "limit=500", cursor === null ? "" : `cursor=${encodeURIComponent(cursor)}`].filter(Boolean).join("&");
    const page = await runtime.request("GET", `/v1/lanes/${lane}/jobs?${params}`);
    if (page.status !== 200) return null;
    jobs.push(...page.body.jobs);
    cursor = page.body.cursor;
  } while (cursor !== null);
  return jobs;
}
