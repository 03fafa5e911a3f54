/**
 * A lane that declares kinds checks their payloads at every enqueue (single, group commit, batch,
 * debounce replacement, schedule PUT): a mismatch is `invalid_payload` naming each issue's path from
 * the body's root, and nothing is stored. Kinds it does not declare take any JSON.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createLaneClient } from "../../../src/client/rpc.js";
import { QueueError } from "../../../src/shared/errors.js";
import { refusal, rows, setup, value } from "../../helpers/lane.js";

const sleepIssue = { path: ["payload", "ms"], message: expect.any(String) };

describe("payload checks at enqueue", () => {
  it("refuses a declared kind's bad payload with each issue's path, storing nothing", async () => {
    const { stub } = await setup();
    const error = refusal(await stub.enqueue({ id: "j1", kind: "typed.sleep", payload: { ms: -1, note: 3 } }), "invalid_payload");
    expect(error.details).toEqual([sleepIssue, { path: ["payload", "note"], message: expect.any(String) }]);
    expect(error.message).toContain("typed.sleep");
    expect(await rows(stub)).toEqual([]);
    refusal(await stub.enqueue({ kind: "typed.sleep" }), "invalid_payload"); // no payload: null, which is no object
    expect(value(await stub.info()).counts.queued).toBe(0);
  });

  it("stores a good payload as sent: its other fields kept, the schema's defaults not applied", async () => {
    const { stub } = await setup();
    const job = value(await stub.enqueue({ kind: "typed.sleep", payload: { ms: 5, extra: [1] } })).job;
    expect(job.payload).toEqual({ ms: 5, extra: [1] });
    expect(value(await stub.getJob(job.id)).payload).toEqual({ ms: 5, extra: [1] });
  });

  it("lets an undeclared kind take any JSON", async () => {
    const { stub } = await setup();
    for (const payload of [null, 1, "x", { ms: -1 }, [{}]]) expect(value(await stub.enqueue({ kind: "email.send", payload })).status).toBe("queued");
  });

  it("waits for a schema whose check is asynchronous", async () => {
    const { stub } = await setup();
    const error = refusal(await stub.enqueue({ id: "a1", kind: "typed.async", payload: { ms: "soon" } }), "invalid_payload");
    expect(error.details).toEqual([{ path: ["payload", "ms"], message: "ms must be an integer ≥ 0" }]);
    expect(await rows(stub)).toEqual([]);
    expect(value(await stub.enqueue({ id: "a2", kind: "typed.async", payload: { ms: 1 } })).job.payload).toEqual({ ms: 1 });
  });

  it("checks the RPC client's enqueues, grouped or not, and answers a typed refusal", async () => {
    const { stub, name } = await setup();
    for (const groupCommit of [true, false]) {
      const lane = createLaneClient(env.PLAIN_LANE, { groupCommit }).lane(name);
      for (const kind of ["typed.sleep", "typed.async"]) {
        const thrown = await lane.enqueue({ kind, payload: { ms: "x" } }).catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(QueueError);
        expect((thrown as QueueError).code).toBe("invalid_payload");
        expect((thrown as QueueError).details).toEqual([sleepIssue]);
      }
      // Among a group's other callers, a refusal is its own.
      const [good, bad, later] = await Promise.allSettled([
        lane.enqueue({ kind: "typed.sleep", payload: { ms: 1 } }),
        lane.enqueue({ kind: "typed.sleep", payload: { ms: -2 } }),
        lane.enqueue({ kind: "typed.async", payload: { ms: 2 } }),
      ]);
      expect(good.status).toBe("fulfilled");
      expect(bad.status === "rejected" && (bad.reason as QueueError).code).toBe("invalid_payload");
      expect(later.status).toBe("fulfilled");
    }
    expect((await rows(stub)).map((r) => JSON.parse(r.payload))).toEqual([{ ms: 1 }, { ms: 2 }, { ms: 1 }, { ms: 2 }]);
  });

  it("refuses a whole batch for one bad item, its path naming the item", async () => {
    const { stub } = await setup();
    const jobs = [{ kind: "typed.sleep", payload: { ms: 1 } }, { kind: "typed.sleep", payload: { ms: "1" } }, { kind: "any", payload: 1 }, { kind: "typed.async", payload: {} }];
    const error = refusal(await stub.enqueueBatch({ jobs }), "invalid_payload");
    expect(error.details).toEqual([
      { path: ["jobs", 1, "payload", "ms"], message: expect.any(String) },
      { path: ["jobs", 3, "payload", "ms"], message: "ms must be an integer ≥ 0" },
    ]);
    expect(await rows(stub)).toEqual([]);
    const fixed = [jobs[0]!, { kind: "typed.sleep", payload: { ms: 2 } }, jobs[2]!, { kind: "typed.async", payload: { ms: 3 } }];
    expect(value(await stub.enqueueBatch({ jobs: fixed })).results.map((r) => r.status)).toEqual(["queued", "queued", "queued", "queued"]);
  });

  it("checks a debounce replacement, leaving the queued job as it was", async () => {
    const { stub } = await setup();
    const debounce = { key: "k1", delayMs: 1000 };
    const first = value(await stub.enqueue({ kind: "typed.sleep", payload: { ms: 1 }, debounce })).job;
    refusal(await stub.enqueue({ kind: "typed.sleep", payload: { ms: -1 }, debounce }), "invalid_payload");
    expect(value(await stub.getJob(first.id))).toMatchObject({ payload: { ms: 1 }, runAt: first.runAt });
    expect(value(await stub.enqueue({ kind: "typed.sleep", payload: { ms: 9 }, debounce })).status).toBe("debounced");
    expect((await rows(stub)).map((r) => JSON.parse(r.payload))).toEqual([{ ms: 9 }]);
  });

  it("checks a schedule's job at its PUT, changing nothing", async () => {
    const { stub } = await setup();
    const error = refusal(await stub.putSchedule("every", { everyMs: 60_000, job: { kind: "typed.sleep", payload: { ms: -1 } } }), "invalid_payload");
    expect(error.details).toEqual([{ path: ["job", "payload", "ms"], message: expect.any(String) }]);
    refusal(await stub.putSchedule("every", { everyMs: 60_000, job: { kind: "typed.async", payload: {} } }), "invalid_payload");
    refusal(await stub.getSchedule("every"), "schedule_not_found");
    value(await stub.putSchedule("every", { everyMs: 60_000, job: { kind: "typed.sleep", payload: { ms: 1 } } }));
    refusal(await stub.putSchedule("every", { everyMs: 60_000, job: { kind: "typed.sleep", payload: {} } }), "invalid_payload");
    expect(value(await stub.getSchedule("every")).job).toMatchObject({ payload: { ms: 1 } });
  });
});
