/**
 * What a settlement answers and leaves for the wake, on a manual clock: a completion's waitpoint
 * counts its waiters once they were told (those it released wait no more); a wake term the cache
 * held that the rows no longer back is read again once the alarm finds nothing due.
 */
import { describe, expect, it } from "vitest";
import { T0, enqueue, fireAlarm, setup, sql, value, wake } from "../../helpers/lane.js";

describe("a waitpoint's settlement", () => {
  it("answers the completed waitpoint without the waiters it released", async () => {
    const { stub } = await setup();
    value(await stub.createWaitpoint({ id: "w" }));
    await enqueue(stub, { id: "dependent", kind: "email.send", dependsOn: [{ waitpoint: "w" }] });
    expect(value(await stub.getWaitpoint("w")).waiters).toBe(1);
    const done = value(await stub.completeWaitpoint("w", { result: 1 }));
    expect(done.waitpoint).toMatchObject({ state: "completed", waiters: 0 });
    expect(value(await stub.getJob("dependent")).state).toBe("queued");
  });

  it("reads its wake again when the alarm finds no timeout due where the cached term said one was", async () => {
    const { stub, clock } = await setup();
    value(await stub.createWaitpoint({ id: "gone", timeoutMs: 5_000 }));
    expect(await wake(stub)).toBe(T0 + 5_000);
    // The term is cached; the row goes behind its back (as a write that forgot to say so would).
    await sql(stub, "DELETE FROM waitpoints WHERE id = 'gone'");
    clock.set(T0 + 5_000);
    await fireAlarm(stub);
    expect(await wake(stub)).toBeNull();
  });
});
