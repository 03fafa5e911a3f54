/**
 * The dead letters' chaos run (`npm run test:chaos`): 600 jobs fail in two lanes (one of 2 shards)
 * whose dead-letter lane has 3 shards, while the runtime is SIGKILLed at random moments and restarted
 * over the same state. Two thirds fail in process (`demo.fail`, one attempt), the rest are pull jobs
 * failed a few hundred at a time by the lane's fail route, so that a kill finds copies in the outbox.
 * At rest:
 * - lost: an acknowledged job with no copy in the dead-letter lane, or not settled failed;
 * - twice: a copy the dead-letter lane holds of no acknowledged job, a copy that is not the job as
 *   it failed, or a source lane's `deadLettered` above the copies it made (a copy counted twice);
 * - stuck: copies still owed by the deadline.
 *
 *   CHAOS_SEED=<seed> SWITCHYARD_CHAOS=1 npx vitest run --project chaos test/chaos/deadletters-chaos.test.ts
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createPrng, sleep } from "./prng.js";
import { limiter } from "./limiter.js";
import { ChaosRuntime } from "./runtime.js";

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const SOURCES = ["dlc-a", "dlc-s"];
const SHARDED_SOURCE = "dlc-s";
const DEAD = "dlc-dead";
const JOBS = 600;
const KILLS = 3;
/** Every request of the workload is sent within this long of the start. */
const SPREAD_MS = 12_000;
const DRAIN_DEADLINE_MS = 60_000;
/** Requests in flight at once (the machine is small and shared). */
const IN_FLIGHT = 12;
/** A kind no executor of the dev worker runs: those jobs wait until the fail route fails them. */
const PULL_KIND = "email.send";

type Planned = { lane: string; id: string; inProcess: boolean; at: number };

