/**
 * Big payloads' chaos run (`npm run test:chaos`): jobs whose payloads (and, for in-process ones,
 * results) are kept in R2 are enqueued, worked and deleted while the runtime is SIGKILLed at random
 * moments and restarted over the same state, so that kills land during uploads and deletions. At rest:
 * - lost: an acknowledged enqueue whose job is gone before the final sweep, or whose payload does
 *   not read back whole (a job without its object);
 * - left behind: once every job is done and swept (and each lane has started again since its last
 *   kill, which sweeps what a kill left owed), an object still in the bucket, or an object still owed.
 * The bucket's objects are read from wrangler dev's persisted state (miniflare's R2 index, with the
 * `sqlite3` command) once the runtime is stopped.
 *
 *   CHAOS_SEED=<seed> SWITCHYARD_CHAOS=1 npx vitest run --project chaos test/chaos/payloads-chaos.test.ts
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { canRead, laneObjects, rows } from "./persisted.js";
import { createPrng, sleep } from "./prng.js";
import { limiter } from "./limiter.js";
import { ChaosRuntime } from "./runtime.js";

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const LANE = "pc-big";
const JOBS = 80;
const KILLS = 3;
const SPREAD_MS = 15_000;
const DRAIN_DEADLINE_MS = 90_000;
/** Requests in flight at once: each carries up to a MiB. */
const IN_FLIGHT = 6;
/** A kind no executor of the dev worker runs: a pull job. */
const PULL_KIND = "email.send";

type Planned = { id: string; kib: number; inProcess: boolean; at: number };

const payloadOf = (job: Planned) => ({ id: job.id, blob: job.id.padEnd(job.kib * 1024, "~") });

/** Every file of a directory tree whose name ends in `.sqlite`. */
function sqliteFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? sqliteFiles(path) : entry.endsWith(".sqlite") ? [path] : [];
  });
}

/** The keys the persisted bucket holds under a prefix (miniflare's R2 index). */
function bucketKeys(persistDir: string, prefix: string): string[] {
  const keys: string[] = [];
  for (const file of sqliteFiles(join(persistDir, "v3", "r2"))) {
    const tables = rows<{ name: string }>(file, "SELECT name FROM sqlite_master WHERE type = 'table'").map((r) => r.name);
    if (!tables.includes("_mf_objects")) continue;
    keys.push(...rows<{ key: string }>(file, `SELECT key FROM _mf_objects WHERE key LIKE '${prefix.replace(/'/g, "''")}%'`).map((r) => r.key));
  }
  return keys;
}

