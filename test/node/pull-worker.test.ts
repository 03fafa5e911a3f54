/**
 * The pull-worker runtime (`createWorker`) from Node against the real runtime (`wrangler dev`):
 * draining, competing workers, a worker process SIGKILLed mid-job, `stop()`, lost leases,
 * cancellation, and how soon a long-poll claim hears of an enqueue.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";
import { until as waitUntil } from "./support.js";
import { createWorker, WorkerAbortError, type PullWorker, type WorkerEvent, type WorkerOptions } from "../../src/client/worker.js";

const ROOT = resolve(import.meta.dirname, "../..");
let stateDir: string;
let runtime: LocalRuntime;
const workers: PullWorker[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "switchyard-pull-worker-"));
  runtime = await LocalRuntime.start({ persistDir: stateDir });
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
});

afterAll(async () => {
  await runtime?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const lane = () => `pw-${crypto.randomUUID()}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function worker(name: string, options: Partial<WorkerOptions> & Pick<WorkerOptions, "handlers">): PullWorker {
  const w = createWorker({ url: runtime.url.href, token: runtime.apiToken, lane: name, ...options });
  workers.push(w);
  return w;
}

/** Waits (bounded) until `check` holds, asking every 20 ms. */
const until = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) => waitUntil(what, check, timeoutMs, 20);

