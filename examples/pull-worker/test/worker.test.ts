/**
 * The example as a user runs it, against a real queue: this repo's worker under `wrangler dev` (what
 * `npm run dev` serves) and `node worker.ts`, whose `switchyard/client` is the packed tarball this
 * package installed. Every job it enqueues must reach the outcome its handler steers it to, and
 * SIGTERM must stop it gracefully, the process then exiting by itself.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
// The repo's harness for `wrangler dev` (a free port, its own state, a process group to stop).
import { LocalRuntime } from "../../../scripts/local-runtime.ts";

const EXAMPLE = resolve(import.meta.dirname, "..");
let stateDir: string;
let runtime: LocalRuntime;

before(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "switchyard-pull-example-"));
  runtime = await LocalRuntime.start({ persistDir: stateDir });
});

after(async () => {
  await runtime?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** Waits (bounded) until `check` holds, asking every 100 ms. */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Job {
  kind: string;
  payload: { frames?: number; month?: string; status?: number };
  state: string;
  outcome: string | null;
  attempts: number;
  result: unknown;
  error: string | null;
}

/** What worker.ts's handlers make of each job it enqueues. */
function expected(job: Job): Partial<Job> {
  const { frames, month, status } = job.payload;
  if (job.kind === "thumbnail.render") return { outcome: "completed", attempts: 1, result: { frames } };
  if (job.kind === "report.build") return { outcome: "completed", attempts: 2, result: { rows: 1_000 + month!.length, pdf: `report-${month}.pdf` } };
  if (status === 410) return { outcome: "failed", attempts: 1, error: "the endpoint is gone for good" };
  return { outcome: "completed", attempts: status === 429 ? 2 : 1, result: { delivered: true } };
}

test("worker.ts runs every job it enqueued to its outcome, then stops gracefully on SIGTERM", async () => {
  const lane = `pull-example-${crypto.randomUUID()}`;
  const child = spawn(process.execPath, ["worker.ts"], {
    cwd: EXAMPLE,
    env: { ...process.env, SWITCHYARD_URL: runtime.url.origin, API_TOKEN: runtime.apiToken, LANE: lane, JOBS: "12" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  const lines: string[] = [];
  let rest = "";
  child.stdout.on("data", (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split("\n");
    rest = parts.pop() ?? "";
    lines.push(...parts);
  });
  try {
    await until("the enqueue", () => lines.some((line) => line.startsWith("enqueued 12 jobs")) || child.exitCode !== null);
    assert.equal(child.exitCode, null, `worker.ts exited early:\n${lines.join("\n")}`);

    const jobs = async () => (await runtime.api("GET", `/v1/lanes/${lane}/jobs?limit=100`)).body.jobs as Job[];
    await until("every job to settle", async () => (await jobs()).filter((job) => job.state === "settled").length === 12);
    const settled = await jobs();
    assert.deepEqual(settled.map((job) => job.kind).sort(), [...Array(4).fill("report.build"), ...Array(4).fill("thumbnail.render"), ...Array(4).fill("webhook.deliver")]);
    for (const job of settled) {
      const want = expected(job);
      assert.deepEqual(Object.fromEntries(Object.keys(want).map((key) => [key, job[key as keyof Job]])), want, `${job.kind} ${JSON.stringify(job.payload)}`);
    }

    child.kill("SIGTERM");
    const [code] = await Promise.race([exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("worker.ts did not exit within 10 s of SIGTERM")), 10_000))]);
    assert.equal(code, 0);
    const last = JSON.parse(lines.filter((line) => line.startsWith("{")).at(-1)!);
    assert.deepEqual(last.stopped, { drained: true, inFlight: 0 });
    // 11 completed; 6 failed attempts: report.build's first four, the 429's first, the 410.
    assert.deepEqual([last.stats.completions, last.stats.failures, last.stats.lost, last.stats.inFlight], [11, 6, 0, 0]);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});
