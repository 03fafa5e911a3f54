import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/shared/errors.js";
import { setup, START } from "../../helpers/dispatch.js";

describe("demo.batch", () => {
  it("completes each job with the batch's size and its place, after 200 ms without ten", async () => {
    const { lane, clock, settled, get } = await setup();
    const { results } = unwrap(await lane.enqueueBatch({ jobs: [{ kind: "demo.batch" }, { kind: "demo.batch", payload: { fail: false } }, { kind: "demo.batch" }] }));
    expect((await get(results[0]!.id)).state).toBe("queued");
    expect(await lane.storedAlarm()).toBe(START + 200);
    clock.set(START + 200);
    await runDurableObjectAlarm(lane);
    const done = await Promise.all(results.map((r) => settled(r.id)));
    expect(done.map((j) => j.result)).toEqual([0, 1, 2].map((index) => ({ batchSize: 3, index })));
  });

  it("starts ten at once, and a job that asks fails alone on every attempt", async () => {
    const { lane, clock, settled, waitFor, get } = await setup();
    const jobs = Array.from({ length: 10 }, (_, i) => ({ kind: "demo.batch", payload: i === 4 ? { fail: true } : {}, maxAttempts: 2, backoff: { baseMs: 100, maxMs: 100 } }));
    const { results } = unwrap(await lane.enqueueBatch({ jobs }));
    expect((await settled(results[9]!.id)).result).toEqual({ batchSize: 10, index: 9 });
    const failing = results[4]!.id;
    await waitFor(failing, (e) => e.from === "running" && e.to === "queued");
    expect((await get(failing)).error).toBe("demo.batch: failing as asked");
    clock.set((await get(failing)).runAt + 200);
    await runDurableObjectAlarm(lane);
    const failed = await settled(failing);
    expect([failed.outcome, failed.error, failed.attempts]).toEqual(["failed", "demo.batch: failing as asked", 2]);
  });
});
