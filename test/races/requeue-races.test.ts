/**
 * Requeue racing a sweep (and another requeue): each job is either queued again (and then no sweep
 * may take it) or swept (and then the requeue is told job_not_found); never both, never neither.
 */
import { describe, expect, it } from "vitest";
import type { Result } from "../../src/shared/errors.js";
import { T0, claimOne, enqueue, setup, value, type LaneStub } from "../helpers/lane.js";

const code = (r: Result<unknown>) => (r.ok ? "ok" : r.error.code);

/** `n` jobs settled at T0: failed, cancelled, then failed again in turn. */
async function settledJobs(stub: LaneStub, n: number): Promise<string[]> {
  value(await stub.configure({ concurrency: 1000 }));
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = await enqueue(stub, { id: `j${i}`, maxAttempts: 1 });
    if (i % 2 === 0) value(await stub.fail(id, { token: (await claimOne(stub)).lease.token, error: "boom" }));
    else value(await stub.cancel(id));
    ids.push(id);
  }
  return ids;
}

describe("requeue racing sweep", () => {
  it("each job is requeued (and kept) or swept (and the requeue told job_not_found)", async () => {
    const { stub, clock } = await setup();
    const ids = await settledJobs(stub, 20);
    clock.advance(1);
    const requeues = ids.map((id) => stub.requeue(id));
    // The sweep goes out in the middle of the requeues.
    const sweep = stub.sweep({ settledBefore: T0 + 1 });
    const more = ids.map((id) => stub.requeue(id));
    const [removed, first, second] = await Promise.all([sweep, Promise.all(requeues), Promise.all(more)]);
    let gone = 0;
    for (const [i, id] of ids.entries()) {
      const job = await stub.getJob(id);
      const answers = [code(first[i]!), code(second[i]!)];
      if (job.ok) {
        // Requeued before the sweep: queued again, and the second requeue was refused for it.
        expect(answers, id).toEqual(["ok", "job_not_requeueable"]);
        expect(job.value, id).toMatchObject({ state: "queued", outcome: null, attempts: 0, settledAt: null });
      } else {
        gone++;
        expect(job.error.code, id).toBe("job_not_found");
        expect(answers, id).toEqual(["job_not_found", "job_not_found"]);
      }
    }
    // The first requeues arrived before the sweep, the second ones after it.
    expect(gone).toBe(0);
    expect(value(removed).removed).toBe(0);
  });

  it("a sweep that arrives first takes every settled job, and every requeue after it is told job_not_found", async () => {
    const { stub, clock } = await setup();
    const ids = await settledJobs(stub, 12);
    clock.advance(1);
    const sweep = stub.sweep({ settledBefore: T0 + 1, limit: 7 });
    const requeues = ids.map((id) => stub.requeue(id));
    const [removed, answers] = await Promise.all([sweep, Promise.all(requeues)]);
    expect(value(removed).removed).toBe(7);
    const codes = answers.map(code);
    // The seven oldest went with the sweep; the rest were requeued.
    expect(codes).toEqual([...Array(7).fill("job_not_found"), ...Array(5).fill("ok")]);
    expect(value(await stub.info()).counts).toMatchObject({ queued: 5, failed: 0, cancelled: 0 });
  });

  it("two requeues at once: one wins, the other is told job_not_requeueable", async () => {
    const { stub } = await setup();
    const [id] = await settledJobs(stub, 1);
    const answers = (await Promise.all([stub.requeue(id!), stub.requeue(id!)])).map(code).sort();
    expect(answers).toEqual(["job_not_requeueable", "ok"]);
  });
});
