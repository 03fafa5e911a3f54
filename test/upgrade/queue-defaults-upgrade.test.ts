/**
 * Migration 27 (queue defaults) on a live lane: a queue an operator set before keeps both its
 * settings as named (which of them its PUTs named was never kept), a queue never set follows the
 * lane's queueDefaults from then on.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import { migrate } from "../../src/durable/store/migrations.js";
import { ManualClock } from "../../src/shared/clock.js";
import { T0, TestEntropy, claim, dropTables, inject, value } from "../helpers/lane.js";
import type { TestableLane } from "../helpers/test-worker.js";

const BEFORE = 26;

describe("upgrade to queue defaults (migration 27)", () => {
  it("keeps an operator's queue settings named and lets the others follow the defaults", async () => {
    const stub = env.PLAIN_LANE.getByName(`upgrade-qd-${crypto.randomUUID()}`) as DurableObjectStub<Lane>;
    const clock = new ManualClock(T0);
    await runInDurableObject(stub, (lane: Lane, state) => {
      (lane as TestableLane).useClock(clock, new TestEntropy());
      dropTables(state.storage);
      expect(migrate(state.storage, T0, BEFORE)).toEqual({ ok: true, version: BEFORE });
      const sql = state.storage.sql;
      // As version 26 wrote them: a PUT of a rate limit alone, a PUT of a concurrency, a queue with jobs and no PUT.
      sql.exec(`INSERT INTO queues (name, concurrency, rate_limit, rate_period_ms, configured) VALUES ('rated', 1, 10, 1000, 1), ('wide', 3, NULL, NULL, 1), ('plain', 1, NULL, NULL, 0)`);
    });
    await evictDurableObject(stub);
    await inject(stub, clock, new TestEntropy());
    const named = await runInDurableObject(stub, (_l, state) =>
      state.storage.sql.exec(`SELECT name, concurrency_named, rate_named FROM queues ORDER BY name`).toArray());
    expect(named).toEqual([
      { name: "plain", concurrency_named: 0, rate_named: 0 },
      { name: "rated", concurrency_named: 1, rate_named: 1 },
      { name: "wide", concurrency_named: 1, rate_named: 1 },
    ]);
    value(await stub.configure({ queueDefaults: { concurrency: 5, rateLimit: { limit: 2, periodMs: 1_000 } } }));
    expect(value(await stub.queueInfo("rated"))).toMatchObject({ concurrency: 1, rateLimit: { limit: 10, periodMs: 1_000 } });
    expect(value(await stub.queueInfo("wide"))).toMatchObject({ concurrency: 3, rateLimit: null });
    expect(value(await stub.queueInfo("plain"))).toMatchObject({ concurrency: 5, rateLimit: { limit: 2, periodMs: 1_000 } });
    for (let i = 0; i < 3; i++) value(await stub.enqueue({ id: `p${i}`, kind: "k", queue: "plain" }));
    expect((await claim(stub)).map((j) => j.id)).toEqual(["p0", "p1"]); // concurrency 5, two tokens
  });
});
