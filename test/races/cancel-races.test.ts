/**
 * Cancel racing a lease holder's write. The lane serves one call at a time, so a race is an order of
 * arrival: each job gets the two calls at once, issued in one order for half the jobs and in the
 * other for the rest, and each must end in one legal state with the loser told why.
 */
import { describe, expect, it } from "vitest";
import type { Result } from "../../src/shared/errors.js";
import { claimOne, enqueue, setup, value, type LaneStub } from "../helpers/lane.js";

const JOBS = 16;

type Op = "complete" | "fail" | "fail-final" | "release" | "renew";

function speak(stub: LaneStub, op: Op, id: string, token: string): Promise<Result<unknown>> {
  switch (op) {
    case "complete":
      return stub.complete(id, { token, result: { by: token } });
    case "fail":
      return stub.fail(id, { token, error: "transient" });
    case "fail-final":
      return stub.fail(id, { token, error: "fatal", retry: false });
    case "release":
      return stub.release(id, { token });
    case "renew":
      return stub.renew(id, { token });
  }
}

/** What a cancel answered: "cancelled", "cancelling" or a refusal code. */
const cancelAnswer = (r: Result<{ status: string }>) => (r.ok ? r.value.status : r.error.code);
const opAnswer = (r: Result<unknown>) => (r.ok ? "ok" : r.error.code);

/**
 * The legal endings per op, as [who arrived first, cancel's answer, the op's answer, the job's outcome
 * (null: still running)].
 */
const LEGAL: Record<Op, [string, string, string, string | null][]> = {
  // The holder first: the job is settled before the cancel, which is refused.
  // The cancel first: the holder learns of it (job_cancelled), and the job settles cancelled.
  complete: [
    ["op", "job_settled", "ok", "completed"],
    ["cancel", "cancelling", "job_cancelled", "cancelled"],
  ],
  "fail-final": [
    ["op", "job_settled", "ok", "failed"],
    ["cancel", "cancelling", "job_cancelled", "cancelled"],
  ],
  // A retryable failure or a release queues the job again, and a queued job is cancelled at once.
  fail: [
    ["op", "cancelled", "ok", "cancelled"],
    ["cancel", "cancelling", "job_cancelled", "cancelled"],
  ],
  release: [
    ["op", "cancelled", "ok", "cancelled"],
    ["cancel", "cancelling", "job_cancelled", "cancelled"],
  ],
  // A renewal keeps the attempt running; the cancel is then pending on it.
  renew: [
    ["op", "cancelling", "ok", null],
    ["cancel", "cancelling", "job_cancelled", "cancelled"],
  ],
};

describe("cancel racing a lease holder", () => {
  it.each(Object.keys(LEGAL) as Op[])("cancel racing %s ends in one legal state, the loser told why", async (op) => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: JOBS }));
    const held: { id: string; token: string }[] = [];
    for (let i = 0; i < JOBS; i++) {
      const id = await enqueue(stub, { id: `j${i}`, maxAttempts: 3 });
      held.push({ id, token: (await claimOne(stub)).lease.token });
    }
    const races = held.map(({ id, token }, i) => {
      const calls = i % 2 === 0 ? [stub.cancel(id, { reason: "race" }), speak(stub, op, id, token)] : [speak(stub, op, id, token), stub.cancel(id, { reason: "race" })];
      return Promise.all(calls).then((answers) => (i % 2 === 0 ? answers : [answers[1]!, answers[0]!]) as [Result<{ status: string }>, Result<unknown>]);
    });
    const endings = new Set<string>();
    for (const [i, [cancelled, spoken]] of (await Promise.all(races)).entries()) {
      const job = value(await stub.getJob(held[i]!.id));
      const ending = [cancelAnswer(cancelled), opAnswer(spoken), job.state === "running" ? null : job.outcome];
      const legal = LEGAL[op].find(([, ...rest]) => JSON.stringify(rest) === JSON.stringify(ending));
      expect(legal, `job ${i}: ${JSON.stringify(ending)}`).toBeDefined();
      endings.add(legal![0]);
      if (job.state === "running") expect(job.cancelRequested).toBe(true);
      else expect(job.state).toBe("settled");
    }
    // Both orders of arrival happened.
    expect([...endings].sort()).toEqual(["cancel", "op"]);
  });

  it("a renewal that won the race gets job_cancelled on its next word, and the job settles cancelled", async () => {
    const { stub } = await setup();
    const id = await enqueue(stub, {});
    const { lease } = await claimOne(stub);
    const [renewed] = await Promise.all([stub.renew(id, { token: lease.token }), stub.cancel(id)]);
    const token = value(renewed).lease.token;
    const late = await stub.complete(id, { token, result: 1 });
    expect(opAnswer(late)).toBe("job_cancelled");
    expect(value(await stub.getJob(id))).toMatchObject({ state: "settled", outcome: "cancelled", result: null });
  });
});
