/**
 * Durable steps under chaos. Pull consumers run each `chaos.pull` job's steps over HTTP —
 * those its claim's checkpoints lack — and record each through the fence; a watcher notes the
 * checkpoints of running `demo.steps` jobs (in process) as they land. The verdict: no attempt claimed
 * after a step's checkpoint landed ran that step again, and every later attempt saw its recorded value.
 */
import { isDeepStrictEqual } from "node:util";
import { fingerprint, keyOf, type Key, type Ledger } from "./ledger.js";
import { sleep } from "./prng.js";
import type { Answer, ChaosRuntime } from "./runtime.js";

/** Refusals a lease holder may legitimately get (docs/api.md, the fence). */
const FENCE_CODES = new Set(["lease_expired", "lease_superseded", "job_cancelled", "job_settled"]);

export interface StepHolder {
  lane: string;
  id: string;
  key: Key;
  generation: number;
  token: string;
  expiresAt: number;
}

/** The steps a job's payload asks for: `s1`…`sn`. */
export function stepNames(payload: { steps?: unknown } | null): string[] {
  const n = typeof payload?.steps === "number" ? payload.steps : 0;
  return Array.from({ length: n }, (_, i) => `s${i + 1}`);
}

/** A checkpoint that landed (its write answered 200, or a reader saw it), as first known. */
function landed(ledger: Ledger, key: Key, name: string, record: { at: number; generation: number; value: unknown }): void {
  const steps = ledger.landed.get(key) ?? new Map();
  if (!steps.has(name)) steps.set(name, record);
  ledger.landed.set(key, steps);
}

/**
 * At a claim sent at `sentAt` (client time): every step whose checkpoint landed before must be among
 * the claimed job's checkpoints, with its recorded value — else its steps would run again.
 */
export function checkClaim(ledger: Ledger, key: Key, sentAt: number, checkpoints: Record<string, unknown> | undefined): void {
  if (checkpoints === undefined || typeof checkpoints !== "object") {
    ledger.violation(`${key}: a claimed job without checkpoints`);
    return;
  }
  for (const [name, record] of ledger.landed.get(key) ?? []) {
    if (record.at >= sentAt) continue;
    if (!(name in checkpoints)) ledger.violation(`${key}: claimed after step ${name} was recorded, without its checkpoint`);
    else if (!isDeepStrictEqual(checkpoints[name], record.value)) ledger.violation(`${key}: step ${name} recorded ${JSON.stringify(record.value)}, claimed as ${JSON.stringify(checkpoints[name])}`);
  }
}

/**
 * A pull consumer's steps: runs each step its claim's checkpoints lack and records it through the
 * fence. False when a write was refused or cut off: the attempt is over.
 */
export async function runSteps(runtime: ChaosRuntime, ledger: Ledger, held: StepHolder, names: string[], recorded: Record<string, unknown>): Promise<boolean> {
  for (const name of names) {
    if (name in recorded) {
      ledger.tally.stepsSkipped++;
      continue;
    }
    ledger.tally.stepsRun++;
    const value = { generation: held.generation, fingerprint: fingerprint(held.token) };
    const sentAt = Date.now();
    const answer = await runtime.request("PUT", `/v1/lanes/${held.lane}/jobs/${held.id}/checkpoints/${name}`, { token: held.token, value });
    if (!checkSave(ledger, held, name, sentAt, answer)) return false;
    landed(ledger, held.key, name, { at: Date.now(), generation: held.generation, value });
  }
  return true;
}

/** A checkpoint write's answer, checked on the spot like the other fenced writes; true when it landed. */
function checkSave(ledger: Ledger, held: StepHolder, name: string, sentAt: number, answer: Answer): boolean {
  const what = `${held.key}: checkpoint ${name} with a token of generation ${held.generation}`;
  if (answer.status === 0) return false;
  if (answer.status === 200) {
    const checkpoint = answer.body.checkpoint as { name: string; generation: number; updatedAt: number };
    if (checkpoint.name !== name || checkpoint.generation !== held.generation) ledger.violation(`${what} answered ${JSON.stringify(checkpoint)}`);
    if (sentAt > held.expiresAt + 50 || !ledger.heldAt(held.token, checkpoint.updatedAt)) ledger.violation(`${what} was recorded without the lease`);
    return true;
  }
  ledger.refused(answer);
  if (!(answer.status === 409 && FENCE_CODES.has(answer.body?.error?.code))) ledger.violation(`${what} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  return false;
}

/** Notes, every `everyMs`, the checkpoints of the running `demo.steps` jobs of every lane (they go when the job completes). */
export async function watchSteps(shared: { runtime: ChaosRuntime; ledger: Ledger; lanes: readonly string[]; stopping: boolean }, everyMs: number): Promise<void> {
  const { runtime, ledger } = shared;
  while (!shared.stopping) {
    for (const lane of shared.lanes) {
      const running = await runtime.request("GET", `/v1/lanes/${lane}/jobs?state=running&kind=demo.steps&limit=500`);
      if (running.status !== 200) continue;
      for (const job of running.body.jobs as { id: string }[]) {
        const answer = await runtime.request("GET", `/v1/lanes/${lane}/jobs/${job.id}/checkpoints`);
        if (answer.status !== 200) continue;
        for (const c of answer.body.checkpoints as { name: string; value: unknown; generation: number }[]) {
          landed(ledger, keyOf(lane, job.id), c.name, { at: Date.now(), generation: c.generation, value: c.value });
          ledger.tally.stepsSeen++;
        }
      }
    }
    await sleep(everyMs);
  }
}

/**
 * A completed `demo.steps` job: every step recorded, each with the value first seen recorded, and no
 * step seen recorded by an earlier generation run again by the last attempt.
 */
export function judgeSteps(ledger: Ledger, key: Key, job: { generation: number; attempts: number; payload: { steps?: unknown }; result: any }): string | null {
  const names = stepNames(job.payload);
  const { ran, values } = (job.result ?? {}) as { ran?: string[]; values?: Record<string, { attempt: number }> };
  if (!Array.isArray(ran) || !values || !isDeepStrictEqual(Object.keys(values).sort(), [...names].sort())) return `steps ended with ${JSON.stringify(job.result)}`;
  for (const name of ran) if (values[name]?.attempt !== job.attempts) return `step ${name} ran by the last attempt but recorded ${JSON.stringify(values[name])}`;
  for (const [name, record] of ledger.landed.get(key) ?? []) {
    if (!isDeepStrictEqual(values[name], record.value)) return `step ${name} was recorded ${JSON.stringify(record.value)}, the job saw ${JSON.stringify(values[name])}`;
    if (record.generation < job.generation && ran.includes(name)) return `step ${name}, recorded by generation ${record.generation}, ran again at ${job.generation}`;
  }
  return null;
}

/** Completed jobs must keep no checkpoint: asks for those of up to `max` of them that had steps. */
export async function leftovers(runtime: ChaosRuntime, jobs: { lane: string; id: string; kind: string; outcome: string; payload: any }[], max: number): Promise<string[]> {
  const problems: string[] = [];
  const stepped = jobs.filter((j) => j.outcome === "completed" && stepNames(j.payload).length > 0).slice(0, max);
  for (const job of stepped) {
    const answer = await runtime.settle("GET", `/v1/lanes/${job.lane}/jobs/${job.id}/checkpoints`);
    const left = answer.body?.checkpoints?.length ?? -1;
    if (answer.status !== 200 || left !== 0) problems.push(`${keyOf(job.lane, job.id)}: completed, and ${left} checkpoints outlived it (${answer.status})`);
  }
  return problems;
}
