/**
 * The lane's `queueDefaults` (docs/api.md "The lane", "Queues"): a queue setting its PUTs never named
 * follows the defaults as they are now, every such queue at once; a named one stays; each queue
 * keeps its own bucket; GET and PUT of a queue show the effective values.
 */
import { describe, expect, it } from "vitest";
import { claim, enqueue, evict, refusal, setup, sql, value } from "../../helpers/lane.js";

const rate = (limit: number, periodMs: number) => ({ limit, periodMs });

describe("queueDefaults", () => {
  it("are concurrency 1 and no rate limit until set, and a PATCH merges them", async () => {
    const { stub } = await setup();
    expect(value(await stub.info()).queueDefaults).toEqual({ concurrency: 1, rateLimit: null });
    expect(value(await stub.configure({ queueDefaults: { concurrency: 3 } })).queueDefaults).toEqual({ concurrency: 3, rateLimit: null });
    expect(value(await stub.configure({ queueDefaults: { rateLimit: rate(5, 1_000) } })).queueDefaults).toEqual({ concurrency: 3, rateLimit: rate(5, 1_000) });
    expect(value(await stub.configure({ paused: false })).queueDefaults).toEqual({ concurrency: 3, rateLimit: rate(5, 1_000) });
    expect(value(await stub.configure({ queueDefaults: { rateLimit: null } })).queueDefaults).toEqual({ concurrency: 3, rateLimit: null });
  });

  it("change every queue that never named its concurrency at once, with jobs or not, new or old", async () => {
    const { stub } = await setup();
    for (const id of ["a1", "a2", "a3", "a4"]) await enqueue(stub, { id, queue: "a" });
    expect((await claim(stub)).map((j) => j.id)).toEqual(["a1"]);
    value(await stub.configure({ queueDefaults: { concurrency: 3 } }));
    expect(value(await stub.queueInfo("a"))).toMatchObject({ concurrency: 3, running: 1, queued: 3 });
    expect(value(await stub.queueInfo("idle")).concurrency).toBe(3);
    expect((await claim(stub)).map((j) => j.id)).toEqual(["a2", "a3"]);
    // A queue first seen after the change follows it too.
    for (const id of ["b1", "b2", "b3", "b4"]) await enqueue(stub, { id, queue: "b" });
    expect((await claim(stub)).map((j) => j.id)).toEqual(["b1", "b2", "b3"]);
    value(await stub.configure({ queueDefaults: { concurrency: 4 } }));
    expect((await claim(stub)).map((j) => j.id)).toEqual(["a4", "b4"]);
  });

  it("leave a setting a queue's PUT named, and move the one it did not", async () => {
    const { stub } = await setup();
    value(await stub.putQueue("named", { concurrency: 2 }));
    expect(value(await stub.putQueue("rated", { rateLimit: rate(100, 1_000) }))).toMatchObject({ concurrency: 1, rateLimit: rate(100, 1_000) });
    value(await stub.configure({ queueDefaults: { concurrency: 5, rateLimit: rate(7, 60_000) } }));
    expect(value(await stub.queueInfo("named"))).toMatchObject({ concurrency: 2, rateLimit: rate(7, 60_000) });
    expect(value(await stub.queueInfo("rated"))).toMatchObject({ concurrency: 5, rateLimit: rate(100, 1_000) });
    // A PUT that names one setting keeps following the defaults for the other, and answers the effective values.
    expect(value(await stub.putQueue("fresh", { rateLimit: null }))).toMatchObject({ concurrency: 5, rateLimit: null });
    value(await stub.configure({ queueDefaults: { concurrency: 6 } }));
    expect(value(await stub.queueInfo("fresh"))).toMatchObject({ concurrency: 6, rateLimit: null });
    expect(value(await stub.queueInfo("named")).concurrency).toBe(2);
  });

  it("give every queue a bucket of its own under a default rate limit", async () => {
    const { stub, clock } = await setup();
    value(await stub.configure({ queueDefaults: { concurrency: 10, rateLimit: rate(2, 1_000) } }));
    for (const q of ["a", "b"]) for (let i = 0; i < 4; i++) await enqueue(stub, { id: `${q}${i}`, queue: q });
    expect((await claim(stub)).map((j) => j.id).sort()).toEqual(["a0", "a1", "b0", "b1"]);
    expect(await claim(stub)).toEqual([]);
    clock.advance(500); // one token each
    expect((await claim(stub)).map((j) => j.id).sort()).toEqual(["a2", "b2"]);
  });

  it("hold across a restart: a queue made after it follows them", async () => {
    const fixture = await setup();
    value(await fixture.stub.configure({ queueDefaults: { concurrency: 2 } }));
    await evict(fixture);
    for (const id of ["c1", "c2", "c3"]) await enqueue(fixture.stub, { id, queue: "c" });
    expect((await claim(fixture.stub)).map((j) => j.id)).toEqual(["c1", "c2"]);
    expect(value(await fixture.stub.info()).queueDefaults).toEqual({ concurrency: 2, rateLimit: null });
  });

  it("back at their defaults, leave the queues' rows as before", async () => {
    const { stub } = await setup();
    value(await stub.configure({ queueDefaults: { concurrency: 4, rateLimit: rate(3, 1_000) } }));
    await enqueue(stub, { id: "x", queue: "x" });
    value(await stub.configure({ queueDefaults: { concurrency: 1, rateLimit: null } }));
    await enqueue(stub, { id: "y", queue: "y" });
    const rows = await sql<{ name: string; concurrency: number; rate_limit: number | null }>(stub, `SELECT name, concurrency, rate_limit FROM queues ORDER BY name`);
    expect(rows).toEqual([{ name: "x", concurrency: 1, rate_limit: null }, { name: "y", concurrency: 1, rate_limit: null }]);
  });

  it("refuse a value out of range or a field they do not have, changing nothing", async () => {
    const { stub } = await setup();
    value(await stub.configure({ queueDefaults: { concurrency: 2 } }));
    for (const queueDefaults of [{ concurrency: 0 }, { concurrency: 1001 }, { rateLimit: rate(0, 1_000) }, { rateLimit: rate(1, 10) }, { burst: 1 }, null]) {
      const refused = refusal(await stub.configure({ queueDefaults, concurrency: 9 }), "invalid_request");
      expect(JSON.stringify(refused.details)).toContain("queueDefaults");
    }
    const info = value(await stub.info());
    expect(info.queueDefaults).toEqual({ concurrency: 2, rateLimit: null });
    expect(info.concurrency).not.toBe(9);
  });
});
