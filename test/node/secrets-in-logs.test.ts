/**
 * No log line of the real runtime holds a bearer token or a lease token (security). The
 * runtime's whole output is captured while a workload claims, renews, completes, fails, releases and
 * cancels, speaks with stale tokens, and sends hostile requests that carry the tokens in every place
 * a careless error path might echo them (malformed JSON, bad UTF-8, oversized and over-deep bodies,
 * oversized results, malformed authorization headers). Then the log is searched for every token used.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";

const BEARER = `bearer-${randomBytes(12).toString("hex")}`;
const LANE = "secrets";
let stateDir: string;
let runtime: LocalRuntime;
const logs: string[] = [];

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "switchyard-secrets-"));
  runtime = await LocalRuntime.start({ persistDir: stateDir, apiToken: BEARER, onLog: (line) => void logs.push(line) });
});

afterAll(async () => {
  await runtime?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** A raw request: any body bytes, any headers. */
async function raw(method: string, path: string, body: BodyInit | null, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(new URL(path, runtime.url), { method, body, headers: { authorization: `Bearer ${BEARER}`, ...headers } });
  await response.arrayBuffer();
  return response.status;
}

it("logs neither the bearer token nor any lease token", async () => {
  const tokens = new Set<string>();
  const statuses: number[] = [];
  const api = async (method: string, path: string, body?: unknown) => {
    const answer = await runtime.api(method, `/v1/lanes/${LANE}${path}`, body);
    statuses.push(answer.status);
    // Every lease token handed out: claim and renew answers.
    for (const lease of [answer.body?.lease, ...(answer.body?.jobs ?? []).map((j: { lease?: unknown }) => j.lease)]) {
      if (typeof lease?.token === "string") tokens.add(lease.token);
    }
    return answer;
  };
  await api("PATCH", "", { concurrency: 50 });
  const jobs = Array.from({ length: 16 }, (_, i) => ({ id: `p${i}`, kind: "secrets.pull", payload: { i }, maxAttempts: 3 }));
  const inProcess = [
    { kind: "demo.echo", payload: { hello: "world" } },
    { kind: "demo.fail", payload: { failTimes: 1 }, backoff: { baseMs: 10, maxMs: 10 } },
    { kind: "demo.fail", payload: { failTimes: 5 }, maxAttempts: 1 },
    { kind: "demo.sleep", payload: { ms: 20 } },
  ];
  expect((await api("POST", "/jobs/batch", { jobs: [...jobs, ...inProcess] })).status).toBe(200);
  const claimed = await api("POST", "/claims", { kinds: ["secrets.pull"], max: 12, leaseMs: 60_000 });
  const held = new Map<string, string>((claimed.body.jobs as { id: string; lease: { token: string } }[]).map((j) => [j.id, j.lease.token]));
  expect(held.size).toBe(12);
  const speak = (id: string, op: string, body: Record<string, unknown> = {}) => api("POST", `/jobs/${id}/${op}`, { token: held.get(id), ...body });

  // The fence, with every kind of token.
  for (const id of ["p0", "p1", "p2"]) {
    const old = held.get(id)!;
    const renewed = await speak(id, "renew", { leaseMs: 30_000 });
    held.set(id, renewed.body.lease.token);
    await api("POST", `/jobs/${id}/complete`, { token: old }); // lease_superseded
  }
  await speak("p0", "complete", { result: { ok: 1 } });
  await speak("p0", "complete", { result: { ok: 1 } });
  await speak("p1", "fail", { error: "transient", retryAfterMs: 0 });
  await speak("p2", "fail", { error: "fatal", retry: false });
  await speak("p3", "release");
  await api("POST", "/jobs/p4/cancel", { reason: "stop" });
  await speak("p4", "complete"); // job_cancelled
  await speak("p5", "renew", { leaseMs: 100 });
  await api("POST", "/jobs/p6/complete", { token: held.get("p7") }); // another job's token

  // Hostile requests carrying the tokens where an error path might echo them.
  const token = held.get("p8")!;
  const hostile: [BodyInit, Record<string, string>?][] = [
    [`{"token":"${token}","result":`],
    [`{"token":"${token}", "result": {"a": 1}, "token": 5`],
    [new Uint8Array([...Buffer.from(`{"token":"${token}","x":"`), 0xff, 0xfe, ...Buffer.from(`"}`)])],
    [`{"token":"${token}","result":${"[".repeat(3000)}${"]".repeat(3000)}}`],
    [JSON.stringify({ token, result: "x".repeat(128 * 1024 + 1) })],
    [JSON.stringify({ token, result: "x".repeat(1024 * 1024) })],
    [JSON.stringify({ token, leaseMs: 1e308, unknown: token })],
    [JSON.stringify({ token: `${token}`.repeat(20) })],
    [JSON.stringify({ token }), { "content-type": "text/plain" }],
    [JSON.stringify({ token }), { "content-type": `application/json; token=${token}` }],
  ];
  for (const [body, headers] of hostile) {
    for (const op of ["complete", "renew", "fail"]) statuses.push(await raw("POST", `/v1/lanes/${LANE}/jobs/p8/${op}`, body, { "content-type": "application/json", ...headers }));
  }
  for (const authorization of [`Bearer ${BEARER} ${BEARER}`, `Basic ${BEARER}`, BEARER, `Bearer ${BEARER}x`, `Bearer ${token}`]) {
    statuses.push(await raw("GET", `/v1/lanes/${LANE}`, null, { authorization }));
  }
  statuses.push(await raw("POST", `/v1/lanes/${LANE}/jobs`, JSON.stringify({ kind: "k", payload: { token, bearer: BEARER }, delayMs: -1 }), { "content-type": "application/json" }));

  // Let the in-process jobs run to the end, then stop the runtime so that its output is all in.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { counts } = (await runtime.api("GET", `/v1/lanes/${LANE}`)).body;
    if (counts.completed + counts.failed >= 6 || Date.now() > deadline) break; // p0, p2 and the four in-process jobs
    await new Promise((r) => setTimeout(r, 100));
  }
  await runtime.stop();

  expect(statuses.filter((s) => s >= 500)).toEqual([]);
  expect(logs.filter((l) => l.includes('"job.transition"')).length).toBeGreaterThan(20);
  expect(tokens.size).toBe(12 + 4); // twelve claims, four renewals
  const leaks = logs.filter((line) => line.includes(BEARER) || [...tokens].some((t) => line.includes(t)));
  expect(leaks).toEqual([]);
});
