/**
 * Lost alarms under kills (`npm run test:chaos`): many lanes whose alarms move inside `alarm()` all
 * the time (each lane holds a train of delayed jobs, so every alarm starts the job that came due and
 * stores the next one's instant), and the runtime SIGKILLed while they do, then restarted over the
 * same state. A kill between the commit of a moved alarm and its hand-over to the scheduler leaves
 * the alarm stored in the object and never scheduled. That window is too narrow for a random kill to
 * hit within a run (none did in 14 kills over 40 lanes), so while the runtime is down after
 * each kill, the run puts a random part of the lanes exactly where such a kill leaves them: their
 * rows in the local scheduler's table are deleted, the alarm stays stored in each object. After the
 * last restart nothing calls the lanes but the cron check (the belt, run every few seconds here
 * instead of every minute): every lane's due work must run, none left waiting behind an overdue alarm.
 *
 *   CHAOS_SEED=<seed> npm run test:chaos     replays a run's decisions (kill moments, lanes that lose their alarm)
 */
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createPrng, sleep, type Prng } from "./prng.js";
import { ChaosRuntime } from "./runtime.js";

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const LANE_COUNT = 24;
const LANES = Array.from({ length: LANE_COUNT }, (_, i) => `alarm-chaos-${i}`);
/** Each lane's train: a job every `TRAIN_STEP_MS` (give or take), longer than the run: alarms move to its end. */
const TRAIN_MS = 120_000;
const TRAIN_STEP_MS = 600;
const KILLS = Number(process.env.CHAOS_KILLS ?? 3);
/** The part of the lanes whose alarm a kill leaves stored and unscheduled. */
const LOST_PART = 0.3;
/** How often the belt runs after the last restart (the cron's minute, made short), and how many times. */
const BELT_EVERY_MS = 3_000;
const BELT_RUNS = 4;
/** A due job still queued this long after its instant, once the belt has run past it, is stalled. */
const STALL_MS = 8_000;

it(`runs every lane's due work after ${KILLS} kills while alarms move`, async () => {
  console.log(`alarm-chaos: seed=${SEED} lanes=${LANE_COUNT} kills=${KILLS} (replay: CHAOS_SEED=${SEED} npm run test:chaos)`);
  const started = Date.now();
  const rng = createPrng(SEED);
  const stateDir = mkdtempSync(join(tmpdir(), "switchyard-alarm-chaos-"));
  const logLines: string[] = [];
  const runtime = new ChaosRuntime(stateDir, `chaos-${randomBytes(16).toString("hex")}`, (line, incarnation) => logLines.push(`${incarnation} ${line}`));
  try {
    await runtime.start();
    // Every lane's train of delayed jobs, written before the first kill (a batch is one transaction).
    const enqueuedAt = Date.now();
    for (const lane of LANES) {
      const jobs = [];
      for (let at = 500; at <= TRAIN_MS; at += TRAIN_STEP_MS) jobs.push({ id: `t${at}`, kind: "demo.echo", payload: { at }, delayMs: at + rng.int(0, TRAIN_STEP_MS - 1) });
      expect((await runtime.settle("POST", `/v1/lanes/${lane}/jobs/batch`, { jobs })).status).toBe(200);
    }
    // Kills while alarms move; one soon after a restart lands among the missed alarms it runs at once.
    const kills = rng.fork("kills");
    let lost = 0;
    for (let k = 0; k < KILLS; k++) {
      await sleep(kills.chance(0.5) ? kills.int(50, 600) : kills.int(600, 3_000));
      await runtime.kill();
      lost += loseScheduledAlarms(stateDir, kills);
      await runtime.start();
    }
    console.log(`alarm-chaos: ${runtime.kills} kills in ${((Date.now() - enqueuedAt) / 1000).toFixed(1)} s, ${lost} alarms left stored and unscheduled; the belt runs every ${BELT_EVERY_MS} ms now`);

    // Nothing calls the lanes now but the belt.
    for (let run = 0; run < BELT_RUNS; run++) {
      if (run > 0) await sleep(BELT_EVERY_MS);
      expect((await runtime.settle("GET", "/cdn-cgi/local/scheduled?cron=*+*+*+*+*")).status).toBe(200);
    }
    await sleep(STALL_MS);

    const stalled: string[] = [];
    let done = 0;
    for (const lane of LANES) {
      const info = (await runtime.settle("GET", `/v1/lanes/${lane}`)).body;
      done += info.counts.completed;
      const now = Date.now();
      if (info.oldestDueAt !== null && info.oldestDueAt < now - STALL_MS)
        stalled.push(`${lane}: ${info.counts.queued} queued, due since ${now - info.oldestDueAt} ms, nextWakeAt ${info.nextWakeAt === null ? null : info.nextWakeAt - now} ms from now`);
    }
    if (process.env.CHAOS_LOG) writeFileSync(process.env.CHAOS_LOG, logLines.join("\n"));
    for (const problem of stalled) console.log(`alarm-chaos: STALLED ${problem}`);
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    console.log(`alarm-chaos: stalled=${stalled.length} completed=${done} kills=${runtime.kills} seed=${SEED} ${seconds}s`);
    expect(runtime.kills).toBe(KILLS);
    expect(lost).toBeGreaterThan(0);
    expect(stalled).toEqual([]);
  } finally {
    await runtime.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
});

/**
 * Puts a random part of the lanes where a kill between an alarm's commit and its hand-over leaves
 * them: their rows in the local scheduler's table (Miniflare's per-class `metadata.sqlite`) go, the
 * alarm stays stored in each object. Answers how many.
 */
function loseScheduledAlarms(stateDir: string, rng: Prng): number {
  const scheduler = join(stateDir, "v3", "do", "switchyard-DemoLane", "metadata.sqlite");
  if (!existsSync(scheduler)) throw new Error(`no alarm scheduler table at ${scheduler}`);
  const ids = sqlite(scheduler, "SELECT actor_id FROM _cf_ALARM").split("\n").filter(Boolean);
  const lost = ids.filter(() => rng.chance(LOST_PART));
  if (lost.length > 0) sqlite(scheduler, `DELETE FROM _cf_ALARM WHERE actor_id IN (${lost.map((id) => `'${id.replace(/[^0-9a-f]/g, "")}'`).join(",")})`);
  return lost.length;
}

/**
 * One statement on a SQLite file, by the `sqlite3` command line (Node 20 has no SQLite of its own); rows
 * one per line. A killed runtime's workerd can hold its lock for a moment after wrangler has exited (the
 * kill waits for wrangler only): the statement waits for the lock rather than fail ("database is locked").
 */
function sqlite(file: string, statement: string): string {
  return execFileSync("sqlite3", ["-cmd", ".timeout 15000", file, statement], { encoding: "utf8" });
}
