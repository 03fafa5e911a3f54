/**
 * The waitpoints' chaos run (`npm run test:chaos`): 500 jobs wait on 320 waitpoints over three lanes
 * (one of 4 shards) while the runtime is SIGKILLed at random moments and restarted over the same
 * state. Waitpoints are completed, completed twice, timed out, raced against their timeout, and
 * completed before anything waits on them (waitpoints-plan.ts). Half the jobs wait through a
 * `dependsOn` item at their enqueue (demo.deps, often on a waitpoint of another lane), half through
 * the fenced wait route from a pull consumer. At rest:
 * - lost: an acknowledged enqueue missing; stuck: a job not settled, or a waitpoint still pending,
 *   by the deadline;
 * - twice: a job released from `blocked` more than once (the transition log), told of its waitpoint
 *   more or less than once, or waiting again after it was told;
 * - every job resumed with its waitpoint's first settlement (completed with the first completion's
 *   result, or timedOut); every completion the lane accepted is that first one, and every refusal
 *   shows it; a job with policy fail whose waitpoint timed out failed unrun.
 *
 *   CHAOS_SEED=<seed> SWITCHYARD_CHAOS=1 npx vitest run --project chaos test/chaos/waitpoints-chaos.test.ts
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { expect, it } from "vitest";
import { createPrng, sleep, type Prng } from "./prng.js";
import { limiter } from "./limiter.js";
import { ChaosRuntime, type Answer } from "./runtime.js";
import { completionResult, plan, WAIT_KIND, type PlannedJob, type PlannedWaitpoint } from "./waitpoints-plan.js";

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const LANES = ["wpc-a", "wpc-b", "wpc-s"];
const SHARDED = "wpc-s";
const WAITPOINTS = 320;
const JOBS = 500;
const KILLS = 3;
/** Every request of the workload is sent within this long of the start. */
const SPREAD_MS = 16_000;
const DRAIN_DEADLINE_MS = 30_000;
const CONSUMERS = 3;
const LEASE_MS = 8_000;
/** Requests in flight at once (the machine is small and shared). */
const IN_FLIGHT = 16;

type Key = string;
const keyOf = (lane: string, id: string): Key => `${lane}/${id}`;
type Settlement = { state: string; result: unknown; settledAt: number | null };
const settlementOf = (w: any): Settlement => ({ state: w?.state, result: w?.result ?? null, settledAt: w?.settledAt ?? null });

/** What the clients saw. */
class Seen {
  readonly acked = new Set<Key>();
  /** Waitpoints a create or a completion was answered for (they exist). */
  readonly exists = new Map<Key, Promise<void>>();
  private readonly existed = new Map<Key, () => void>();
  /** Completions the lane accepted (200, 201), per waitpoint: their results. */
  readonly accepted = new Map<Key, unknown[]>();
  /** The waitpoint as a refused completion or a create of a settled one showed it. */
  readonly shown = new Map<Key, Settlement[]>();
  /** Per route job, each claim the consumers got: its generation and its entries for the waitpoint. */
  readonly claims = new Map<Key, { generation: number; entries: any[] }[]>();
  readonly waits = new Map<Key, number>();
  readonly problems: string[] = [];
  tally = { claims: 0, waits: 0, waitRefused: 0, completes: 0, completeRefused: 0 };

  constructor(waitpoints: readonly PlannedWaitpoint[]) {
    for (const w of waitpoints) {
      const key = keyOf(w.lane, w.id);
      this.exists.set(key, new Promise((resolve) => this.existed.set(key, resolve)));
    }
  }
  existsNow(key: Key): void {
    this.existed.get(key)?.();
  }
  problem(message: string): void {
    if (this.problems.length < 5_000) this.problems.push(message);
  }
}

