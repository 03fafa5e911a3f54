/**
 * Waiting both ways, over real HTTP through `wrangler dev` from Node (run.ts calls it as `waits`):
 *
 * - held: one job that many callers watch — `streams` SSE streams (`GET …/jobs/{id}/stream`) and as
 *   many held reads (`GET …/jobs/{id}?waitMs=30000`) — on an otherwise idle lane. workerd's CPU
 *   (every process of the runtime, /proc) over an idle window with all of them held, against the same
 *   window with none held (before they open and after they are answered); then the job settles, and
 *   the time from the completion's request to the last waiter's answer (a read's body, a stream's `end`).
 *   All watch the same job: the worst fan-out one settle can meet.
 * - waitpoint → start: a job blocked on a waitpoint, a pull consumer's claim held on its lane (the
 *   claim's answer timestamps the start, as the pull workload's long-poll figure does); the time from
 *   sending the waitpoint's completion to the claim's answer, in the same lane and with the waitpoint
 *   in another lane (the notice goes through the outbox).
 * - chunk → SSE: a pull consumer writes one chunk at a time (`POST …/jobs/{id}/stream`); the time from
 *   sending it to an open SSE reader receiving it.
 *
 * Every time is read on Node's one clock. A route the runtime does not have yet leaves its piece
 * "not measured: <route> missing", never a figure. Node runs this file by type stripping: no enums or
 * parameter properties, and .ts imports by path.
 */
import type * as ProcessWatchModule from "./process-watch.js";
import type { Target } from "./report.js";

const load = async <T>(path: string) => (await import(new URL(path, import.meta.url).href)) as T;
const { ProcessWatch } = await load<typeof ProcessWatchModule>("./process-watch.ts");

type Mode = "full" | "quick" | "smoke";

const PULL_KIND = "bench.pull";
/** The held piece passes when the held requests add at most this much of a core to idle workerd. */
export const HELD_IDLE_GOAL_CORES = 0.01;

const SIZES: Record<Mode, { watchers: number; idleMs: number; latencyN: number }> = {
  full: { watchers: 1000, idleMs: 10_000, latencyN: 200 },
  quick: { watchers: 1000, idleMs: 5_000, latencyN: 100 },
  smoke: { watchers: 20, idleMs: 1_000, latencyN: 10 },
};

interface Server {
  url: URL;
  token: string;
}

/** A piece that cannot run because the runtime lacks a route it needs. */
class NotMeasured extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The promise itself, with a rejection marked handled until someone awaits it. */
const handled = <T>(p: Promise<T>): Promise<T> => {
  p.catch(() => {});
  return p;
};

function summary(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : null);
  return { n: sorted.length, p50: at(50), p99: at(99), max: sorted.at(-1) ?? null, mean: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null };
}

