/**
 * Requeue starts a job's new life (docs/api.md "Requeue"): a TTL counts from the requeue, and a
 * debounced job whose key a newer queued job holds comes back without its key, the newer one keeping it.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { REQUEUE_SQL } from "../../../src/durable/store/job-statements.js";
import { T0, claim, enqueue, fireAlarm, row, setup, value, wake } from "../../helpers/lane.js";

const debounce = { key: "d", delayMs: 1_000 };

describe("requeue of a debounced job", () => {
  it("whose key a newer queued job holds: requeued without its key; the newer job keeps it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "old", debounce });
    value(await stub.cancel("old"));
    expect(value(await stub.enqueue({ id: "new", kind: "k", debounce })).status).toBe("queued");

    const requeued = value(await stub.requeue("old")).job;
    expect(requeued).toMatchObject({ id: "old", state: "queued", outcome: null, attempts: 0 });
    expect((await row(stub, "old"))!.debounce_key).toBeNull();
    expect((await row(stub, "new"))!.debounce_key).toBe("d");
    // The key's next enqueue replaces the newer job, not the requeued one.
    const next = value(await stub.enqueue({ kind: "k", payload: { n: 3 }, debounce }));
    expect(next).toMatchObject({ status: "debounced", job: { id: "new", payload: { n: 3 } } });
    expect(value(await stub.getJob("old")).payload).toBeNull();
    expect(value(await stub.info()).counts).toMatchObject({ queued: 2, cancelled: 0 });
  });

  it("expired while a newer job of its key is queued: requeued the same way", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "old", ttlMs: 1_000, debounce: { key: "d", delayMs: 0 } });
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(value(await stub.getJob("old"))).toMatchObject({ state: "settled", error: "expired" });
    await enqueue(stub, { id: "new", debounce });

    expect(value(await stub.requeue("old")).job).toMatchObject({ id: "old", state: "queued" });
    expect((await row(stub, "old"))!.debounce_key).toBeNull();
    expect((await row(stub, "new"))!.debounce_key).toBe("d");
  });

  it("whose key no queued job holds: requeued with it, and the key's next enqueue replaces it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "old", debounce });
    value(await stub.cancel("old"));
    value(await stub.requeue("old"));
    expect((await row(stub, "old"))!.debounce_key).toBe("d");
    expect(value(await stub.enqueue({ kind: "k", payload: { n: 2 }, debounce }))).toMatchObject({ status: "debounced", job: { id: "old" } });
  });
  it("looks for the key's holder through the debounce index, never the whole table", async () => {
    const { stub } = await setup();
    value(await stub.enqueueBatch({ jobs: Array.from({ length: 20 }, (_, i) => ({ kind: "k", debounce: { key: `d${i % 4}`, delayMs: 0 } })) }));
    const plan = await runInDurableObject(stub, (_lane, state) =>
      state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${REQUEUE_SQL}`, 1, T0).toArray().map((r) => r.detail),
    );
    expect(plan.filter((detail) => /\bSCAN (jobs|holder)\b/.test(detail)), plan.join("\n")).toEqual([]);
    expect(plan.join("\n")).toMatch(/SEARCH holder USING (COVERING )?INDEX jobs_debounce/);
  });
});

describe("requeue of an expired job", () => {
  it("gives it expiresAt = now + ttlMs: it is not expired again at once, and runs", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "t", ttlMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    expect(value(await stub.info()).stats).toMatchObject({ expired: 1 });

    clock.advance(5_000);
    const requeued = value(await stub.requeue("t")).job;
    expect(requeued).toMatchObject({ state: "queued", runAt: T0 + 6_000, expiresAt: T0 + 7_000 });
    expect(await wake(stub)).toBe(T0 + 7_000); // the new expiry is the wake term
    await fireAlarm(stub);
    expect(value(await stub.getJob("t")).state).toBe("queued");
    expect(value(await stub.info()).stats).toMatchObject({ expired: 1 });
    expect((await claim(stub)).map((j) => j.id)).toEqual(["t"]);
  });

  it("expires it again only at now + ttlMs, counted once per expiry", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "t", ttlMs: 1_000 });
    clock.advance(1_000);
    await fireAlarm(stub);
    clock.advance(5_000);
    value(await stub.requeue("t"));
    clock.advance(999);
    await fireAlarm(stub);
    expect(value(await stub.getJob("t")).state).toBe("queued");
    clock.advance(1);
    expect(await fireAlarm(stub)).toBe(true);
    expect(value(await stub.getJob("t"))).toMatchObject({ state: "settled", outcome: "cancelled", error: "expired", settledAt: T0 + 7_000 });
    expect(value(await stub.info()).stats).toMatchObject({ expired: 2, cancelled: 2 });
  });

  it("leaves a job without a TTL without an expiry", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "t" });
    value(await stub.cancel("t"));
    expect(value(await stub.requeue("t")).job.expiresAt).toBeNull();
  });
});
