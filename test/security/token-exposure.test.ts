/**
 * Lease tokens reach their holder only (claim and renew answers). Extends consumers.test.ts ("lease
 * tokens") from one job to a lane with jobs in every state and every lease history, read through
 * every GET route of the OpenAPI document, every filter and page of the list, every other answer
 * (writes, refusals) and the lane's RPC readers.
 */
import { describe, expect, it } from "vitest";
import { JOB_STATES, OUTCOMES } from "../../src/shared/job.js";
import { call, enqueue, get, post, PULL_KIND, setup, type Answer } from "../helpers/http.js";
import { fill, v1Routes } from "./routes.js";

describe("lease tokens", () => {
  it("appear in no read, list or other answer, whatever the job's state and lease history", async () => {
    const lane = await setup();
    await call("PATCH", lane.base, { json: { concurrency: 100 } });
    for (let i = 0; i < 12; i++) await enqueue(lane, { id: `j${i}`, maxAttempts: 3 });
    const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND], max: 9, leaseMs: 60_000 });
    const held = new Map<string, string>((claimed.body.jobs as { id: string; lease: { token: string } }[]).map((j) => [j.id, j.lease.token]));
    const tokens = new Set(held.values());
    const answers: Answer[] = [];
    const renew = async (id: string) => {
      const renewed = await post(`${lane.base}/jobs/${id}/renew`, { token: held.get(id) });
      expect(renewed.status).toBe(200);
      held.set(id, renewed.body.lease.token);
      tokens.add(renewed.body.lease.token);
    };
    const speak = async (id: string, op: string, body: Record<string, unknown> = {}) => {
      answers.push(await post(`${lane.base}/jobs/${id}/${op}`, { token: held.get(id), ...body }));
    };
    // Every state, and every kind of lease history.
    await renew("j0");
    await renew("j0");
    await speak("j0", "complete", { result: { ok: true } }); // completed by a twice-renewed lease
    await speak("j0", "complete", { result: { ok: true } }); // idempotent repeat
    await speak("j1", "complete");
    await speak("j2", "fail", { error: "transient" }); // queued again with a lease history
    await speak("j3", "fail", { error: "fatal", retry: false });
    await speak("j4", "release");
    answers.push(await post(`${lane.base}/jobs/j5/cancel`, { reason: "stop" })); // 202 cancelling
    await speak("j5", "complete"); // job_cancelled
    await renew("j6"); // left running with a renewed lease
    answers.push(await post(`${lane.base}/jobs/j7/cancel`)); // left cancelling
    // j8 is left running as claimed; j9..j11 stay queued.
    // Refusals of stale tokens, and answers that carry a job.
    for (const [id, token] of [["j6", [...tokens][6]!], ["j0", [...tokens][0]!], ["j8", "not-a-token"]] as const) {
      answers.push(await post(`${lane.base}/jobs/${id}/complete`, { token }));
      answers.push(await post(`${lane.base}/jobs/${id}/renew`, { token: `${token}x` }));
    }
    answers.push(await post(`${lane.base}/jobs/j3/requeue`, {}));
    answers.push(await post(`${lane.base}/jobs`, { id: "j8", kind: PULL_KIND, payload: { n: 1 }, maxAttempts: 3 })); // duplicate of a running job
    answers.push(await post(`${lane.base}/jobs/batch`, { jobs: [{ id: "j6", kind: PULL_KIND, payload: { n: 1 }, maxAttempts: 3 }] }));
    answers.push(await call("PATCH", lane.base, { json: { paused: false } }));
    answers.push(await post(`${lane.base}/sweep`, { settledBefore: 0 }));

    // Every GET route of the document, for every job.
    const { routes } = await v1Routes();
    // A job's stream stays open while its job runs (its events carry no token: test/worker/stream-routes.test.ts).
    const gets = routes.filter((r) => r.method === "GET" && !r.template.endsWith("/stream"));
    expect(gets.length).toBeGreaterThanOrEqual(3);
    for (const route of gets) {
      for (let i = 0; i < 12; i++) answers.push(await get(fill(route.template, { lane: lane.lane, id: `j${i}` })));
    }
    // Every filter, and every page at one job a page.
    for (const filter of [...JOB_STATES.map((s) => `state=${s}`), ...OUTCOMES.map((o) => `outcome=${o}`), `kind=${PULL_KIND}`, ""]) {
      let cursor: string | null = null;
      do {
        const page = await get(`${lane.base}/jobs?limit=1&${filter}${cursor ? `&cursor=${cursor}` : ""}`);
        expect(page.status).toBe(200);
        answers.push(page);
        cursor = page.body.cursor;
      } while (cursor !== null);
    }
    // The lane's own readers over RPC.
    const rpc = [await lane.stub.listJobs({ limit: 500 }), await lane.stub.info(), ...(await Promise.all([...held.keys()].map((id) => lane.stub.getJob(id))))];

    const counts = (await get(lane.base)).body.counts;
    expect(counts).toMatchObject({ queued: 6, running: 3, completed: 2, cancelled: 1 });
    expect(tokens.size).toBe(9 + 3); // nine claims, three renewals
    const texts = [...answers.map((a) => JSON.stringify(a.body)), ...rpc.map((r) => JSON.stringify(r))];
    for (const text of texts) for (const token of tokens) expect(text).not.toContain(token);
    // And the readers do show the lease itself: generation and expiry.
    const running = (await get(`${lane.base}/jobs?state=running`)).body.jobs as { lease: object }[];
    for (const job of running) expect(Object.keys(job.lease).sort()).toEqual(["expiresAt", "generation"]);
  });
});
