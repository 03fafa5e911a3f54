/**
 * The registry's side of metrics (registry.ts): the latest report of each lane; a scrape holds every
 * lane once in each family, in name order, each family one group; a scoped token's lanes only.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { REGISTRY_NAME } from "../../src/durable/env.js";
import type { LaneReport } from "../../src/durable/metrics/exposition.js";
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