async function enqueueAll(name: string, jobs: Record<string, unknown>[]): Promise<void> {
  const answer = await runtime.api("POST", `/v1/lanes/${name}/jobs/batch`, { jobs });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

const counts = async (name: string) => (await runtime.api("GET", `/v1/lanes/${name}`)).body.counts;
const job = async (name: string, id: string) => (await runtime.api("GET", `/v1/lanes/${name}/jobs/${id}`)).body;

/** A wait that honours the signal: rejects with its reason when it fires. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolveWait, reject) => {
    const timer = setTimeout(resolveWait, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

it("drains N jobs across kinds, each completed once with its handler's result", async () => {
  const name = lane();
  const kinds = ["ext.a", "ext.b", "ext.c"];
  await enqueueAll(name, Array.from({ length: 90 }, (_, i) => ({ id: `j${i}`, kind: kinds[i % 3], payload: { i } })));
  const handler = (payload: { i: number }, ctx: { job: { kind: string }; attempt: number }) => ({ kind: ctx.job.kind, double: payload.i * 2, attempt: ctx.attempt });
  const w = worker(name, { concurrency: 8, handlers: { "ext.a": handler, "ext.b": handler, "ext.c": handler } });
  await until("90 completions", async () => (await counts(name)).completed === 90);
  for (const i of [0, 1, 2, 44, 89]) {
    expect(await job(name, `j${i}`)).toMatchObject({ outcome: "completed", generation: 1, result: { kind: kinds[i % 3], double: i * 2, attempt: 1 } });
  }
  expect(await w.stop({ graceMs: 1000 })).toEqual({ drained: true, inFlight: 0 });
  expect(w.stats()).toMatchObject({ claims: 90, completions: 90, failures: 0, lost: 0, inFlight: 0 });
});

it("two competing workers: no job runs twice while its lease is live", async () => {
  const name = lane();
  await enqueueAll(name, Array.from({ length: 120 }, (_, i) => ({ id: `j${i}`, kind: "ext.c", payload: { i } })));
  const runs = new Map<string, number>();
  const byWorker = [0, 0];
  const handler = (index: number) => async (_payload: unknown, ctx: { job: { id: string }; signal: AbortSignal }) => {
    runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1);
    byWorker[index]!++;
    await wait(5 + Math.random() * 10, ctx.signal);
    return index;
  };
  worker(name, { concurrency: 6, handlers: { "ext.c": handler(0) } });
  worker(name, { concurrency: 6, handlers: { "ext.c": handler(1) } });
  await until("120 completions", async () => (await counts(name)).completed === 120);
  expect(runs.size).toBe(120);
  expect([...runs.values()].every((n) => n === 1)).toBe(true);
  expect(byWorker.every((n) => n > 0)).toBe(true);
});

it("a worker process SIGKILLed mid-job: its jobs are recovered after their lease and done by another worker", async () => {
  const name = lane();
  await enqueueAll(name, Array.from({ length: 4 }, (_, i) => ({ id: `j${i}`, kind: "ext.slow" })));
  const child = spawn(process.execPath, ["--import", "./scripts/ts-imports.ts", "test/node/fixtures/worker-process.ts", runtime.url.href, runtime.apiToken, name, "1500", "60000"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  let claimed = 0;
  child.stdout!.on("data", (chunk: Buffer) => (claimed += chunk.toString().split("\n").filter((l) => l.includes('"claimed"')).length));
  await until("the child to claim all four", () => claimed === 4);
  child.kill("SIGKILL");
  const killedAt = Date.now();
  const starts: number[] = [];
  worker(name, { handlers: { "ext.slow": () => (starts.push(Date.now()), "rescued") } });
  await until("four completions", async () => (await counts(name)).completed === 4);
  for (let i = 0; i < 4; i++) expect(await job(name, `j${i}`)).toMatchObject({ outcome: "completed", generation: 2, attempts: 1, result: "rescued" });
  // Not before the killed worker's leases ran out.
  expect(Math.min(...starts) - killedAt).toBeGreaterThan(500);
});

it("stop({graceMs}): handlers that finish in time are acknowledged; the others are aborted and their jobs released", async () => {
  const name = lane();
  await enqueueAll(name, [
    { id: "fast-1", kind: "ext.fast" }, { id: "fast-2", kind: "ext.fast" },
    { id: "slow-1", kind: "ext.slow" }, { id: "slow-2", kind: "ext.slow" },
  ]);
  const aborted: unknown[] = [];
  const w = worker(name, {
    concurrency: 4,
    handlers: {
      "ext.fast": async (_p, ctx) => (await wait(300, ctx.signal), "done"),
      "ext.slow": async (_p, ctx) => {
        try {
          await wait(60_000, ctx.signal);
        } catch (error) {
          aborted.push((error as WorkerAbortError).abortCause);
          return "too late";
        }
      },
    },
  });
  await until("all four claimed", () => w.stats().claims === 4);
  expect(await w.stop({ graceMs: 1000 })).toEqual({ drained: false, inFlight: 2 });
  expect(aborted).toEqual(["stopped", "stopped"]);
  expect(w.stats()).toMatchObject({ completions: 2, released: 2, inFlight: 0 });
  expect(await job(name, "fast-1")).toMatchObject({ outcome: "completed", result: "done" });
  expect(await job(name, "slow-1")).toMatchObject({ state: "queued", attempts: 0, result: null });
  expect(await job(name, "slow-2")).toMatchObject({ state: "queued", attempts: 0, result: null });
});

it("stop() drains when every handler finishes within the grace, and the process then exits by itself", async () => {
  const name = lane();
  await enqueueAll(name, [{ id: "a", kind: "ext.slow" }, { id: "b", kind: "ext.slow" }]);
  const child = spawn(process.execPath, ["--import", "./scripts/ts-imports.ts", "test/node/fixtures/worker-process.ts", runtime.url.href, runtime.apiToken, name, "30000", "100"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const lines: string[] = [];
  child.stdout!.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
  await until("two completions", () => lines.filter((l) => l.includes('"completed"')).length === 2);
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  child.kill("SIGTERM");
  const code = await Promise.race([exited, sleep(10_000).then(() => "still running")]);
  expect(code).toBe(0);
  expect(lines.map((l) => JSON.parse(l)).find((e) => e.type === "stop-answer")).toEqual({ type: "stop-answer", drained: true, inFlight: 0 });
});

it("a lost lease aborts the handler, and its late answer writes nothing", async () => {
  const name = lane();
  await enqueueAll(name, [{ id: "a", kind: "ext.x" }]);
  const sentAcks: string[] = [];
  // Worker A cannot renew (its renewals fail on the way), so its lease runs out; nor claim again.
  let claims = 0;
  const flaky: typeof fetch = async (input, init) => {
    const url = String(input);
    if (url.endsWith("/renew") || (url.endsWith("/claims") && ++claims > 1)) throw new TypeError("network down");
    if (url.endsWith("/acks")) sentAcks.push(String(init?.body));
    return fetch(input, init);
  };
  let cause: unknown;
  const events: WorkerEvent[] = [];
  const a = worker(name, {
    leaseMs: 1000,
    fetch: flaky,
    onEvent: (e) => events.push(e),
    handlers: {
      "ext.x": async (_p, ctx) => {
        try {
          await wait(60_000, ctx.signal);
        } catch (error) {
          cause = (error as WorkerAbortError).abortCause;
        }
        await sleep(300);
        return "late answer from A";
      },
    },
  });
  await until("A's handler to be aborted", () => cause !== undefined);
  expect(cause).toBe("lost");
  const b = worker(name, { handlers: { "ext.x": () => "from B" } });
  await until("the job to complete", async () => (await counts(name)).completed === 1);
  await sleep(500); // A's late answer has come and gone
  expect(await job(name, "a")).toMatchObject({ outcome: "completed", result: "from B", generation: 2 });
  expect(sentAcks.filter((body) => body.includes('"id":"a"'))).toEqual([]);
  expect(a.stats()).toMatchObject({ lost: 1, completions: 0 });
  expect(b.stats()).toMatchObject({ completions: 1 });
  expect(events.some((e) => e.type === "lost" && e.jobId === "a")).toBe(true);
});

it("a cancellation reaches a running handler through its renewal", async () => {
  const name = lane();
  await enqueueAll(name, [{ id: "a", kind: "ext.x" }]);
  let cause: unknown;
  let started = false;
  const w = worker(name, {
    leaseMs: 900,
    handlers: {
      "ext.x": async (_p, ctx) => {
        started = true;
        await wait(60_000, ctx.signal).catch((error: WorkerAbortError) => (cause = error.abortCause));
        return "ignored";
      },
    },
  });
  await until("the handler to start", () => started);
  expect((await runtime.api("POST", `/v1/lanes/${name}/jobs/a/cancel`, {})).status).toBe(202);
  await until("the handler's signal", () => cause !== undefined, 5_000);
  expect(cause).toBe("cancelled");
  expect(await job(name, "a")).toMatchObject({ state: "settled", outcome: "cancelled", result: null });
  expect(w.stats()).toMatchObject({ cancelled: 1, lost: 0, completions: 0 });
});

it("ctx.step, ctx.checkpoints and ctx.progress go through the fence over HTTP; a retry resumes after its steps", async () => {
  const name = lane();
  await enqueueAll(name, [{ id: "a", kind: "ext.steps", backoff: { baseMs: 1, maxMs: 1 } }]);
  const ran: string[] = [];
  const seen: Record<string, unknown>[] = [];
  worker(name, {
    handlers: {
      "ext.steps": async (_p, ctx) => {
        const one = await ctx.step("s1", () => (ran.push(`s1@${ctx.attempt}`), { attempt: ctx.attempt }));
        await ctx.progress({ after: "s1", attempt: ctx.attempt });
        if (ctx.attempt === 1) throw new Error("fails after s1");
        const two = await ctx.step("s2", () => (ran.push(`s2@${ctx.attempt}`), { attempt: ctx.attempt }));
        await ctx.checkpoints.save("note", "hello");
        seen.push(await ctx.checkpoints.load());
        return { one, two };
      },
    },
  });
  await until("the job to complete", async () => (await counts(name)).completed === 1);
  expect(ran).toEqual(["s1@1", "s2@2"]);
  expect(seen).toEqual([{ s1: { attempt: 1 }, s2: { attempt: 2 }, note: "hello" }]);
  expect(await job(name, "a")).toMatchObject({ attempts: 2, result: { one: { attempt: 1 }, two: { attempt: 2 } }, progress: { after: "s1", attempt: 2 } });
});

it("a long-poll claim hears of an enqueue within tens of milliseconds of its answer", async () => {
  const name = lane();
  const started = new Map<string, number>();
  worker(name, { handlers: { "ext.x": (_p, ctx) => void started.set(ctx.job.id, performance.now()) } });
  await sleep(500); // the worker's claim is held in the lane
  const fromSent: number[] = [];
  const fromAnswer: number[] = [];
  for (let i = 0; i < 10; i++) {
    const sent = performance.now();
    expect((await runtime.api("POST", `/v1/lanes/${name}/jobs`, { id: `j${i}`, kind: "ext.x" })).status).toBe(201);
    const answered = performance.now();
    await until(`j${i} to start`, () => started.has(`j${i}`), 5_000);
    fromSent.push(started.get(`j${i}`)! - sent);
    fromAnswer.push(started.get(`j${i}`)! - answered);
    await sleep(50); // the worker's next claim is held again
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(`handler start after the enqueue was sent / answered, median ms: ${median(fromSent).toFixed(1)} / ${median(fromAnswer).toFixed(1)}`);
  // From the moment the job exists (its enqueue answered): the wait is the claim's answer through the proxy, not a poll.
  expect(median(fromAnswer)).toBeLessThan(100);
});

it("a held claim whose client goes away loses no job: it claims nothing, or its job is recovered at lease expiry", async () => {
  const name = lane();
  const controller = new AbortController();
  const held = fetch(new URL(`/v1/lanes/${name}/claims`, runtime.url), {
    method: "POST",
    headers: { authorization: `Bearer ${runtime.apiToken}`, "content-type": "application/json" },
    body: JSON.stringify({ kinds: ["ext.x"], waitMs: 20_000, leaseMs: 1000 }),
    signal: controller.signal,
  }).catch(() => "aborted");
  await sleep(300);
  controller.abort();
  expect(await held).toBe("aborted");
  await sleep(300);
  expect((await runtime.api("POST", `/v1/lanes/${name}/jobs`, { id: "a", kind: "ext.x" })).status).toBe(201);
  // Where the platform tells the worker of the disconnect (compatibility flag enable_request_signal:
  // in production; not through wrangler dev's proxy) the lane dropped the claim; else it claimed the
  // job for nobody, and the job is queued again once that lease runs out.
  const seen = await job(name, "a");
  expect([seen.state, seen.generation]).toEqual(seen.state === "queued" ? ["queued", 0] : ["running", 1]);
  worker(name, { handlers: { "ext.x": () => "done" } });
  await until("the job to complete", async () => (await counts(name)).completed === 1);
  expect((await job(name, "a")).generation).toBe(seen.generation + 1);
});

it("a handler sees its job's dependencies, and can snooze: the job comes back later on the same attempt", async () => {
  const name = lane();
  await enqueueAll(name, [
    { id: "child", kind: "child.kind", payload: { n: 7 } },
    { id: "parent", kind: "parent.kind", dependsOn: [{ id: "child" }] },
  ]);
  const seen: unknown[] = [];
  const attempts: number[] = [];
  let snoozes = 0;
  const w = worker(name, {
    handlers: {
      "child.kind": (payload: { n: number }) => payload.n * 2,
      "parent.kind": async (_payload, ctx) => {
        attempts.push(ctx.attempt);
        seen.push(ctx.job.dependencies);
        if (snoozes++ === 0) await ctx.snooze(200);
        return "after the snooze";
      },
    },
  });
  await until("the parent completes", async () => (await job(name, "parent")).outcome === "completed");
  const parent = await job(name, "parent");
  expect(parent).toMatchObject({ result: "after the snooze", attempts: 1, generation: 2 });
  expect(attempts).toEqual([1, 1]);
  expect(seen[0]).toEqual([{ lane: name, id: "child", outcome: "completed", result: 14, error: null }]);
  expect(w.stats().snoozed).toBe(1);
  expect((await runtime.api("GET", `/v1/lanes/${name}`)).body.stats.snoozed).toBe(1);
});
