/**
 * A new job is answered as built from its spec, never read back (shared/job-spec.ts `enqueuedJob`),
 * by the lane and by a caller that reads the lane's answer text (shared/enqueue-text.ts). That one
 * builder must be the stored row's job (the store's `toJob`), key for key: the enqueue answers what
 * a read of the job answers after it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { toJob } from "../../../src/durable/store/job-row.js";
import { parseEnqueue } from "../../../src/shared/enqueue-input.js";
import { readEnqueueAnswer } from "../../../src/shared/enqueue-text.js";
import { ok } from "../../../src/shared/errors.js";
import { enqueuedJob, toSpec } from "../../../src/shared/job-spec.js";
import { duration, names, requestFields, traceparents } from "../../helpers/enqueue-requests.js";
import { PULL_KIND } from "../../helpers/http.js";
import { row, setup, T0, value } from "../../helpers/lane.js";

/** Any new job's request but dependencies (a job with them is answered as its insert left it, not built). */
const request = fc
  .record(
    {
      ...requestFields,
      ttlMs: duration,
      debounce: fc.record({ key: names, delayMs: fc.nat(10_000), maxDelayMs: fc.integer({ min: 10_000, max: 100_000 }) }, { requiredKeys: ["key", "delayMs"] }),
      traceparent: traceparents,
    },
    { requiredKeys: [] },
  )
  .filter((r) => r.runAt === undefined || r.delayMs === undefined)
  // Plain JSON objects: a stub's call clones its argument, which refuses fast-check's null-prototype records.
  .map((r) => JSON.parse(JSON.stringify({ kind: PULL_KIND, ...r })) as Record<string, unknown> & { kind: string });

describe("a new job built from its spec", () => {
  it("is the stored row's job, key for key, and the job every reader of the lane's answer builds", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (sent) => {
        // One lane answers the object call, the other the text call: both at T0, the same id.
        const [a, b] = [await setup(), await setup()];
        const answer = value(await a.stub.enqueue(sent));
        const id = answer.job.id;
        const stored = await row(a.stub, id);
        expect(stored).toBeDefined();
        const read = value(parseEnqueue(sent));
        const built = enqueuedJob(value(toSpec(read, T0, () => id, a.name)), T0, a.name);
        expect(JSON.stringify(built)).toBe(JSON.stringify(toJob(stored!, a.name)));
        expect(JSON.stringify(answer)).toBe(JSON.stringify({ status: "queued", job: built }));

        const text = JSON.stringify({ ...sent, id });
        const answerText = await b.stub.enqueueText(text);
        const expected = JSON.stringify(ok({ status: "queued", job: { ...built, lane: b.name } }));
        // From the request text read again, and from the request as the caller read and checked it.
        expect(JSON.stringify(readEnqueueAnswer(answerText, b.name, text))).toBe(expected);
        expect(JSON.stringify(readEnqueueAnswer(answerText, b.name, value(parseEnqueue(JSON.parse(text)))))).toBe(expected);
      }),
      { numRuns: 30 },
    );
  });
});