it(`every failed job is copied into its dead-letter lane exactly once, through ${KILLS} hard kills`, async () => {
  console.log(`deadletters-chaos: seed=${SEED} (replay: CHAOS_SEED=${SEED} SWITCHYARD_CHAOS=1 npx vitest run --project chaos test/chaos/deadletters-chaos.test.ts)`);
  const rng = createPrng(SEED);
  const stateDir = mkdtempSync(join(tmpdir(), "switchyard-deadletters-chaos-"));
  let passed = false;
  const runtime = new ChaosRuntime(stateDir, `chaos-${randomBytes(16).toString("hex")}`, () => {});
  try {
    await runtime.start();
    const dead = await runtime.settle("PATCH", `/v1/lanes/${DEAD}`, { shards: 3 });
    expect(dead.status, JSON.stringify(dead.body)).toBe(200);
    for (const lane of SOURCES) {
      const answer = await runtime.settle("PATCH", `/v1/lanes/${lane}`, { concurrency: 20, deadLetter: { lane: DEAD }, ...(lane === SHARDED_SOURCE ? { shards: 2 } : {}) });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
    const plan = rng.fork("plan");
    const jobs: Planned[] = Array.from({ length: JOBS }, (_, i) => ({ lane: plan.pick(SOURCES), id: `j-${i}`, inProcess: plan.chance(2 / 3), at: plan.int(0, SPREAD_MS) }));
    const acked = new Set<string>();
    const limit = limiter(IN_FLIGHT);
    const start = Date.now();
    const enqueue = async (job: Planned) => {
      await sleep(Math.max(0, start + job.at - Date.now()));
      const body = job.inProcess ? { id: job.id, kind: "demo.fail", payload: { failTimes: 1, n: job.id }, maxAttempts: 1 } : { id: job.id, kind: PULL_KIND, payload: { n: job.id } };
      // An enqueue with an id is safe to repeat: a repeat answers the job already there.
      const answer = await limit(() => runtime.settle("POST", `/v1/lanes/${job.lane}/jobs`, body));
      if (answer.status === 201 || answer.status === 200) acked.add(`${job.lane}.${job.id}`);
    };
    const failer = (async () => {
      const when = rng.fork("fail");
      while (Date.now() - start < SPREAD_MS + 1_000) {
        await sleep(when.int(500, 2_500));
        for (const lane of SOURCES) await runtime.settle("POST", `/v1/lanes/${lane}/fail`, { reason: "downstream gone" }).catch(() => undefined);
      }
    })();
    const killer = (async () => {
      const kills = rng.fork("kills");
      for (let k = 0; k < KILLS; k++) {
        await sleep(kills.int(1_000, SPREAD_MS / KILLS));
        await runtime.killAndRestart();
      }
    })();
    await Promise.all(jobs.map(enqueue));
    await Promise.all([killer, failer]);
    // Pull jobs enqueued after the last fail call are failed now (the route says whether more are left).
    for (const lane of SOURCES) while ((await runtime.settle("POST", `/v1/lanes/${lane}/fail`, { reason: "downstream gone" })).body?.more === true);
    const lastKill = Date.now();

    let copies = new Map<string, any>();
    let open = -1;
    while (Date.now() - lastKill < DRAIN_DEADLINE_MS) {
      open = 0;
      for (const lane of SOURCES) {
        const c = (await runtime.settle("GET", `/v1/lanes/${lane}`)).body.counts;
        open += c.blocked + c.queued + c.running + c.completing;
      }
      copies = await listAll(runtime, DEAD);
      if (open === 0 && [...acked].every((id) => copies.has(id))) break;
      await sleep(1_000);
    }

    let lost = 0;
    let twice = 0;
    const problems: string[] = [];
    for (const key of acked) {
      const [lane, id] = [key.slice(0, key.indexOf(".")), key.slice(key.indexOf(".") + 1)];
      const job = (await runtime.settle("GET", `/v1/lanes/${lane}/jobs/${id}`)).body;
      if (job?.outcome !== "failed") problems.push(`${key} settled ${job?.state}/${job?.outcome}`);
      const copy = copies.get(key);
      if (!copy) {
        lost++;
        continue;
      }
      const p = copy.payload;
      if (p?.lane !== lane || p?.id !== id || p?.outcome !== "failed" || p?.kind !== job?.kind || JSON.stringify(p?.payload) !== JSON.stringify(job?.payload) || p?.settledAt !== job?.settledAt || p?.attempts !== job?.attempts) {
        twice++;
        problems.push(`${key}: copy ${JSON.stringify(p)} is not the job as it failed`);
      }
    }
    for (const id of copies.keys()) if (!acked.has(id)) (twice++, problems.push(`copy ${id} of no acknowledged job`));
    let counted = 0;
    for (const lane of SOURCES) counted += (await runtime.settle("GET", `/v1/lanes/${lane}`)).body.stats.deadLettered;
    if (counted > copies.size) (twice += counted - copies.size, problems.push(`deadLettered ${counted} for ${copies.size} copies`));
    const stuck = [...acked].filter((id) => !copies.has(id)).length;
    for (const problem of problems.slice(0, 10)) console.log(`deadletters-chaos:   PROBLEM ${problem}`);
    console.log(`deadletters-chaos: jobs=${JOBS} acked=${acked.size} copies=${copies.size} counted=${counted} lost=${lost} twice=${twice} stuck=${stuck} open=${open} kills=${runtime.kills} took=${Date.now() - start}ms seed=${SEED}`);
    expect(runtime.kills).toBe(KILLS);
    expect({ lost, twice }).toEqual({ lost: 0, twice: 0 });
    expect(counted).toBe(copies.size);
    expect(problems).toEqual([]);
    passed = true;
  } finally {
    await runtime.stop();
    if (passed) rmSync(stateDir, { recursive: true, force: true });
    else console.log(`deadletters-chaos: the runtime's state is kept in ${stateDir}`);
  }
});

/** Every job of a lane, by id, through its pages. */
async function listAll(runtime: ChaosRuntime, lane: string): Promise<Map<string, any>> {
  const jobs = new Map<string, any>();
  let cursor: string | null = null;
  do {
    const page: any = (await runtime.settle("GET", `/v1/lanes/${lane}/jobs?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).body;
    for (const job of page.jobs ?? []) jobs.set(job.id, job);
    cursor = page.cursor ?? null;
  } while (cursor !== null);
  return jobs;
}
