import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/shared/errors.js";
import type { Lane } from "../../../src/durable/lane.js";
import { UPLOAD_SWEEP_AFTER_MS } from "../../../src/durable/payloads/payload-store.js";
import { T0, sql } from "../../helpers/lane.js";
import { restartLane } from "../../helpers/restart.js";
import { heldLane, objects, owed, payloadsOf, swept } from "../../helpers/held-payloads.js";

const setup = () => heldLane();

describe("the sweep of objects no job owns", () => {
  it("deletes an object uploaded by an instance killed before its job's row was written, at the next start", async () => {
    const { name, stub, clock } = await setup();
    // The upload of an enqueue, recorded and landed; the instance dies before the insert.
    await runInDurableObject(stub, async (lane: Lane) => {
      unwrap(await payloadsOf(lane).hold("a", "payload", JSON.stringify("x".repeat(200_000))));
    });
    expect(await objects(name)).toHaveLength(1);
    expect(await owed(stub)).toEqual([{ key: expect.stringMatching(/\/a\/[^/]+\/payload$/), state: "uploading" }]);
    // Its alarm is armed to bring a killed lane back to sweep.
    expect(await runInDurableObject(stub, (_lane, state) => state.storage.getAlarm())).toBeLessThanOrEqual(T0 + UPLOAD_SWEEP_AFTER_MS);
    const next = await restartLane(name, stub, clock);
    await swept(next);
    expect(await objects(name)).toEqual([]);
    expect(await owed(next)).toEqual([]);
    expect(unwrap(await next.listJobs({})).jobs).toEqual([]);
  });

  it("keeps an upload whose job's row was written before the kill", async () => {
    const { name, stub, clock } = await setup();
    const payload = { blob: "z".repeat(200_000) };
    unwrap(await stub.enqueue({ id: "a", kind: "pull.only", payload }));
    // The settlement of the upload undone, as if the kill came between the row's write and it.
    const [key] = await objects(name);
    await sql(stub, "INSERT INTO payload_objects (key, state, at) VALUES (?, 'uploading', ?)", key, T0);
    const next = await restartLane(name, stub, clock);
    await swept(next);
    expect(await objects(name)).toEqual([key]);
    expect(await owed(next)).toEqual([]);
    expect(unwrap(await next.getJob("a")).payload).toEqual(payload);
  });

  it("deletes the objects of a job whose row was deleted by an instance killed before it deleted them", async () => {
    const { name, stub, clock } = await setup();
    unwrap(await stub.enqueue({ id: "a", kind: "pull.only", payload: { blob: "z".repeat(200_000) } }));
    expect(await objects(name)).toHaveLength(1);
    // The row's deletion committed (its trigger records the object owed); no sweep ran before the kill.
    await sql(stub, "DELETE FROM jobs WHERE id = 'a'");
    expect(await owed(stub)).toEqual([{ key: expect.any(String), state: "deleting" }]);
    expect(await objects(name)).toHaveLength(1);
    const next = await restartLane(name, stub, clock);
    await swept(next);
    expect(await objects(name)).toEqual([]);
    expect(await owed(next)).toEqual([]);
  });

  it("deletes the payload a debounce replaced, and never the one that replaced it", async () => {
    const { name, stub } = await setup();
    const debounce = { key: "k", delayMs: 1_000 };
    unwrap(await stub.enqueue({ kind: "pull.only", payload: { v: 1, blob: "a".repeat(200_000) }, debounce }));
    const second = unwrap(await stub.enqueue({ kind: "pull.only", payload: { v: 2, blob: "b".repeat(200_000) }, debounce }));
    expect(second.status).toBe("debounced");
    await swept(stub);
    expect(await objects(name)).toHaveLength(1);
    expect(unwrap(await stub.getJob(second.job.id)).payload).toMatchObject({ v: 2 });
  });
});