async function call(server: Server, method: string, path: string, body?: unknown, route = path): Promise<{ status: number; body: any }> {
  const response = await fetch(new URL(path, server.url), {
    method,
    headers: { authorization: `Bearer ${server.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  let answer: any = text;
  try {
    answer = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: kept as text
  }
  // The app's answer for a path it has no route for (worker/errors.ts), not a route's own 404.
  if (response.status === 404 && answer?.error?.code === "not_found" && String(answer.error.message).startsWith("no route")) {
    throw new NotMeasured(`${method} ${route} missing`);
  }
  return { status: response.status, body: answer };
}

async function ok(server: Server, method: string, path: string, body?: unknown, route?: string): Promise<any> {
  const answer = await call(server, method, path, body, route);
  if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Enqueues a pull job; a `dependsOn` of waitpoint items refused as malformed means they are not built yet. */
async function enqueue(server: Server, lane: string, job: object): Promise<any> {
  const answer = await call(server, "POST", `/v1/lanes/${lane}/jobs`, { kind: PULL_KIND, ...job });
  if (answer.status === 400 && "dependsOn" in job) throw new NotMeasured(`dependsOn {"waitpoint"} items missing (${answer.body?.error?.message ?? 400})`);
  if (answer.status >= 300) throw new Error(`enqueue in ${lane}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.job;
}

async function claimOne(server: Server, lane: string, waitMs: number): Promise<{ id: string; token: string } | null> {
  const { jobs } = await ok(server, "POST", `/v1/lanes/${lane}/claims`, { kinds: [PULL_KIND], leaseMs: 300_000, waitMs });
  return jobs.length ? { id: jobs[0].id, token: jobs[0].lease.token } : null;
}

interface SseEvent {
  id: string | null;
  event: string;
  data: any;
}

/**
 * An open SSE stream: `opened` once the first event arrived (the replay of the job's enqueue), `ended`
 * once its `end` event did (performance.now() then); `onEvent` sees every event as it is parsed.
 */
function openStream(server: Server, lane: string, id: string, onEvent: (event: SseEvent, at: number) => void = () => {}) {
  const abort = new AbortController();
  let opened!: () => void;
  let ended!: (at: number) => void;
  const openedP = new Promise<void>((r) => (opened = r));
  const endedP = new Promise<number>((r) => (ended = r));
  const done = (async () => {
    const response = await fetch(new URL(`/v1/lanes/${lane}/jobs/${id}/stream`, server.url), {
      headers: { authorization: `Bearer ${server.token}`, accept: "text/event-stream" },
      signal: abort.signal,
    });
    if (response.status === 404) {
      const body: any = await response.json().catch(() => null);
      if (body?.error?.code === "not_found") throw new NotMeasured("GET /v1/lanes/{lane}/jobs/{id}/stream missing");
    }
    if (!response.ok || !(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      throw new Error(`GET …/jobs/${id}/stream: ${response.status} ${response.headers.get("content-type")} ${await response.text()}`);
    }
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
      const at = performance.now();
      buffer += decoder.decode(bytes, { stream: true });
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop() ?? "";
      for (const block of blocks) {
        let event = "message";
        let eventId: string | null = null;
        const data: string[] = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith(":") || line === "") continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = value;
          else if (field === "id") eventId = value;
          else if (field === "data") data.push(value);
        }
        if (data.length === 0) continue;
        const parsed = { id: eventId, event, data: JSON.parse(data.join("\n")) };
        opened();
        onEvent(parsed, at);
        if (event === "end") {
          ended(at);
          abort.abort();
          return;
        }
      }
    }
  })().catch((error) => {
    if (abort.signal.aborted && !(error instanceof NotMeasured)) return;
    throw error;
  });
  // A stream that fails rejects `opened` and `ended` too; marked handled here, so that a failure
  // no one awaits yet cannot end the process, while an await still sees it.
  const guard = <T>(p: Promise<T>) => handled(Promise.race([p, done.then(() => new Promise<never>(() => {}))]));
  return { opened: guard(openedP), ended: guard(endedP), done, close: () => abort.abort() };
}

/**
 * workerd's CPU (cores: 1.0 is one core busy throughout) over `ms` of waiting, in one-second windows:
 * the whole window's mean, and its median second, which a transient at its start (the last held
 * request reaching the lane) does not move.
 */
async function watched(processGroup: number, ms: number) {
  const seconds: number[] = [];
  let rss: { start: number | null; end: number | null } = { start: null, end: null };
  for (let left = ms; left > 0; left -= 1000) {
    const watch = new ProcessWatch(processGroup);
    watch.start();
    await sleep(Math.min(1000, left));
    const figures = watch.stop();
    if (figures.cpuCores !== null) seconds.push(figures.cpuCores);
    rss = { start: rss.start ?? figures.startRssMb, end: figures.endRssMb };
  }
  const sorted = [...seconds].sort((a, b) => a - b);
  const mean = seconds.length ? Math.round((seconds.reduce((a, b) => a + b, 0) / seconds.length) * 1000) / 1000 : null;
  return { ms, cpuCores: mean, medianSecondCores: sorted.length ? sorted[Math.floor(sorted.length / 2)]! : null, seconds, startRssMb: rss.start, endRssMb: rss.end };
}

/**
 * Waits, in one-second windows, until workerd's CPU is back to `ceiling` cores (the requests just sent
 * have all reached the lane: on a loaded machine that takes seconds), or `maxMs` has passed. Answers
 * the ms it waited, null when it never got quiet (the window after it then says how busy it stayed).
 */
async function quiet(processGroup: number, ceiling: number, maxMs: number): Promise<number | null> {
  const t0 = performance.now();
  while (performance.now() - t0 < maxMs) {
    const second = await watched(processGroup, 1000);
    if (second.cpuCores !== null && second.cpuCores <= ceiling) return performance.now() - t0;
  }
  return null;
}

/** Whether the runtime holds a read with `waitMs`: null when it does, else why not (a 400, or answered at once). */
async function readsHeld(server: Server, lane: string, id: string): Promise<string | null> {
  const t0 = performance.now();
  const answer = await call(server, "GET", `/v1/lanes/${lane}/jobs/${id}?waitMs=400`);
  if (answer.status === 400) return `GET /v1/lanes/{lane}/jobs/{id}?waitMs missing (${answer.body?.error?.message ?? 400})`;
  if (answer.status !== 200) throw new Error(`held read: ${answer.status} ${JSON.stringify(answer.body)}`);
  return performance.now() - t0 < 300 ? "GET /v1/lanes/{lane}/jobs/{id}?waitMs missing (answered an unsettled job at once)" : null;
}

/** Whether the runtime has the job's SSE stream: null when it does, else why not. */
async function streamsServed(server: Server, lane: string, id: string): Promise<string | null> {
  const probe = openStream(server, lane, id);
  try {
    await probe.opened;
    return null;
  } catch (error) {
    if (error instanceof NotMeasured) return error.message;
    throw error;
  } finally {
    probe.close();
  }
}

async function held(server: Server, processGroup: number, run: string, sizes: (typeof SIZES)[Mode]) {
  const lane = `held-${run}`;
  const id = "watched";
  await enqueue(server, lane, { id });
  const claimed = await claimOne(server, lane, 0);
  if (!claimed) throw new Error(`${lane}: the watched job was not claimed`);
  // Either kind of waiter is measured alone when the other's route is missing.
  const streamsMissing = await streamsServed(server, lane, id);
  const readsMissing = await readsHeld(server, lane, id);
  if (streamsMissing && readsMissing) throw new NotMeasured(`${streamsMissing}; ${readsMissing}`);
  const streamCount = streamsMissing ? 0 : sizes.watchers;
  const readCount = readsMissing ? 0 : sizes.watchers;
  await sleep(500); // the enqueue's and claim's own work done
  const before = await watched(processGroup, sizes.idleMs);

  // The streams first (each is open once its replay's first event arrived), then the held reads:
  // a window with the streams alone, then one with both.
  const streams = Array.from({ length: streamCount }, () => openStream(server, lane, id));
  const openT0 = performance.now();
  await Promise.all(streams.map((s) => s.opened));
  const streamsOpenMs = performance.now() - openT0;
  // Quiet: at most a tick (1/100 s) a second above the windows with none held.
  const ceiling = (before.medianSecondCores ?? 0) + 0.01;
  const streamsQuietMs = streamCount > 0 ? await quiet(processGroup, ceiling, 20_000) : null;
  const streamsHeld = streamCount > 0 ? await watched(processGroup, sizes.idleMs) : null;
  let earlyReads = 0;
  let settleSent = false;
  const reads = Array.from({ length: readCount }, () => handled((async () => {
    const answer = await call(server, "GET", `/v1/lanes/${lane}/jobs/${id}?waitMs=30000`);
    const at = performance.now();
    if (answer.status !== 200) throw new Error(`held read: ${answer.status} ${JSON.stringify(answer.body)}`);
    if (!settleSent || answer.body.outcome !== "completed") earlyReads++;
    return at;
  })()));
  const readsSent = performance.now();
  // Every held read has reached the lane; the window must end well inside their 30 s.
  const readsQuietMs = readCount > 0 ? await quiet(processGroup, ceiling, 25_000 - sizes.idleMs) : null;
  const whileHeld = await watched(processGroup, sizes.idleMs);
  const heldForMs = performance.now() - readsSent;

  const t0 = performance.now();
  settleSent = true;
  await ok(server, "POST", `/v1/lanes/${lane}/jobs/${id}/complete`, { token: claimed.token, result: { ok: true } });
  const completeRoundTripMs = performance.now() - t0;
  const readTimes = await Promise.all(reads);
  const streamTimes = await Promise.all(streams.map((s) => s.ended));
  if (earlyReads > 0) throw new Error(`${earlyReads} held reads answered before the job settled or unsettled (held ${Math.round(heldForMs)} ms, under their 30 s)`);
  await sleep(500);
  const after = await watched(processGroup, sizes.idleMs);

  const idle = [before.medianSecondCores, after.medianSecondCores].filter((x): x is number => typeof x === "number");
  const idleCores = idle.length ? idle.reduce((a, b) => a + b, 0) / idle.length : null;
  return {
    streams: streamCount, reads: readCount, ...(streamsMissing || readsMissing ? { notMeasuredPart: streamsMissing ?? readsMissing } : {}),
    idleWindowMs: sizes.idleMs, streamsOpenMs, streamsQuietMs, readsQuietMs, heldForMs,
    cpu: {
      noneHeldBefore: before, streamsHeld, allHeld: whileHeld, noneHeldAfter: after, idleCores,
      heldAboveIdleCores: whileHeld.medianSecondCores !== null && idleCores !== null ? Math.round((whileHeld.medianSecondCores - idleCores) * 1000) / 1000 : null,
    },
    completeRoundTripMs,
    settleToLastAnswerMs: Math.max(...readTimes, ...streamTimes) - t0,
    settleToAnswerMs: { reads: summary(readTimes.map((t) => t - t0)), streams: summary(streamTimes.map((t) => t - t0)) },
  };
}

/**
 * `n` times: a waitpoint (in `waitpointLane`), a job in `jobLane` blocked on it, a claim held on
 * `jobLane`; then the waitpoint's completion is sent, and the claim's answer is the job's start.
 */
async function waitpointToStart(server: Server, waitpointLane: string, jobLane: string, n: number) {
  const fromSent: number[] = [];
  const fromAnswered: number[] = [];
  const completeMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const waitpoint = `wp-${i}`;
    await ok(server, "POST", `/v1/lanes/${waitpointLane}/waitpoints`, { id: waitpoint }, "/v1/lanes/{lane}/waitpoints");
    const item = waitpointLane === jobLane ? { waitpoint } : { waitpoint, lane: waitpointLane };
    const job = await enqueue(server, jobLane, { id: `job-${i}`, dependsOn: [item] });
    if (job.state !== "blocked") throw new Error(`job-${i} is ${job.state}, not blocked on its waitpoint`);
    let startedAt = 0;
    const claim = handled(claimOne(server, jobLane, 10_000).then((claimed) => ((startedAt = performance.now()), claimed)));
    await sleep(20); // the claim is held in the lane by now
    const sent = performance.now();
    await ok(server, "POST", `/v1/lanes/${waitpointLane}/waitpoints/${waitpoint}/complete`, { result: { i } }, "/v1/lanes/{lane}/waitpoints/{id}/complete");
    const answered = performance.now();
    const claimed = await claim;
    if (claimed?.id !== `job-${i}`) throw new Error(`the held claim answered ${JSON.stringify(claimed)}, not job-${i}`);
    fromSent.push(startedAt - sent);
    fromAnswered.push(startedAt - answered);
    completeMs.push(answered - sent);
    await ok(server, "POST", `/v1/lanes/${jobLane}/jobs/${claimed.id}/complete`, { token: claimed.token });
  }
  return { startDelayMs: summary(fromSent), afterCompleteAnsweredMs: summary(fromAnswered), completeRoundTripMs: summary(completeMs) };
}

