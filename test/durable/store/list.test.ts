import { describe, expect, it } from "vitest";
import type { Job } from "../../../src/shared/job.js";
import { T0, claimOne, enqueue, refusal, rows, setup, value, type LaneStub } from "../../helpers/lane.js";

/** Five jobs in every state a pull lane reaches: a queued, b running, c completed, d failed, e cancelled. */
async function mixedLane(stub: LaneStub): Promise<void> {
  for (const [id, kind, queue] of [["a", "x", "q1"], ["b", "y", "q1"], ["c", "x", null], ["d", "y", "q2"], ["e", "x", "q2"]] as const) {
    await enqueue(stub, { id, kind, queue, maxAttempts: 1, priority: id === "a" ? -1 : 0 });
  }
  const ids = new Map<string, string>();
  for (let i = 0; i < 3; i++) {
    const job = await claimOne(stub, { kinds: i === 2 ? ["y"] : undefined });
    ids.set(job.id, job.lease.token);
  }
  // claimed: b (q1 head by priority), c, then d (kind y): complete c, fail d, cancel queued e
  expect([...ids.keys()].sort()).toEqual(["b", "c", "d"]);
  value(await stub.complete("c", { token: ids.get("c")! }));
  value(await stub.fail("d", { token: ids.get("d")!, error: "boom" }));
  value(await stub.cancel("e"));
}

const idsOf = (jobs: Job[]) => jobs.map((j) => j.id);

describe("list", () => {
  it("lists every job in enqueue order", async () => {
    const { stub } = await setup();
    await mixedLane(stub);
    const page = value(await stub.listJobs({}));
    expect(idsOf(page.jobs)).toEqual(["a", "b", "c", "d", "e"]);
    expect(page.cursor).toBeNull();
  });

  it.each([
    [{ state: "queued" }, ["a"]],
    [{ state: "running" }, ["b"]],
    [{ state: "settled" }, ["c", "d", "e"]],
    [{ outcome: "failed" }, ["d"]],
    [{ state: "settled", outcome: "cancelled" }, ["e"]],
    [{ kind: "x" }, ["a", "c", "e"]],
    [{ queue: "q2" }, ["d", "e"]],
    [{ kind: "y", queue: "q1" }, ["b"]],
  ])("filters by %o", async (filter, expected) => {
    const { stub } = await setup();
    await mixedLane(stub);
    expect(idsOf(value(await stub.listJobs(filter)).jobs)).toEqual(expected);
  });

  it("pages through every match with the cursor, then answers a null cursor", async () => {
    const { stub } = await setup();
    for (let i = 0; i < 7; i++) await enqueue(stub, { id: `j${i}`, kind: i % 2 === 0 ? "even" : "odd" });
    const seen: string[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = value(await stub.listJobs({ kind: "even", limit: 2, ...(cursor ? { cursor } : {}) }));
      seen.push(...idsOf(page.jobs));
      cursor = page.cursor;
      pages++;
    } while (cursor !== null);
    expect(seen).toEqual(["j0", "j2", "j4", "j6"]);
    expect(pages).toBe(2);
  });

  it.each([
    ["a limit of 0", { limit: 0 }],
    ["a limit of 501", { limit: 501 }],
    ["an unknown state", { state: "sleeping" }],
    ["a cursor it never gave", { cursor: "nope" }],
    ["a kind outside the name pattern", { kind: "a b" }],
  ])("refuses %s as invalid_request", async (_what, query) => {
    const { stub } = await setup();
    refusal(await stub.listJobs(query), "invalid_request");
  });

  it("answers job_not_found for an unknown id and invalid_request for an id outside the pattern", async () => {
    const { stub } = await setup();
    refusal(await stub.getJob("nope"), "job_not_found");
    refusal(await stub.getJob("no pe"), "invalid_request");
  });
});

describe("counts", () => {
  it("counts jobs by state and outcome", async () => {
    const { stub } = await setup();
    await mixedLane(stub);
    expect(value(await stub.info()).counts).toEqual({
      blocked: 0,
      queued: 1,
      running: 1,
      completing: 0,
      completed: 1,
      failed: 1,
      cancelled: 1,
      interrupted: 0,
    });
  });
});

describe("configure", () => {
  it("answers the lane with its new settings, keeping what the patch leaves out", async () => {
    const { stub, name } = await setup();
    const info = value(await stub.configure({ concurrency: 3 }));
    expect(info).toMatchObject({ lane: name, concurrency: 3, paused: false });
    expect(value(await stub.configure({ paused: true }))).toMatchObject({ concurrency: 3, paused: true });
  });

  it.each([[{ concurrency: 0 }], [{ concurrency: 1001 }], [{ paused: "yes" }], [{ colour: 1 }]])(
    "refuses %o as invalid_request, changing nothing",
    async (patch) => {
      const { stub } = await setup();
      refusal(await stub.configure(patch), "invalid_request");
      expect(value(await stub.info())).toMatchObject({ concurrency: 10, paused: false });
    },
  );
});

describe("sweep", () => {
  it("deletes settled jobs settled before the instant, and nothing else", async () => {
    const { stub, clock } = await setup();
    await mixedLane(stub); // c, d, e settled at T0
    clock.advance(1_000);
    await enqueue(stub, { id: "f" });
    value(await stub.cancel("f")); // settled at T0 + 1000
    expect(value(await stub.sweep({ settledBefore: T0 + 1_000 })).removed).toBe(3);
    expect((await rows(stub)).map((r) => r.id)).toEqual(["a", "b", "f"]);
  });

  it("deletes at most limit jobs, oldest settled first", async () => {
    const { stub, clock } = await setup();
    for (const id of ["a", "b", "c"]) {
      await enqueue(stub, { id });
      value(await stub.cancel(id));
      clock.advance(10);
    }
    expect(value(await stub.sweep({ settledBefore: T0 + 1_000, limit: 2 })).removed).toBe(2);
    expect((await rows(stub)).map((r) => r.id)).toEqual(["c"]);
  });

  it("frees a swept id for a new job", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a", payload: 1 });
    value(await stub.cancel("a"));
    value(await stub.sweep({ settledBefore: T0 + 1 }));
    expect(value(await stub.enqueue({ id: "a", kind: "other" })).status).toBe("queued");
  });

  it("refuses a sweep without settledBefore as invalid_request", async () => {
    const { stub } = await setup();
    refusal(await stub.sweep({}), "invalid_request");
  });
});
