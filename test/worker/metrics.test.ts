/**
 * The metrics routes over HTTP (docs/api.md "Metrics"), through the real app with LANE bound to
 * lanes that report (METRICS_LANE): `GET /v1/metrics` is every lane's latest report from the registry
 * in one call, equal to each lane's info and stats once it has reported; `GET /v1/lanes/{lane}/metrics`
 * reads the lane live; both need a token, and a scoped viewer sees only its lanes.
 */
import { createExecutionContext, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { REGISTRY_NAME } from "../../src/durable/env.js";
import { EXPOSITION_CONTENT_TYPE } from "../../src/durable/metrics/exposition.js";
import { ManualClock } from "../../src/shared/clock.js";
import { createApp } from "../../src/worker/app.js";
import { read, request, T0, TOKEN, type Answer } from "../helpers/http.js";
import { inject, type LaneStub } from "../helpers/lane.js";
import { histogram, histogramSeries, parseExposition, samplesOf } from "../helpers/prometheus.js";
import { keyOn } from "../helpers/shards.js";
import type { TestableLane } from "../helpers/test-worker.js";
import { shardObjectName } from "../../src/shared/shards.js";

const VIEWER = "metrics-viewer-token";
const app = createApp();
const registry = () => env.REGISTRY.getByName(REGISTRY_NAME);

const bindings = { ...env, LANE: env.METRICS_LANE, API_KEYS: JSON.stringify([{ token: VIEWER, role: "viewer", lanes: ["mview-*"] }]) };

async function send(method: string, path: string, options: { json?: unknown; token?: string | null; headers?: Record<string, string> } = {}): Promise<Answer> {
  return read(await app.fetch(request(method, path, options), bindings, createExecutionContext()));
}

async function setup(name: string) {
  const stub = env.METRICS_LANE.getByName(name) as unknown as LaneStub;
  const clock = new ManualClock(T0);
  await inject(stub, clock);
  return { name, stub, clock, base: `/v1/lanes/${encodeURIComponent(name)}` };
}

type Fixture = Awaited<ReturnType<typeof setup>>;

/** The lane's report has gone out: a second on, its alarm (the report's term) run, and the call done. */
async function reported(lane: Fixture): Promise<void> {
  lane.clock.advance(1000);
  await runDurableObjectAlarm(lane.stub);
  await runInDurableObject(lane.stub, (l) => (l as TestableLane).metricsSettled());
}

/** A scripted set of jobs over HTTP: enqueued, claimed, completed, failed, cancelled, left queued. */
async function script(lane: Fixture): Promise<void> {
  for (let i = 0; i < 6; i++) expect((await send("POST", `${lane.base}/jobs`, { json: { id: `j${i}`, kind: "email.send" } })).status).toBe(201);
  lane.clock.advance(40);
  const claimed = (await send("POST", `${lane.base}/claims`, { json: { kinds: ["email.send"], max: 3 } })).body.jobs;
  expect(claimed).toHaveLength(3);
  lane.clock.advance(120);
  expect((await send("POST", `${lane.base}/jobs/${claimed[0].id}/complete`, { json: { token: claimed[0].lease.token, result: 1 } })).status).toBe(200);
  expect((await send("POST", `${lane.base}/jobs/${claimed[1].id}/fail`, { json: { token: claimed[1].lease.token, error: "no", retry: false } })).status).toBe(200);
  expect((await send("POST", `${lane.base}/jobs/j5/cancel`, { json: {} })).status).toBe(200);
}

describe("GET /v1/metrics", () => {
  it("is every lane's families in the text format, equal to each lane's info and stats once it has reported", async () => {
    const lanes = [await setup(`m-${crypto.randomUUID()}`), await setup(`7:odd.Lane-${crypto.randomUUID().slice(0, 8)}`)];
    for (const lane of lanes) {
      await script(lane);
      await reported(lane);
    }
    const answer = await send("GET", "/v1/metrics");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe(EXPOSITION_CONTENT_TYPE);
    const exposition = parseExposition(answer.body as string);
    expect(exposition.families.map((f) => [f.name, f.type])).toEqual([
      ["switchyard_jobs", "GAUGE"],
      ["switchyard_jobs_total", "COUNTER"],
      ["switchyard_oldest_due_age_seconds", "GAUGE"],
      ["switchyard_job_wait_seconds", "HISTOGRAM"],
      ["switchyard_job_run_seconds", "HISTOGRAM"],
    ]);
    for (const lane of lanes) {
      const info = (await send("GET", lane.base)).body;
      const of = (name: string, label: string) => Object.fromEntries(samplesOf(exposition, name, { lane: lane.name }).map((s) => [s.labels[label], s.value]));
      expect(of("switchyard_jobs", "state")).toEqual(info.counts);
      expect(of("switchyard_jobs_total", "event")).toEqual(info.stats);
      // The lanes' clock is far ahead of the worker's: nothing is due yet as the scrape sees it.
      expect(samplesOf(exposition, "switchyard_oldest_due_age_seconds", { lane: lane.name }).map((s) => s.value)).toEqual([0]);
      expect(histogram(exposition, "switchyard_job_wait_seconds", { lane: lane.name })).toMatchObject({ count: info.stats.claimed, sum: 0.12 });
      expect(histogramSeries(exposition, "switchyard_job_run_seconds", { lane: lane.name }).map((l) => l.outcome)).toEqual(["completed", "failed"]);
      expect(histogram(exposition, "switchyard_job_run_seconds", { lane: lane.name, outcome: "completed" })).toMatchObject({ count: 1, sum: 0.12 });
    }
  });

  it("is one call to the registry, however many lanes there are", async () => {
    const lanes = await Promise.all(Array.from({ length: 12 }, () => setup(`n-${crypto.randomUUID()}`)));
    for (const lane of lanes) expect((await send("POST", `${lane.base}/jobs`, { json: { kind: "email.send" } })).status).toBe(201);
    await Promise.all(lanes.map((lane) => runInDurableObject(lane.stub, (l) => (l as TestableLane).metricsSettled())));
    const before = await registry().served();
    const answer = await send("GET", "/v1/metrics");
    const after = await registry().served();
    expect(after.scrapes - before.scrapes).toBe(1);
    expect(after.reports).toBe(before.reports);
    const exposition = parseExposition(answer.body as string);
    for (const lane of lanes) expect(samplesOf(exposition, "switchyard_jobs", { lane: lane.name, state: "queued" }).map((s) => s.value)).toEqual([1]);
  });

  it("shows a scoped viewer only the lanes it reaches", async () => {
    const mine = await setup(`mview-${crypto.randomUUID()}`);
    const other = await setup(`other-${crypto.randomUUID()}`);
    for (const lane of [mine, other]) {
      expect((await send("POST", `${lane.base}/jobs`, { json: { kind: "email.send" } })).status).toBe(201);
      await runInDurableObject(lane.stub, (l) => (l as TestableLane).metricsSettled());
    }
    const answer = await send("GET", "/v1/metrics", { token: VIEWER });
    expect(answer.status).toBe(200);
    const lanes = new Set(parseExposition(answer.body as string).samples.map((s) => s.labels.lane));
    expect(lanes.has(mine.name)).toBe(true);
    expect([...lanes].every((lane) => lane?.startsWith("mview-"))).toBe(true);
    expect((await send("GET", `${other.base}/metrics`, { token: VIEWER })).status).toBe(403);
    expect((await send("GET", `${mine.base}/metrics`, { token: VIEWER })).status).toBe(200);
  });

  it("needs a token, like every /v1 route", async () => {
    for (const path of ["/v1/metrics", "/v1/lanes/any/metrics"]) {
      const answer = await send("GET", path, { token: null });
      expect(answer.status, path).toBe(401);
      expect(answer.body.error.code).toBe("unauthorized");
      expect((await send("GET", path, { token: "wrong" })).status, path).toBe(401);
    }
  });
});

/** A lane of `shards` reporting shards (METRICS_LANE), set through PATCH, every shard on one clock. */
async function setupSharded(prefix: string, shards: number) {
  const name = `${prefix}-${crypto.randomUUID()}`;
  const clock = new ManualClock(T0);
  const stubs = Array.from({ length: shards }, (_, i) => env.METRICS_LANE.getByName(shardObjectName(name, i)) as unknown as LaneStub);
  for (const stub of stubs) await inject(stub, clock);
  const base = `/v1/lanes/${encodeURIComponent(name)}`;
  expect((await send("PATCH", base, { json: { shards } })).status).toBe(200);
  return { name, clock, stubs, base };
}

type Sharded = Awaited<ReturnType<typeof setupSharded>>;

/** Every shard's latest report has gone out: a second on, each shard's alarm run and its call done. */
async function shardsReported(lane: Sharded): Promise<void> {
  lane.clock.advance(1000);
  for (const stub of lane.stubs) {
    await runDurableObjectAlarm(stub);
    await runInDurableObject(stub, (l) => (l as TestableLane).metricsSettled());
  }
}

/**
 * On a 4-shard lane: two jobs completed on shard 0, two failed on shard 1, one queued on shard 1
 * and one on shard 2; shard 3 never has a job. Claims come from whichever shard has work.
 */
async function shardedScript(lane: Sharded): Promise<void> {
  const jobs = [
    { id: "c0", queue: keyOn(0, 4, "a") }, { id: "c1", queue: keyOn(0, 4, "b") },
    { id: "f0", queue: keyOn(1, 4, "a") }, { id: "f1", queue: keyOn(1, 4, "b") },
  ];
  for (const job of jobs) expect((await send("POST", `${lane.base}/jobs`, { json: { ...job, kind: "email.send" } })).status).toBe(201);
  for (const target of [1, 2]) expect((await send("POST", `${lane.base}/jobs`, { json: { kind: "other.kind", queue: keyOn(target, 4, "w") } })).status).toBe(201);
  lane.clock.advance(40);
  const claimed: { id: string; lease: { token: string } }[] = [];
  while (claimed.length < jobs.length) {
    const got = (await send("POST", `${lane.base}/claims`, { json: { kinds: ["email.send"], max: 4 } })).body.jobs;
    expect(got.length).toBeGreaterThan(0);
    claimed.push(...got);
  }
  lane.clock.advance(120);
  for (const job of claimed) {
    const [verb, json] = job.id.startsWith("c") ? ["complete", { result: 1 }] : ["fail", { error: "no", retry: false }];
    expect((await send("POST", `${lane.base}/jobs/${job.id}/${verb}`, { json: { token: job.lease.token, ...json } })).status).toBe(200);
  }
}

/** The lane's samples in an exposition, but its oldest due age (read at another instant), as `name{labels} value` lines, sorted. */
function laneSeries(text: string, lane: string): string[] {
  return parseExposition(text)
    .samples.filter((s) => s.labels.lane === lane && s.name !== "switchyard_oldest_due_age_seconds")
    .map((s) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())} ${s.value}`)
    .sort();
}

describe("GET /v1/metrics of a sharded lane", () => {
  it("holds the lane once, its shards summed, equal to the lane's own metrics route", async () => {
    const lane = await setupSharded("msh", 4);
    await shardedScript(lane);
    await shardsReported(lane);
    const before = await registry().served();
    const scrape = (await send("GET", "/v1/metrics")).body as string;
    const after = await registry().served();
    // One call to the registry, which only joins stored text: no shard is called, no report rendered.
    expect([after.scrapes - before.scrapes, after.reports - before.reports]).toEqual([1, 0]);
    const exposition = parseExposition(scrape);
    expect(exposition.samples.some((s) => s.labels.lane?.startsWith(`${lane.name}#`))).toBe(false);
    const of = (name: string, label: string) => Object.fromEntries(samplesOf(exposition, name, { lane: lane.name }).map((s) => [s.labels[label], s.value]));
    expect(of("switchyard_jobs", "state")).toMatchObject({ queued: 2, running: 0, completed: 2, failed: 2 });
    expect(of("switchyard_jobs_total", "event")).toMatchObject({ enqueued: 6, claimed: 4, completed: 2, failed: 2 });
    expect(histogram(exposition, "switchyard_job_wait_seconds", { lane: lane.name })).toMatchObject({ count: 4, sum: 0.16 });
    expect(histogramSeries(exposition, "switchyard_job_run_seconds", { lane: lane.name }).map((l) => l.outcome)).toEqual(["completed", "failed"]);
    expect(histogram(exposition, "switchyard_job_run_seconds", { lane: lane.name, outcome: "failed" })).toMatchObject({ count: 2, sum: 0.24 });
    // The lane route's series, all but the oldest due age (read at the lane's clock, not the worker's).
    const live = await send("GET", `${lane.base}/metrics`);
    expect(laneSeries(scrape, lane.name)).toEqual(laneSeries(live.body as string, lane.name));
    // And each shard's own series, summed.
    const sums = new Map<string, number>();
    for (const stub of lane.stubs) {
      const own = await stub.metrics();
      if (!own.ok) throw new Error(own.error.message);
      for (const line of laneSeries(own.value, lane.name)) {
        const at = line.lastIndexOf(" ");
        sums.set(line.slice(0, at), (sums.get(line.slice(0, at)) ?? 0) + Number(line.slice(at + 1)));
      }
    }
    expect(laneSeries(scrape, lane.name)).toEqual([...sums].map(([series, n]) => `${series} ${Math.round(n * 1000) / 1000}`).sort());
  });

  it("stops counting the old shards of a lane resharded to fewer", async () => {
    const lane = await setupSharded("mre", 4);
    await shardedScript(lane);
    await shardsReported(lane);
    const enqueued = async () => samplesOf(parseExposition((await send("GET", "/v1/metrics")).body as string), "switchyard_jobs_total", { lane: lane.name, event: "enqueued" }).map((s) => s.value);
    expect(await enqueued()).toEqual([6]);
    // Emptied (the queued jobs cancelled, every settled job swept), then one shard.
    const queued = (await send("GET", `${lane.base}/jobs?state=queued`)).body.jobs as { id: string }[];
    for (const job of queued) expect((await send("POST", `${lane.base}/jobs/${job.id}/cancel`, { json: {} })).status).toBe(200);
    expect((await send("POST", `${lane.base}/sweep`, { json: { settledBefore: lane.clock.now() + 1 } })).body.removed).toBe(6);
    expect((await send("PATCH", lane.base, { json: { shards: 1 } })).status).toBe(200);
    await shardsReported(lane);
    // Shard 0's lifetime stats only: its two jobs; the lane route says the same.
    expect(await enqueued()).toEqual([2]);
    const live = await send("GET", `${lane.base}/metrics`);
    expect(samplesOf(parseExposition(live.body as string), "switchyard_jobs_total", { lane: lane.name, event: "enqueued" }).map((s) => s.value)).toEqual([2]);
  });

  it("shows a scoped viewer a sharded lane it reaches by its lane name, summed, and nothing of others", async () => {
    const mine = await setupSharded("mview-sh", 4);
    const other = await setupSharded("other-sh", 4);
    for (const lane of [mine, other]) {
      await shardedScript(lane);
      await shardsReported(lane);
    }
    const exposition = parseExposition((await send("GET", "/v1/metrics", { token: VIEWER })).body as string);
    const lanes = new Set(exposition.samples.map((s) => s.labels.lane));
    expect(lanes.has(mine.name)).toBe(true);
    expect([...lanes].every((lane) => lane?.startsWith("mview-") && !lane.includes("#"))).toBe(true);
    expect(samplesOf(exposition, "switchyard_jobs_total", { lane: mine.name, event: "enqueued" }).map((s) => s.value)).toEqual([6]);
  });
});