/** A pull consumer writes `n` chunks one at a time to its running job; an open SSE reader receives each. */
async function chunkToReader(server: Server, run: string, n: number) {
  const lane = `chunks-${run}`;
  const id = "writer";
  await enqueue(server, lane, { id });
  const claimed = await claimOne(server, lane, 0);
  if (!claimed) throw new Error(`${lane}: the writing job was not claimed`);
  const received = new Map<number, number>();
  const stream = openStream(server, lane, id, (event, at) => {
    if (event.event === "chunk" && typeof event.data?.data?.i === "number") received.set(event.data.data.i, at);
  });
  await stream.opened;
  const fromSent: number[] = [];
  const writeMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const sent = performance.now();
    await ok(server, "POST", `/v1/lanes/${lane}/jobs/${id}/stream`, { token: claimed.token, chunks: [{ i }] }, "/v1/lanes/{lane}/jobs/{id}/stream");
    writeMs.push(performance.now() - sent);
    for (let spins = 0; !received.has(i) && spins < 2000; spins++) await sleep(1);
    if (!received.has(i)) throw new Error(`chunk ${i} did not reach the reader within 2 s`);
    fromSent.push(received.get(i)! - sent);
    await sleep(5);
  }
  await ok(server, "POST", `/v1/lanes/${lane}/jobs/${id}/complete`, { token: claimed.token });
  await stream.ended;
  return { writtenToReceivedMs: summary(fromSent), writeRoundTripMs: summary(writeMs) };
}