it(`keeps every big payload with its job and leaves no object behind, through ${KILLS} hard kills`, async () => {
  console.log(`payloads-chaos: seed=${SEED} (replay: CHAOS_SEED=${SEED} SWITCHYARD_CHAOS=1 npx vitest run --project chaos test/chaos/payloads-chaos.test.ts)`);
  expect(canRead(), "the sqlite3 command reads the persisted bucket").toBe(true);
  const rng = createPrng(SEED);
  const stateDir = mkdtempSync(join(tmpdir(), "switchyard-payloads-chaos-"));
  let passed = false;
  const runtime = new ChaosRuntime(stateDir, `chaos-${randomBytes(16).toString("hex")}`, () => {});
  try {
    await runtime.start();
    const plan = rng.fork("plan");
    const jobs: Planned[] = Array.from({ length: JOBS }, (_, i) => ({ id: `p-${i}`, kib: plan.int(150, 900), inProcess: plan.chance(1 / 3), at: plan.int(0, SPREAD_MS) }));
    const acked = new Map<string, Planned>();
    const limit = limiter(IN_FLIGHT);
    const start = Date.now();
    const enqueue = async (job: Planned) => {
      await sleep(Math.max(0, start + job.at - Date.now()));
      // demo.echo completes with its payload: its result is as big, and goes to R2 too.
      const body = { id: job.id, kind: job.inProcess ? "demo.echo" : PULL_KIND, payload: payloadOf(job) };
      // Not `settle`: a kill during the upload answers nothing, and the enqueue is not acknowledged.
      const answer = await limit(() => runtime.request("POST", `/v1/lanes/${LANE}/jobs`, body));
      if (answer.status === 201 || answer.status === 200) acked.set(job.id, job);
    };
    // Pull jobs are completed and settled jobs swept as the run goes, so that kills land in deletions too.
    const worker = (async () => {
      const when = rng.fork("work");
      while (Date.now() - start < SPREAD_MS + 2_000) {
        await sleep(when.int(300, 1_500));
        const claimed = await runtime.request("POST", `/v1/lanes/${LANE}/claims`, { kinds: [PULL_KIND], max: 5 });
        for (const job of claimed.body?.jobs ?? []) await runtime.request("POST", `/v1/lanes/${LANE}/jobs/${job.id}/complete`, { token: job.lease.token });
        if (when.chance(0.3)) await runtime.request("POST", `/v1/lanes/${LANE}/sweep`, { settledBefore: Date.now() + 1 });
      }
    })();
    const killer = (async () => {
      const kills = rng.fork("kills");
      for (let k = 0; k < KILLS; k++) {
        await sleep(kills.int(1_500, SPREAD_MS / KILLS));
        await runtime.killAndRestart();
      }
    })();
    await Promise.all([...jobs.map(enqueue), killer, worker]);

    // Every acknowledged job is there with its payload whole, unless a sweep took it once it had settled.
    const problems: string[] = [];
    for (const [id, job] of acked) {
      const answer = await runtime.settle("GET", `/v1/lanes/${LANE}/jobs/${id}`);
      if (answer.status === 404) continue; // settled and swept: its deletion is checked below
      if (answer.status !== 200) problems.push(`${id}: read answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      else if (JSON.stringify(answer.body.payload) !== JSON.stringify(payloadOf(job))) problems.push(`${id}: payload not whole`);
    }
    // On disk, with the runtime killed once more: every row that points at an object has it.
    await runtime.kill();
    const pointed = laneObjects(stateDir)
      .filter((o) => o.name === LANE)
      .flatMap((o) =>
        rows<{ key: string }>(o.file, `SELECT substr(payload, 2, instr(payload, ' ') - 2) AS key FROM jobs WHERE substr(payload, 1, 1) = '@'
          UNION ALL SELECT substr(result, 2, instr(result, ' ') - 2) FROM jobs WHERE substr(result, 1, 1) = '@'`).map((r) => r.key),
      );
    const stored = new Set(bucketKeys(stateDir, `${LANE}/`));
    for (const key of pointed) if (!stored.has(key)) problems.push(`a row points at ${key}, which the bucket does not hold`);
    console.log(`payloads-chaos: ${pointed.length} objects pointed at, ${stored.size} in the bucket before the last sweep`);
    expect(pointed.length, "the run kept some big payloads to check").toBeGreaterThan(0);
    await runtime.start();
    // Then everything is finished and swept.
    const lastKill = Date.now();
    for (;;) {
      const claimed = await runtime.settle("POST", `/v1/lanes/${LANE}/claims`, { kinds: [PULL_KIND], max: 20 });
      for (const job of claimed.body?.jobs ?? []) await runtime.settle("POST", `/v1/lanes/${LANE}/jobs/${job.id}/complete`, { token: job.lease.token });
      const counts = (await runtime.settle("GET", `/v1/lanes/${LANE}`)).body.counts;
      await runtime.settle("POST", `/v1/lanes/${LANE}/sweep`, { settledBefore: Date.now() + 1 });
      if (counts.queued + counts.running + counts.completing + counts.blocked === 0) break;
      if (Date.now() - lastKill > DRAIN_DEADLINE_MS) {
        problems.push(`not drained: ${JSON.stringify(counts)}`);
        break;
      }
      await sleep(500);
    }
    await runtime.settle("POST", `/v1/lanes/${LANE}/sweep`, { settledBefore: Date.now() + 1 });
    await sleep(2_000); // the sweep's deletions after the commit
    await runtime.stop();
    // A kill after the last sweep's commit would have left objects owed: the next start sweeps them.
    const lanes = laneObjects(stateDir).filter((o) => o.name === LANE);
    const owed = lanes.flatMap((o) => rows<{ key: string; state: string }>(o.file, "SELECT key, state FROM payload_objects WHERE state <> 'marker'"));
    const held = lanes.flatMap((o) => rows<{ id: string }>(o.file, "SELECT id FROM jobs"));
    const left = bucketKeys(stateDir, `${LANE}/`);
    console.log(`payloads-chaos: ${acked.size}/${JOBS} acknowledged, ${runtime.kills} kills, ${held.length} jobs left, ${left.length} objects left, ${owed.length} owed`);
    expect(problems).toEqual([]);
    expect(held).toEqual([]);
    expect(owed).toEqual([]);
    expect(left).toEqual([]);
    passed = true;
  } finally {
    await runtime.stop().catch(() => undefined);
    if (passed) rmSync(stateDir, { recursive: true, force: true });
    else console.log(`payloads-chaos: state kept in ${stateDir}`);
  }
});