it(`every job resumes exactly once with its waitpoint's first settlement, through ${KILLS} hard kills`, async () => {
  console.log(`waitpoints-chaos: seed=${SEED} (replay: CHAOS_SEED=${SEED} SWITCHYARD_CHAOS=1 npx vitest run --project chaos test/chaos/waitpoints-chaos.test.ts)`);
  const rng = createPrng(SEED);
  const stateDir = mkdtempSync(join(tmpdir(), "switchyard-waitpoints-chaos-"));
  const logLines: string[] = [];
  let passed = false;
  const runtime = new ChaosRuntime(stateDir, `chaos-${randomBytes(16).toString("hex")}`, (line) => logLines.push(line));
  try {
    await runtime.start();
    for (const lane of LANES) {
      const answer = await runtime.settle("PATCH", `/v1/lanes/${lane}`, { concurrency: 50, ...(lane === SHARDED ? { shards: 4 } : {}) });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
    const { waitpoints, jobs } = plan(rng.fork("plan"), LANES, { waitpoints: WAITPOINTS, jobs: JOBS }, SPREAD_MS);
    const seen = new Seen(waitpoints);
    const limit = limiter(IN_FLIGHT);
    const start = Date.now();
    const at = async (offset: number, work: () => Promise<void>) => {
      await sleep(Math.max(0, start + offset - Date.now()));
      await limit(work);
    };

    const shared = { stopping: false };
    const consumers = Array.from({ length: CONSUMERS }, (_, i) => consume(runtime, seen, shared, rng.fork(`consumer-${i}`)));
    /** How long each kill kept the runtime down (ms): the run's length depends on it. */
    const down: number[] = [];
    const killer = (async () => {
      const kills = rng.fork("kills");
      for (let k = 0; k < KILLS; k++) {
        await sleep(kills.int(1_000, SPREAD_MS / (KILLS + 1)));
        const killedAt = Date.now();
        await runtime.killAndRestart();
        down.push(Date.now() - killedAt);
      }
    })();
    const work = [
      ...waitpoints.flatMap((w) => [
        ...(w.createAt === null ? [] : [at(w.createAt, () => create(runtime, seen, w))]),
        ...w.completeAt.map((offset, i) => at(offset, () => complete(runtime, seen, w, i + 1))),
      ]),
      ...jobs.map(async (job) => {
        // A dependsOn item names a waitpoint that must exist: its create (or completion) answered first.
        if (job.via === "deps") await seen.exists.get(keyOf(job.waitpoint.lane, job.waitpoint.id));
        await at(job.enqueueAt, () => enqueue(runtime, seen, job));
      }),
    ];
    await Promise.all(work);
    await killer;
    const lastKill = Date.now();
    console.log(`waitpoints-chaos: ${WAITPOINTS} waitpoints and ${JOBS} jobs sent in ${lastKill - start} ms, ${runtime.kills} kills (down ${down.join(", ")} ms), draining`);

    let open = -1;
    let pending = -1;
    let perLane = "";
    while (Date.now() - lastKill < DRAIN_DEADLINE_MS) {
      open = 0;
      pending = 0;
      perLane = "";
      for (const lane of LANES) {
        const info = (await runtime.settle("GET", `/v1/lanes/${lane}`)).body;
        const c = info.counts;
        open += c.blocked + c.queued + c.running + c.completing;
        pending += info.waitpoints?.pending ?? 0;
        perLane += ` ${lane}: ${JSON.stringify({ ...c, waitpoints: info.waitpoints })}`;
      }
      if (open === 0 && pending === 0) break;
      await sleep(500);
    }
    shared.stopping = true;
    await Promise.all(consumers);

    const { lost, stuck, twice, reruns } = await judge(runtime, seen, waitpoints, jobs, logLines);
    // Problems by their kind (the message without its names and numbers), each kind with two examples.
    const kinds = new Map<string, string[]>();
    for (const problem of seen.problems) {
      const kind = problem.replace(/[\w.-]+\/[\w.-]+/g, "…").replace(/\{.*\}/g, "{…}").replace(/\d+/g, "n");
      kinds.set(kind, [...(kinds.get(kind) ?? []), problem]);
    }
    for (const [kind, all] of kinds) {
      console.log(`waitpoints-chaos: ${all.length} × ${kind}`);
      for (const problem of all.slice(0, 2)) console.log(`waitpoints-chaos:   PROBLEM ${problem}`);
    }
    console.log(
      `waitpoints-chaos: jobs=${JOBS} waitpoints=${WAITPOINTS} lost=${lost} twice=${twice} stuck=${stuck} reruns=${reruns} kills=${runtime.kills} ` +
        `open=${open} pending=${pending} (${perLane.trim()}) tally=${JSON.stringify(seen.tally)} took=${Date.now() - start}ms seed=${SEED}`,
    );
    expect(runtime.kills).toBe(KILLS);
    expect({ lost, twice, stuck }).toEqual({ lost: 0, twice: 0, stuck: 0 });
    expect(seen.problems).toEqual([]);
    passed = true;
  } finally {
    await runtime.stop();
    if (passed) rmSync(stateDir, { recursive: true, force: true });
    else console.log(`waitpoints-chaos: the runtime's state is kept in ${stateDir}`);
  }
});

async function create(runtime: ChaosRuntime, seen: Seen, w: PlannedWaitpoint): Promise<void> {
  const key = keyOf(w.lane, w.id);
  // Its waiters go ahead even when the create was refused: their refusals then say so too.
  try {
    await tryCreate(runtime, seen, w, key);
  } finally {
    seen.existsNow(key);
  }
}

async function tryCreate(runtime: ChaosRuntime, seen: Seen, w: PlannedWaitpoint, key: Key): Promise<void> {
  const answer = await runtime.settle("POST", `/v1/lanes/${w.lane}/waitpoints`, { id: w.id, ...(w.timeoutMs === null ? {} : { timeoutMs: w.timeoutMs }) });
  if (answer.status !== 201 && answer.status !== 200) return seen.problem(`${key}: create answered ${answer.status} ${JSON.stringify(answer.body)}`);
  if (answer.body.waitpoint?.id !== w.id) return seen.problem(`${key}: create answered another waitpoint ${JSON.stringify(answer.body)}`);
  if (answer.body.waitpoint.state !== "pending") note(seen.shown, key, settlementOf(answer.body.waitpoint));
}

async function complete(runtime: ChaosRuntime, seen: Seen, w: PlannedWaitpoint, n: number): Promise<void> {
  const key = keyOf(w.lane, w.id);
  try {
    await tryComplete(runtime, seen, w, n, key);
  } finally {
    seen.existsNow(key);
  }
}

async function tryComplete(runtime: ChaosRuntime, seen: Seen, w: PlannedWaitpoint, n: number, key: Key): Promise<void> {
  const result = completionResult(w, n);
  const answer = await runtime.settle("POST", `/v1/lanes/${w.lane}/waitpoints/${w.id}/complete`, { result });
  seen.tally.completes++;
  if (answer.status === 200 || answer.status === 201) {
    const got = answer.body.waitpoint;
    if (got?.state !== "completed" || !isDeepStrictEqual(got.result, result)) seen.problem(`${key}: completion ${n} accepted but answered ${JSON.stringify(got)}`);
    note(seen.accepted, key, result);
  } else if (answer.status === 409 && answer.body?.error?.code === "waitpoint_settled") {
    seen.tally.completeRefused++;
    note(seen.shown, key, settlementOf(answer.body.error.details?.waitpoint));
  } else seen.problem(`${key}: completion ${n} answered ${answer.status} ${JSON.stringify(answer.body)}`);
}

async function enqueue(runtime: ChaosRuntime, seen: Seen, job: PlannedJob): Promise<void> {
  const key = keyOf(job.lane, job.id);
  const w = job.waitpoint;
  const body =
    job.via === "deps"
      ? { id: job.id, kind: "demo.deps", payload: { waitpoint: w.id }, dependsOn: [{ waitpoint: w.id, ...(w.lane === job.lane ? {} : { lane: w.lane }) }], dependencyFailure: job.policy }
      : { id: job.id, kind: WAIT_KIND, payload: { waitpoint: w.id, ...(w.timeoutMs === null ? {} : { timeoutMs: w.timeoutMs }) }, maxAttempts: 5 };
  const answer = await runtime.settle("POST", `/v1/lanes/${job.lane}/jobs`, body);
  if (answer.status !== 201 && answer.status !== 200) return seen.problem(`${key}: enqueue answered ${answer.status} ${JSON.stringify(answer.body)}`);
  seen.acked.add(key);
}

/** A request of a lease holder: resent after a kill with the same token (the fence answers a repeat). */
async function fenced(runtime: ChaosRuntime, path: string, body: unknown): Promise<Answer> {
  return runtime.settle("POST", path, body);
}

const FENCE = new Set(["lease_superseded", "lease_expired", "job_settled", "job_cancelled"]);

/** A pull consumer: waits on the job's waitpoint the first time, completes with what it was told once told. */
async function consume(runtime: ChaosRuntime, seen: Seen, shared: { stopping: boolean }, rng: Prng): Promise<void> {
  while (!shared.stopping) {
    const lane = rng.pick(LANES);
    const answer = await runtime.request("POST", `/v1/lanes/${lane}/claims`, { kinds: [WAIT_KIND], max: 10, leaseMs: LEASE_MS, waitMs: 300 });
    if (answer.status !== 200) {
      if (answer.status !== 0) seen.problem(`${lane}: claim answered ${answer.status} ${JSON.stringify(answer.body)}`);
      continue;
    }
    for (const job of answer.body.jobs as any[]) {
      seen.tally.claims++;
      const key = keyOf(lane, job.id);
      const waitpoint = job.payload.waitpoint as string;
      const entries = ((job.dependencies ?? []) as any[]).filter((d) => d.waitpoint !== undefined);
      const claims = seen.claims.get(key) ?? [];
      claims.push({ generation: job.lease.generation, entries });
      seen.claims.set(key, claims);
      const path = `/v1/lanes/${lane}/jobs/${job.id}`;
      if (entries.length === 0) {
        // Told before, and now not: the job would wait a second time.
        if (claims.some((c) => c.entries.length > 0)) seen.problem(`${key}: claimed at generation ${job.lease.generation} without its waitpoint's entry after it was told`);
        const waited = await fenced(runtime, `${path}/wait`, { token: job.lease.token, waitpoint, ...(job.payload.timeoutMs ? { timeoutMs: job.payload.timeoutMs } : {}) });
        seen.tally.waits++;
        if (waited.status === 200) seen.waits.set(key, (seen.waits.get(key) ?? 0) + 1);
        else if (waited.status === 409 && FENCE.has(waited.body?.error?.code)) seen.tally.waitRefused++;
        else seen.problem(`${key}: wait answered ${waited.status} ${JSON.stringify(waited.body)}`);
        continue;
      }
      const done = await fenced(runtime, `${path}/complete`, { token: job.lease.token, result: { dependencies: job.dependencies, generation: job.lease.generation } });
      if (done.status !== 200 && !(done.status === 409 && FENCE.has(done.body?.error?.code))) seen.problem(`${key}: complete answered ${done.status} ${JSON.stringify(done.body)}`);
    }
  }
}

function note<T>(map: Map<Key, T[]>, key: Key, value: T): void {
  map.set(key, [...(map.get(key) ?? []), value]);
}

/** Releases from `blocked` per job, in the runtime's transition lines (each printed once its write is durable). */
function releases(logLines: readonly string[]): Map<Key, number> {
  const out = new Map<Key, number>();
  for (const line of logLines) {
    if (!line.includes('"job.transition"') || !line.includes('"from":"blocked"')) continue;
    const event = JSON.parse(line.slice(line.indexOf("{"))) as { lane: string; jobId: string };
    const key = keyOf(event.lane.split("#")[0]!, event.jobId);
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

async function judge(runtime: ChaosRuntime, seen: Seen, waitpoints: readonly PlannedWaitpoint[], jobs: readonly PlannedJob[], logLines: readonly string[]) {
  let lost = 0;
  let stuck = 0;
  let twice = 0;
  let reruns = 0;
  // Each waitpoint's first settlement, as it stands at the end; every answer on the way must agree.
  const first = new Map<Key, Settlement>();
  for (const w of waitpoints) {
    const key = keyOf(w.lane, w.id);
    const answer = await runtime.settle("GET", `/v1/lanes/${w.lane}/waitpoints/${w.id}`);
    if (answer.status !== 200) {
      lost++;
      seen.problem(`${key}: the waitpoint answers ${answer.status} ${JSON.stringify(answer.body)}`);
      continue;
    }
    const final = settlementOf(answer.body.waitpoint);
    first.set(key, final);
    if (final.state === "pending") {
      stuck++;
      seen.problem(`${key} (${w.fate}): still pending, timeoutAt ${answer.body.waitpoint.timeoutAt === null ? null : answer.body.waitpoint.timeoutAt - Date.now()} ms from now`);
      continue;
    }
    const accepted = seen.accepted.get(key) ?? [];
    const distinct = accepted.filter((r, i) => accepted.findIndex((o) => isDeepStrictEqual(o, r)) === i);
    if (distinct.length > 1) {
      twice++;
      seen.problem(`${key} (${w.fate}): ${distinct.length} different completions accepted: ${JSON.stringify(distinct)}`);
    }
    if (distinct.length === 1 && (final.state !== "completed" || !isDeepStrictEqual(final.result, distinct[0]))) {
      seen.problem(`${key} (${w.fate}): completion ${JSON.stringify(distinct[0])} accepted, but the waitpoint is ${JSON.stringify(final)}`);
    }
    for (const shown of seen.shown.get(key) ?? []) {
      if (!isDeepStrictEqual(shown, final)) seen.problem(`${key} (${w.fate}): a refusal showed ${JSON.stringify(shown)}, the waitpoint ends ${JSON.stringify(final)}`);
    }
    if (w.fate === "timeout" && final.state !== "timedOut") seen.problem(`${key}: never completed, yet ${JSON.stringify(final)}`);
    if ((w.fate === "twice" || w.fate === "early" || (w.fate === "complete" && w.timeoutMs === null)) && final.state !== "completed") {
      seen.problem(`${key} (${w.fate}): completed without a timeout, yet ${JSON.stringify(final)}`);
    }
    // An accepted completion's answer may be lost to a kill (its repeat is then refused): the result still is one that was sent.
    const sent = w.completeAt.map((_, n) => completionResult(w, n + 1));
    if (final.state === "completed" && !sent.some((r) => isDeepStrictEqual(r, final.result))) seen.problem(`${key} (${w.fate}): completed with ${JSON.stringify(final.result)}, which no completion sent`);
  }

  // The lane's kept count of pending waitpoints is its rows'.
  for (const lane of LANES) {
    const counted = (await runtime.settle("GET", `/v1/lanes/${lane}`)).body.waitpoints?.pending;
    const rows = waitpoints.filter((w) => w.lane === lane && first.get(keyOf(w.lane, w.id))?.state === "pending").length;
    if (counted !== rows) seen.problem(`${lane}: waitpoints.pending is ${counted}, but ${rows} of its waitpoints are pending`);
  }

  const released = releases(logLines);
  for (const job of jobs) {
    const key = keyOf(job.lane, job.id);
    const w = job.waitpoint;
    const wKey = keyOf(w.lane, w.id);
    const tag = `${key} (${job.via}, ${job.policy}, on ${wKey} ${w.fate})`;
    if (!seen.acked.has(key)) {
      seen.problem(`${tag}: never acknowledged`);
      continue;
    }
    const answer = await runtime.settle("GET", `/v1/lanes/${job.lane}/jobs/${job.id}`);
    if (answer.status !== 200) {
      lost++;
      seen.problem(`${tag}: acknowledged, then ${answer.status} ${JSON.stringify(answer.body)}`);
      continue;
    }
    const got = answer.body;
    if (got.state !== "settled") {
      stuck++;
      seen.problem(`${tag}: still ${got.state}, attempts ${got.attempts}, generation ${got.generation}, waitpoint ${JSON.stringify(first.get(wKey))}`);
      continue;
    }
    if ((released.get(key) ?? 0) > 1) {
      twice++;
      seen.problem(`${tag}: released from blocked ${released.get(key)} times`);
    }
    const final = first.get(wKey);
    if (!final) continue;
    const expected = { lane: w.lane, waitpoint: w.id, outcome: final.state, result: final.result };
    if (job.via === "deps" && job.policy === "fail" && final.state === "timedOut") {
      if (got.outcome !== "failed" || got.generation !== 0 || !String(got.error).includes(w.id) || !String(got.error).includes("timedOut")) {
        seen.problem(`${tag}: its waitpoint timed out, so it should have failed unrun naming it: ${got.outcome}, generation ${got.generation}, ${got.error}`);
      }
      continue;
    }
    if (got.outcome !== "completed") {
      seen.problem(`${tag}: should have run: ${got.outcome} ${got.error}`);
      continue;
    }
    if (got.generation > (job.via === "deps" ? 1 : 2)) reruns++;
    const told = ((got.result?.dependencies ?? []) as any[]).filter((d) => d.waitpoint !== undefined);
    const entries = told.map((d) => ({ lane: d.lane, waitpoint: d.waitpoint, outcome: d.outcome, result: d.result ?? null }));
    if (entries.length !== 1) {
      twice++;
      seen.problem(`${tag}: told of ${entries.length} waitpoints: ${JSON.stringify(entries)}`);
    } else if (!isDeepStrictEqual(entries[0], expected)) {
      seen.problem(`${tag}: told ${JSON.stringify(entries[0])}, the waitpoint's first settlement is ${JSON.stringify(expected)}`);
    }
    if (job.via === "route") {
      // Every claim that carried the entry carried the same one.
      for (const claim of seen.claims.get(key) ?? []) {
        for (const e of claim.entries) {
          const shownEntry = { lane: e.lane, waitpoint: e.waitpoint, outcome: e.outcome, result: e.result ?? null };
          if (!isDeepStrictEqual(shownEntry, expected)) seen.problem(`${tag}: generation ${claim.generation} was told ${JSON.stringify(shownEntry)}, first settlement ${JSON.stringify(expected)}`);
        }
      }
      if ((seen.waits.get(key) ?? 0) > 1) {
        twice++;
        seen.problem(`${tag}: waited ${seen.waits.get(key)} times`);
      }
    }
  }
  return { lost, stuck, twice, reruns };
}