/**
 * A piece's figures; `{notMeasured}` when a route it needs is missing; `{error}` when it broke, so that
 * the other pieces still run (its targets then have no figure, which a full run reports as broken).
 */
async function piece(fn: () => Promise<object>): Promise<object> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof NotMeasured) return { notMeasured: `${error.message}` };
    return { error: String(error) };
  }
}

export async function waitsWorkload(options: { url: URL; token: string; processGroup: number; mode: Mode; run: string }): Promise<object> {
  const server = { url: options.url, token: options.token };
  const sizes = SIZES[options.mode];
  const { run } = options;
  return {
    held: await piece(() => held(server, options.processGroup, run, sizes)),
    waitpointSameLane: await piece(() => waitpointToStart(server, `wp-same-${run}`, `wp-same-${run}`, sizes.latencyN)),
    waitpointCrossLane: await piece(() => waitpointToStart(server, `wp-a-${run}`, `wp-b-${run}`, sizes.latencyN)),
    chunk: await piece(() => chunkToReader(server, run, sizes.latencyN)),
  };
}

const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);
const fmt = (value: unknown, digits = 1) => num(value)?.toFixed(digits) ?? "-";

/**
 * The pieces' figures beside the targets. A piece not measured gives none (its line says why), so a
 * missing route is not a broken benchmark. The held requests' CPU is a target; the latencies are reported.
 */
