/**
 * Group commit in the front worker, against the real runtime (`wrangler dev`): concurrent POSTs of
 * single jobs to one lane, from many requests (grouped across requests in the worker's isolate; the
 * benchmark reports the groups formed), each answered with its own status: 201, 200 duplicate, 409
 * conflict, 400 for its own bad input; every 201 a stored job.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";

let stateDir: string;
let runtime: LocalRuntime;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "switchyard-group-commit-"));
  runtime = await LocalRuntime.start({ persistDir: stateDir });
});

afterAll(async () => {
  await runtime?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

it("answers 300 concurrent enqueues of one lane each with its own status, every 201 a stored job", async () => {
  const lane = `gc-${crypto.randomUUID()}`;
  const requests: unknown[] = [];
  for (let i = 0; i < 250; i++) requests.push({ id: `j${i}`, kind: "pull.k", payload: { i } });
  for (let i = 0; i < 25; i++) requests.push({ id: `j${i}`, kind: "pull.k", payload: { i } }); // duplicates
  for (let i = 25; i < 45; i++) requests.push({ id: `j${i}`, kind: "pull.k", payload: { other: i } }); // conflicts
  for (let i = 0; i < 5; i++) requests.push({ id: `bad ${i}`, kind: "pull.k" }); // refused by the route
  const answers = await Promise.all(requests.map((body) => runtime.api("POST", `/v1/lanes/${lane}/jobs`, body)));
  const tally: Record<string, number> = {};
  for (const a of answers) tally[`${a.status} ${a.body.status ?? a.body.error?.code}`] = (tally[`${a.status} ${a.body.status ?? a.body.error?.code}`] ?? 0) + 1;
  expect(tally).toEqual({ "201 queued": 250, "200 duplicate": 25, "409 job_conflict": 20, "400 invalid_request": 5 });
  answers.slice(0, 250).forEach((a, i) => expect(a.body.job).toMatchObject({ id: `j${i}`, lane, state: "queued", payload: { i } }));
  answers.slice(250, 275).forEach((a, i) => expect(a.body.job).toMatchObject({ id: `j${i}`, payload: { i } }));
  const info = (await runtime.api("GET", `/v1/lanes/${lane}`)).body;
  expect(info.counts.queued).toBe(250);
  expect(info.stats.enqueued).toBe(250);
});

it("keeps each grouped enqueue's own traceparent header (or none), as answered and as stored", async () => {
  const lane = `gc-trace-${crypto.randomUUID()}`;
  const traceparent = (i: number) => (i % 4 === 0 ? undefined : `00-${(i + 1).toString(16).padStart(32, "0")}-${(i + 1).toString(16).padStart(16, "0")}-01`);
  const answers = await Promise.all(
    Array.from({ length: 60 }, async (_, i) => {
      const header = traceparent(i);
      const response = await fetch(new URL(`/v1/lanes/${lane}/jobs`, runtime.url), {
        method: "POST",
        headers: { authorization: `Bearer ${runtime.apiToken}`, "content-type": "application/json", ...(header === undefined ? {} : { traceparent: header }) },
        body: JSON.stringify({ id: `t${i}`, kind: "pull.k" }),
      });
      return { status: response.status, body: (await response.json()) as any };
    }),
  );
  answers.forEach((a, i) => expect([a.status, a.body.job.id, a.body.job.traceparent]).toEqual([201, `t${i}`, traceparent(i) ?? null]));
  const stored = (await runtime.api("GET", `/v1/lanes/${lane}/jobs?limit=100`)).body.jobs as { id: string; traceparent: string | null }[];
  expect(Object.fromEntries(stored.map((j) => [j.id, j.traceparent]))).toEqual(Object.fromEntries(answers.map((_, i) => [`t${i}`, traceparent(i) ?? null])));
});
