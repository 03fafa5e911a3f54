/**
 * The bulk requeue's chaos run (`npm run test:chaos`): a lane's failed jobs are requeued by one bulk
 * action while the runtime is SIGKILLed at random moments and restarted over the same state. After
 * each restart the lane's fail route fails again up to 500 of the jobs the bulk has requeued so far
 * (they are the lane's only queued jobs; its answer names them): the bulk's cursor is past them, so
 * none may be requeued a second time. The first restart must find the bulk still running. At rest:
 * - lost: a job still failed by the first failure (the bulk never reached it);
 * - twice: a job failed again that is queued (requeued after it), or the action's `done` above the
 *   jobs (a job acted on twice), or a job failed again that the fail route did not name (while every
 *   call of it was answered).
 *
 *   CHAOS_SEED=<seed> SWITCHYARD_CHAOS=1 npx vitest run --project chaos test/chaos/bulk-chaos.test.ts
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createPrng, sleep } from "./prng.js";
import { ChaosRuntime } from "./runtime.js";

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const LANE = "bulk-chaos";
/** No executor runs this kind, and the lane is paused: a requeued job stays queued. */
const KIND = "chaos.bulk";
const JOBS = 10_000;
const KILLS = 3;
const DEADLINE_MS = 120_000;

it(`requeues each job once across ${KILLS} kills during a bulk requeue`, async () => {
  console.log(`bulk-chaos: seed=${SEED} jobs=${JOBS} kills=${KILLS}`);
  const rng = createPrng(SEED);
  const stateDir = mkdtempSync(join(tmpdir(), "switchyard-bulk-chaos-"));
  const logLines: string[] = [];
  const runtime = new ChaosRuntime(stateDir, `chaos-${randomBytes(16).toString("hex")}`, (line, incarnation) => logLines.push(`${incarnation} ${line}`));
  let passed = false;
  try {
    await runtime.start();
    expect((await runtime.settle("PATCH", `/v1/lanes/${LANE}`, { paused: true })).status).toBe(200);
    for (let from = 0; from < JOBS; from += 1000) {
      const jobs = Array.from({ length: 1000 }, (_, i) => ({ id: `j${from + i}`, kind: KIND }));
      expect((await runtime.settle("POST", `/v1/lanes/${LANE}/jobs/batch`, { jobs })).status).toBe(200);
    }
    while ((await runtime.settle("POST", `/v1/lanes/${LANE}/fail`, { reason: "first" })).body.more);

    // Repeated after a kill under it, a start is refused `bulk_running`, naming the one that runs.
    const started = await runtime.settle("POST", `/v1/lanes/${LANE}/bulk`, { action: "requeue", filter: { outcome: "failed" } });
    expect([202, 409]).toContain(started.status);
    const id: string = started.body.bulk?.id ?? started.body.error.details.bulk.id;
    console.log(`bulk-chaos: ${JOBS} jobs failed, bulk ${id} started`);

    const failedAgain = new Set<string>();
    /** A call of the fail route went unanswered (the fresh runtime refused or dropped it): what it failed is unknown. */
    let unanswered = 0;
    /** The bulk's progress as each restart found it: a kill after it had finished would test nothing. */
    const found: { state: string; done: number }[] = [];
    const kills = rng.fork("kills");
    for (let k = 0; k < KILLS; k++) {
      await sleep(kills.int(10, 200));
      await runtime.killAndRestart();
      const progress = (await runtime.settle("GET", `/v1/lanes/${LANE}/bulk/${id}`)).body.bulk;
      found.push({ state: progress.state, done: progress.done });
      // One call (not a loop, which would chase the bulk to its end and leave the next kills nothing
      // to cut): up to 500 of the jobs requeued so far fail again, and its answer names them.
      for (;;) {
        const again = await runtime.request("POST", `/v1/lanes/${LANE}/fail`, { reason: "again" });
        if (again.status === 200) {
          for (const job of again.body.failed as string[]) failedAgain.add(job);
          break;
        }
        if (++unanswered > 100) throw new Error(`the fail route unanswered 100 times after restart ${k + 1}: ${again.status} ${JSON.stringify(again.body)}`);
        await sleep(200);
      }
      console.log(`bulk-chaos: restart ${k + 1} up, the bulk ${progress.state} at ${progress.done}, ${failedAgain.size} failed again so far`);
    }
    // The first kill came while it ran (else nothing here was tested under a kill).
    expect(found[0]).toMatchObject({ state: "running" });

    const deadline = Date.now() + DEADLINE_MS;
    let bulk: any;
    for (;;) {
      bulk = (await runtime.settle("GET", `/v1/lanes/${LANE}/bulk/${id}`)).body.bulk;
      if (bulk?.state === "done" || Date.now() > deadline) break;
      await sleep(250);
    }
    console.log(`bulk-chaos: ${runtime.kills} kills, ${failedAgain.size} jobs failed again (${unanswered} calls unanswered), bulk ${JSON.stringify(bulk)}`);
    // The action acts only on failed jobs, and counts each act in the chunk's own transaction: `done`
    // at the job count with no job left failed by the first failure is each job requeued exactly once.
    expect(bulk).toMatchObject({ state: "done", done: JOBS, skipped: 0, matched: JOBS });

    const lost: string[] = [];
    const twice: string[] = [];
    let cursor: string | null = null;
    let seen = 0;
    do {
      const page: any = (await runtime.settle("GET", `/v1/lanes/${LANE}/jobs?limit=500${cursor ? `&cursor=${cursor}` : ""}`)).body;
      for (const job of page.jobs) {
        seen++;
        if (job.state === "settled" && job.error === "first") lost.push(job.id);
        else if (job.state === "settled" && job.error === "again" && !failedAgain.has(job.id) && unanswered === 0) twice.push(`${job.id}: failed again unnamed`);
        else if (job.state === "queued" && failedAgain.has(job.id)) twice.push(`${job.id}: requeued after it failed again`);
        else if (job.state !== "queued" && !(job.state === "settled" && job.error === "again")) twice.push(`${job.id}: ${job.state} ${job.outcome} ${job.error}`);
      }
      cursor = page.cursor;
    } while (cursor);
    console.log(`bulk-chaos: lost=${lost.length} twice=${twice.length} seen=${seen}`);
    expect({ lost: lost.slice(0, 10), twice: twice.slice(0, 10), seen }).toEqual({ lost: [], twice: [], seen: JOBS });
    passed = true;
  } finally {
    if (!passed) console.log(logLines.slice(-40).join("\n"));
    await runtime.stop();
    if (passed) rmSync(stateDir, { recursive: true, force: true });
  }
});