export function waitsTargets(results: Record<string, any>): Target[] {
  const w = results.waits;
  if (!w || w.error) return [];
  const targets: Target[] = [];
  const reported = (name: string, measured: unknown, basis: string) => {
    const value = num(measured);
    if (value !== null) targets.push({ name, measured: Math.round(value * 100) / 100, target: 0, unit: "ms", met: true, comparison: ">=", basis, reported: true });
  };
  const broken = (name: string, error: string): Target => ({ name, measured: null, target: 0, unit: "ms", met: false, comparison: "<=", basis: `broke: ${error}` });
  const h = w.held;
  if (h?.error) targets.push(broken("held requests: workerd CPU while idle", h.error));
  else if (h && !h.notMeasured) {
    const above = num(h.cpu?.heldAboveIdleCores);
    const held = `${h.streams} SSE streams + ${h.reads} held reads on one job of an idle lane`;
    targets.push({
      name: `held requests: workerd CPU while idle, ${held}, above none held`, measured: above === null ? null : Math.round(above * 1000) / 1000,
      target: HELD_IDLE_GOAL_CORES, unit: "cores", met: above !== null && above <= HELD_IDLE_GOAL_CORES, comparison: "<=",
      basis: `median second of ${h.idleWindowMs} ms windows: ${fmt(h.cpu?.allHeld?.medianSecondCores, 3)} cores all held (mean ${fmt(h.cpu?.allHeld?.cpuCores, 3)}), ` +
        `${fmt(h.cpu?.streamsHeld?.medianSecondCores, 3)} the streams alone, ${fmt(h.cpu?.noneHeldBefore?.medianSecondCores, 3)} / ${fmt(h.cpu?.noneHeldAfter?.medianSecondCores, 3)} none held before / after; ` +
        `workerd RSS ${fmt(h.cpu?.noneHeldBefore?.endRssMb, 0)} MB none held, ${fmt(h.cpu?.allHeld?.endRssMb, 0)} MB all held`,
    });
    reported(`held requests: one job settles → the last of its ${h.streams + h.reads} waiters answered`, h.settleToLastAnswerMs,
      `${held}; reads p50 ${fmt(h.settleToAnswerMs?.reads?.p50)} / streams' end p50 ${fmt(h.settleToAnswerMs?.streams?.p50)} ms; the completion's round trip ${fmt(h.completeRoundTripMs)} ms`);
  }
  for (const [key, where] of [["waitpointSameLane", "same lane"], ["waitpointCrossLane", "across lanes"]] as const) {
    const r = w[key];
    if (r?.error) targets.push(broken(`waitpoint completed → its waiting job started (${where})`, r.error));
    if (!r || r.notMeasured || r.error) continue;
    const basis = `${r.startDelayMs?.n} waitpoints over HTTP, a held pull claim timestamps the start; the completion's round trip p50 ${fmt(r.completeRoundTripMs?.p50)} ms`;
    reported(`waitpoint completed → its waiting job started (${where}), p50`, r.startDelayMs?.p50, basis);
    reported(`waitpoint completed → its waiting job started (${where}), p99`, r.startDelayMs?.p99, basis);
  }
  const c = w.chunk;
  if (c?.error) targets.push(broken("stream chunk written → received by an SSE reader", c.error));
  else if (c && !c.notMeasured) {
    const basis = `${c.writtenToReceivedMs?.n} chunks written one at a time by a pull consumer over HTTP; the write's round trip p50 ${fmt(c.writeRoundTripMs?.p50)} ms`;
    reported("stream chunk written → received by an SSE reader, p50", c.writtenToReceivedMs?.p50, basis);
    reported("stream chunk written → received by an SSE reader, p99", c.writtenToReceivedMs?.p99, basis);
  }
  return targets;
}

