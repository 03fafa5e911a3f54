/**
 * The registry's side of metrics (registry.ts): the latest report of each lane; a scrape holds every
 * lane once in each family, in name order, each family one group; a scoped token's lanes only.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { REGISTRY_NAME } from "../../src/durable/env.js";
import { laneExposition, type LaneReport } from "../../src/durable/metrics/exposition.js";
import { parseExposition, samplesOf } from "../helpers/prometheus.js";

const registry = () => env.REGISTRY.getByName(REGISTRY_NAME);

const report = (queued: number, earliestRunAt: number | null = null): LaneReport => ({
  counts: { blocked: 0, queued, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 },
  stats: { enqueued: queued, claimed: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0 },
  earliestRunAt,
  histograms: [{ name: "wait", outcome: "", count: 1, sumMs: 5, buckets: Array.from({ length: 16 }, () => 1) }],
});

describe("the registry's scrape", () => {
  it("holds every lane once in each family, in name order, each family one group; the latest report wins", async () => {
    const prefix = `reg-${crypto.randomUUID().slice(0, 8)}-`;
    const names = Array.from({ length: 1203 }, (_, i) => `${prefix}${String(i).padStart(4, "0")}`);
    await Promise.all(names.map((name, i) => registry().report(name, report(i, 1000))));
    await registry().report(names[7]!, report(70_000));
    const text = await registry().metrics(3000, [`${prefix}*`]);
    const exposition = parseExposition(text);
    expect(exposition.families.map((f) => f.name)).toEqual([
      "switchyard_jobs", "switchyard_jobs_total", "switchyard_oldest_due_age_seconds", "switchyard_job_wait_seconds", "switchyard_job_run_seconds",
    ]);
    const queued = samplesOf(exposition, "switchyard_jobs", { state: "queued" });
    expect(queued.map((s) => s.labels.lane)).toEqual(names);
    expect(queued.map((s) => s.value)).toEqual(names.map((_, i) => (i === 7 ? 70_000 : i)));
    expect(samplesOf(exposition, "switchyard_oldest_due_age_seconds").map((s) => s.labels.lane)).toEqual(names);
    expect(samplesOf(exposition, "switchyard_oldest_due_age_seconds", { lane: names[0]! })[0]?.value).toBe(2);
    expect(samplesOf(exposition, "switchyard_oldest_due_age_seconds", { lane: names[7]! })[0]?.value).toBe(0);
    expect(samplesOf(exposition, "switchyard_job_wait_seconds_count").map((s) => s.labels.lane)).toEqual(names);
    // Each family's HELP and TYPE once: a family's lines are one group.
    for (const family of exposition.families) expect(text.split(`# TYPE ${family.name} `).length - 1, family.name).toBe(1);
  });

  it("gives a scoped token's lanes only, a name or a prefix", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    for (const name of [`a-${tag}-1`, `a-${tag}-2`, `b-${tag}`, `c-${tag}`]) await registry().report(name, report(1));
    const lanes = async (patterns: string[]) => [...new Set(samplesOf(parseExposition(await registry().metrics(0, patterns)), "switchyard_jobs").map((s) => s.labels.lane))];
    expect(await lanes([`a-${tag}-*`, `c-${tag}`])).toEqual([`a-${tag}-1`, `a-${tag}-2`, `c-${tag}`]);
    expect(await lanes([`zz-${tag}-*`])).toEqual([]);
  });
});

describe("the registry's scrape of a sharded lane", () => {
  const sharded = (queued: number, earliestRunAt: number | null, shards: number): LaneReport => ({ ...report(queued, earliestRunAt), shards });
  const lanesIn = (text: string) => [...new Set(parseExposition(text).samples.map((s) => s.labels.lane))];

  it("holds the lane once, its shards' reports merged exactly as the lane's own route merges them", async () => {
    const lane = `regsh-${crypto.randomUUID()}`;
    const reports = [sharded(2, 2000, 4), sharded(3, 1500, 4), sharded(5, null, 4)];
    await registry().report(lane, reports[0]!);
    await registry().report(`${lane}#1`, reports[1]!);
    await registry().report(`${lane}#3`, reports[2]!);
    const text = await registry().metrics(4000, [lane]);
    expect(text).toBe(laneExposition(lane, reports, 4000));
    const exposition = parseExposition(text);
    expect(lanesIn(text)).toEqual([lane]);
    expect(samplesOf(exposition, "switchyard_jobs", { state: "queued" }).map((s) => s.value)).toEqual([10]);
    expect(samplesOf(exposition, "switchyard_oldest_due_age_seconds").map((s) => s.value)).toEqual([2.5]);
    expect(samplesOf(exposition, "switchyard_job_wait_seconds_count").map((s) => s.value)).toEqual([3]);
    // A shard's newer report replaces its older one: the lane is rendered again from the three.
    await registry().report(`${lane}#1`, sharded(0, null, 4));
    expect(samplesOf(parseExposition(await registry().metrics(4000, [lane])), "switchyard_jobs", { state: "queued" }).map((s) => s.value)).toEqual([7]);
  });

  it("counts a shard only below its own count and the one shard 0 last reported", async () => {
    const lane = `regcut-${crypto.randomUUID()}`;
    const queued = async () => samplesOf(parseExposition(await registry().metrics(0, [lane])), "switchyard_jobs", { lane, state: "queued" }).map((s) => s.value);
    // Shard 0 has not reported: each shard counts by its own count.
    await registry().report(`${lane}#2`, sharded(4, null, 4));
    await registry().report(`${lane}#3`, sharded(8, null, 1));
    expect(await queued()).toEqual([4]);
    await registry().report(lane, sharded(1, null, 4));
    expect(await queued()).toEqual([5]);
    // Resharded to 2: shard 0 says so first; #2's older report (count 4) stops counting.
    await registry().report(lane, sharded(1, null, 2));
    expect(await queued()).toEqual([1]);
    // A lane whose only reports no longer count is gone from the scrape.
    const gone = `regcut-${crypto.randomUUID()}`;
    await registry().report(`${gone}#1`, sharded(3, null, 1));
    expect(lanesIn(await registry().metrics(0, [gone]))).toEqual([]);
  });

  it("renders a lane of one shard from shard 0's report alone, keeping no copy of it; a late report of an old shard counts nothing", async () => {
    const lane = `regone-${crypto.randomUUID()}`;
    const queued = async () => samplesOf(parseExposition(await registry().metrics(0, [lane])), "switchyard_jobs", { lane, state: "queued" }).map((s) => s.value);
    await registry().report(lane, sharded(1, null, 2));
    await registry().report(`${lane}#1`, sharded(2, null, 2));
    expect(await queued()).toEqual([3]);
    // Resharded to one shard: shard 0's reports are the lane's, and its row keeps only its count.
    await registry().report(lane, report(5));
    await registry().report(lane, report(6));
    expect(await queued()).toEqual([6]);
    const stored = await runInDurableObject(registry(), (_, state) => state.storage.sql.exec<{ shards: number; report: string }>(`SELECT shards, report FROM object_reports WHERE name = ?`, lane).one());
    expect(stored).toEqual({ shards: 1, report: "" });
    await registry().report(`${lane}#1`, sharded(7, null, 2));
    expect(await queued()).toEqual([6]);
  });

  it("reads a report from before the lanes counted waitpoints and dead letters (no waitpointsCompleted, waitpointsTimedOut or deadLettered) as 0 of each, alone and merged with a newer shard's", async () => {
    const totals = async (lane: string) => Object.fromEntries(samplesOf(parseExposition(await registry().metrics(0, [lane])), "switchyard_jobs_total", { lane }).map((s) => [s.labels.event, s.value]));
    const alone = `regold-${crypto.randomUUID()}`;
    await registry().report(alone, report(1));
    expect(await totals(alone)).toEqual({ ...report(1).stats, deadLettered: 0, waitpointsCompleted: 0, waitpointsTimedOut: 0 });
    // Shard 1's stored report is of the old shape; shard 0's counts waitpoints: the lane's are its.
    const lane = `regold-${crypto.randomUUID()}`;
    await registry().report(`${lane}#1`, sharded(2, null, 2));
    await registry().report(lane, { ...sharded(1, null, 2), stats: { ...report(1).stats, waitpointsCompleted: 3, waitpointsTimedOut: 1 } });
    expect(await totals(lane)).toEqual({ ...report(3).stats, deadLettered: 0, waitpointsCompleted: 3, waitpointsTimedOut: 1 });
  });

  it("withdraws one shard's report, and the lane with its last", async () => {
    const lane = `regwd-${crypto.randomUUID()}`;
    await registry().report(lane, sharded(1, null, 2));
    await registry().report(`${lane}#1`, sharded(2, null, 2));
    expect(samplesOf(parseExposition(await registry().metrics(0, [lane])), "switchyard_jobs", { lane, state: "queued" }).map((s) => s.value)).toEqual([3]);
    await registry().forget(`${lane}#1`);
    expect(samplesOf(parseExposition(await registry().metrics(0, [lane])), "switchyard_jobs", { lane, state: "queued" }).map((s) => s.value)).toEqual([1]);
    await registry().forget(lane);
    expect(lanesIn(await registry().metrics(0, [lane]))).toEqual([]);
  });
});
