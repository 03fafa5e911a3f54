/**
 * Prometheus's own checker on the real output: `wrangler dev` serves `GET /v1/metrics` (and a lane's
 * own), lanes with jobs of every kind of end report to the registry, and `promtool check metrics`
 * (Debian's `prometheus` package; .ci/run installs it) reads each exposition from stdin and must
 * find nothing to say. Without promtool this test fails: it never passes unchecked.
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";
import { stateDirFor, until } from "./support.js";

const state = stateDirFor("promtool");
let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await LocalRuntime.start({ persistDir: state.path });
});

afterAll(async () => {
  await runtime?.stop();
});

/** `promtool check metrics` over `text`: its exit status and everything it printed. */
function promtool(text: string): { status: number | null; output: string } {
  const run = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (run.error) throw new Error(`promtool is required (apt-get install -y prometheus): ${run.error.message}`);
  return { status: run.status, output: `${run.stdout}${run.stderr}`.trim() };
}

async function scrape(path: string): Promise<string> {
  const response = await fetch(new URL(path, runtime.url), { headers: { authorization: `Bearer ${runtime.apiToken}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return response.text();
}

it("promtool check metrics finds nothing wrong with /v1/metrics or a lane's metrics", async () => {
  expect(promtool("# HELP ok_total A check of the checker.\n# TYPE ok_total counter\nok_total 1\n"), "promtool itself").toEqual({ status: 0, output: "" });
  const lanes = [`prom-${crypto.randomUUID()}`, `7:prom.odd-${crypto.randomUUID().slice(0, 8)}`];
  for (const lane of lanes) {
    for (let i = 0; i < 5; i++) expect((await runtime.api("POST", `/v1/lanes/${lane}/jobs`, { kind: "demo.echo", payload: i })).status).toBe(201);
    expect((await runtime.api("POST", `/v1/lanes/${lane}/jobs`, { kind: "demo.fail", payload: { failTimes: 5 }, maxAttempts: 1 })).status).toBe(201);
    expect((await runtime.api("POST", `/v1/lanes/${lane}/jobs`, { kind: "pull.k", runAt: Date.now() - 5000 })).status).toBe(201);
  }
  // Each lane's last report goes out within a second of its last change (the wake's term).
  await until("every lane's report of its completed and failed jobs", async () => {
    const text = await scrape("/v1/metrics");
    return lanes.every((lane) => text.includes(`switchyard_job_run_seconds_count{lane="${lane}",outcome="failed"}`));
  }, 30_000, 100);
  const all = await scrape("/v1/metrics");
  expect(all).toContain("# TYPE switchyard_job_wait_seconds histogram");
  expect(promtool(all)).toEqual({ status: 0, output: "" });
  expect(promtool(await scrape(`/v1/lanes/${encodeURIComponent(lanes[1]!)}/metrics`))).toEqual({ status: 0, output: "" });
});

it("a sharded lane is in /v1/metrics once, every shard's report summed, as its own route sums them", async () => {
  const lane = `promsh-${crypto.randomUUID()}`;
  expect((await runtime.api("PATCH", `/v1/lanes/${lane}`, { shards: 4 })).status).toBe(200);
  // Routed by id: eight jobs over the four shards.
  for (let i = 0; i < 8; i++) expect((await runtime.api("POST", `/v1/lanes/${lane}/jobs`, { id: `j${i}`, kind: "demo.echo", payload: i })).status).toBe(201);
  await until("every shard's report of its completed jobs", async () => (await scrape("/v1/metrics")).includes(`switchyard_jobs_total{lane="${lane}",event="completed"} 8\n`), 30_000, 100);
  const all = await scrape("/v1/metrics");
  expect(promtool(all)).toEqual({ status: 0, output: "" });
  expect(all).not.toContain(`${lane}#`);
  const lines = (text: string) => text.split("\n").filter((line) => line.includes(`lane="${lane}"`) && !line.startsWith("switchyard_oldest_due_age_seconds"));
  expect(lines(all)).toEqual(lines(await scrape(`/v1/lanes/${lane}/metrics`)));
});