/** Each piece's line, "not measured: …" for a piece whose route is missing. */
export function printWaits(w: any): void {
  if (!w || w.error) return;
  console.log("\nwaiting both ways (over HTTP via wrangler dev):");
  const line = (label: string, r: any, text: (r: any) => string) =>
    console.log(`  ${label}  ${r?.notMeasured ? `not measured: ${r.notMeasured}` : r?.error ? `broke: ${r.error}` : text(r)}`);
  line("held       ", w.held, (h) =>
    `${h.streams} streams + ${h.reads} reads held ${fmt(h.heldForMs, 0)} ms: workerd's median second ${fmt(h.cpu.allHeld.medianSecondCores, 3)} cores (streams alone ${fmt(h.cpu.streamsHeld?.medianSecondCores, 3)}) vs ${fmt(h.cpu.idleCores, 3)} with none held;` +
      ` settle → last answer ${fmt(h.settleToLastAnswerMs)} ms (reads p50 ${fmt(h.settleToAnswerMs.reads.p50)}, streams p50 ${fmt(h.settleToAnswerMs.streams.p50)})` +
      (h.notMeasuredPart ? `; not measured: ${h.notMeasuredPart}` : ""));
  for (const [label, key] of [["wp → start ", "waitpointSameLane"], ["wp A → B   ", "waitpointCrossLane"]] as const) {
    line(label, w[key], (r) => `p50/p99 ${fmt(r.startDelayMs.p50)}/${fmt(r.startDelayMs.p99)} ms (${r.startDelayMs.n} waits; completion round trip p50 ${fmt(r.completeRoundTripMs.p50)} ms)`);
  }
  line("chunk → SSE", w.chunk, (c) => `p50/p99 ${fmt(c.writtenToReceivedMs.p50)}/${fmt(c.writtenToReceivedMs.p99)} ms (${c.writtenToReceivedMs.n} chunks; write round trip p50 ${fmt(c.writeRoundTripMs.p50)} ms)`);
}
