/**
 * no answer may be too big to send. A page of jobs (a list, a claim) holds at most
 * 4 MiB of JSON: fewer jobs when they are large, never none while one is there, the cursor going on.
 */
import { describe, expect, it } from "vitest";
import { MAX_PAGE_BYTES, MAX_PAYLOAD_BYTES } from "../../../src/shared/defaults.js";
import type { Job } from "../../../src/shared/job.js";
import { call, expectError } from "../../helpers/http.js";
import { claim, claimOne, enqueue, setup, value, type LaneStub } from "../../helpers/lane.js";

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).byteLength;

/** A payload whose JSON is exactly `size` bytes. */
const payloadOf = (size: number) => "x".repeat(size - 2);

/** Every job of the lane, page by page; each page's JSON checked against the bound. */
async function listAll(stub: LaneStub, limit: number): Promise<{ jobs: Job[]; pages: number }> {
  const jobs: Job[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = value(await stub.listJobs({ limit, ...(cursor ? { cursor } : {}) }));
    expect(bytes(page)).toBeLessThanOrEqual(MAX_PAGE_BYTES);
    expect(page.jobs.length).toBeGreaterThan(0);
    jobs.push(...page.jobs);
    cursor = page.cursor ?? undefined;
    pages++;
  } while (cursor);
  return { jobs, pages };
}

describe("a page of jobs is bounded by bytes", () => {
  it("lists many large jobs in pages of at most 4 MiB, and the cursor reaches every one", async () => {
    const { stub } = await setup();
    const n = 45;
    for (let i = 0; i < n; i++) await enqueue(stub, { id: `j${i}`, payload: payloadOf(MAX_PAYLOAD_BYTES - 100 - i) });
    const { jobs, pages } = await listAll(stub, 500);
    expect(jobs.map((j) => j.id)).toEqual(Array.from({ length: n }, (_, i) => `j${i}`));
    expect(pages).toBeGreaterThan(1);
  });

  it("gives the one job of maximal size (payload and result at their limits) alone if need be, never none", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "max", payload: payloadOf(MAX_PAYLOAD_BYTES) });
    const { lease } = await claimOne(stub);
    value(await stub.complete("max", { token: lease.token, result: payloadOf(MAX_PAYLOAD_BYTES) }));
    const { jobs } = await listAll(stub, 1);
    expect(jobs.map((j) => j.id)).toEqual(["max"]);
  });

  it("claims fewer large jobs than asked, within 4 MiB, and the next claim takes the rest", async () => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: 1000 }));
    const n = 40;
    for (let i = 0; i < n; i++) await enqueue(stub, { id: `j${i}`, payload: payloadOf(MAX_PAYLOAD_BYTES - 10) });
    const first = value(await stub.claim({ max: 100 }));
    expect(bytes(first)).toBeLessThanOrEqual(MAX_PAGE_BYTES);
    expect(first.jobs.length).toBeGreaterThan(0);
    expect(first.jobs.length).toBeLessThan(n);
    const rest = await claim(stub);
    expect(first.jobs.length + rest.length).toBe(n);
  });

  it("answers a large list over HTTP instead of failing (it was a 500 past 32 MiB)", async () => {
    const lane = `bytes-${crypto.randomUUID()}`;
    const base = `/v1/lanes/${lane}`;
    for (let i = 0; i < 40; i++) {
      const answer = await call("POST", `${base}/jobs`, { json: { kind: "email.send", payload: payloadOf(MAX_PAYLOAD_BYTES - 10) } });
      expect(answer.status).toBe(201);
    }
    const answer = await call("GET", `${base}/jobs?limit=500`);
    expect(answer.status).toBe(200);
    expect(answer.body.jobs.length).toBeGreaterThan(0);
    expect(answer.body.cursor).not.toBeNull();
    expectError(await call("GET", `${base}/jobs?limit=501`), 400, "invalid_request");
  });
});