describe("GET /v1/lanes/{lane}/metrics", () => {
  it("reads the lane live: a change shows at once, before its report is due", async () => {
    const lane = await setup(`live-${crypto.randomUUID()}`);
    expect((await send("POST", `${lane.base}/jobs`, { json: { kind: "email.send" } })).status).toBe(201);
    await runInDurableObject(lane.stub, (l) => (l as TestableLane).metricsSettled());
    expect((await send("POST", `${lane.base}/jobs`, { json: { kind: "email.send" } })).status).toBe(201);
    const live = await send("GET", `${lane.base}/metrics`);
    expect(live.status).toBe(200);
    expect(live.headers.get("content-type")).toBe(EXPOSITION_CONTENT_TYPE);
    const queued = (text: string) => samplesOf(parseExposition(text), "switchyard_jobs", { lane: lane.name, state: "queued" }).map((s) => s.value);
    expect(queued(live.body as string)).toEqual([2]);
    // The registry has the first report only, until the second's term comes.
    expect(queued((await send("GET", "/v1/metrics")).body as string)).toEqual([1]);
    await reported(lane);
    expect(queued((await send("GET", "/v1/metrics")).body as string)).toEqual([2]);
  });

  it("refuses a lane name that breaks the pattern, changing nothing", async () => {
    const answer = await send("GET", "/v1/lanes/bad%20name/metrics");
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe("invalid_request");
  });

  it("of a lane that never had a job is its zero counts, and puts no lane in /v1/metrics", async () => {
    const name = `never-${crypto.randomUUID()}`;
    const answer = await send("GET", `/v1/lanes/${name}/metrics`);
    expect(answer.status).toBe(200);
    const exposition = parseExposition(answer.body as string);
    expect(samplesOf(exposition, "switchyard_jobs", { lane: name }).every((s) => s.value === 0)).toBe(true);
    expect(histogramSeries(exposition, "switchyard_job_wait_seconds")).toEqual([]);
    expect((await send("GET", "/v1/metrics")).body).not.toContain(name);
  });
});
