import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../../src/shared/defaults.js";
import { claimOne, fireAlarm, refusal, sql, value } from "../../helpers/lane.js";
import { failUploads, heldLane, objects, owed, swept } from "../../helpers/held-payloads.js";

/** A pull-only lane that sees the PAYLOADS bucket. */
const setup = () => heldLane(env.PLAIN_LANE);

/** A value whose JSON is about `kib` KiB. */
const big = (kib: number, tag = "a") => ({ tag, blob: "x".repeat(kib * 1024) });

describe("a 10 MiB payload and result", () => {
  it("are answered whole while the lane's SQLite holds only their references", async () => {
    const { name, stub } = await setup();
    const payload = { blob: "p".repeat(10 * 1024 * 1024) };
    const result = { blob: "r".repeat(10 * 1024 * 1024) };
    value(await stub.enqueue({ id: "a", kind: "k", payload }));
    const claimed = await claimOne(stub);
    expect(claimed.payload).toEqual(payload);
    expect(value(await stub.complete("a", { token: claimed.lease.token, result })).job.result).toEqual(result);
    const [stored] = await sql<{ bytes: number }>(stub, "SELECT length(payload) + length(result) AS bytes FROM jobs WHERE id = 'a'");
    expect(stored!.bytes).toBeLessThan(1_000);
    // Not in any other table either: the whole database is far smaller than one of them.
    const databaseBytes = await runInDurableObject(stub, (_lane, state) => state.storage.sql.databaseSize);
    expect(databaseBytes).toBeLessThan(2 * 1024 * 1024);
    expect(await objects(name)).toHaveLength(2);
    expect(value(await stub.getJob("a"))).toMatchObject({ payload, result, payloadRef: null, resultRef: null });
  });
});

describe("a failed upload", () => {
  it("of a payload leaves no job: 503 payload_store_unavailable, and nothing owed once swept", async () => {
    const { name, stub } = await setup();
    await failUploads(stub);
    const error = refusal(await stub.enqueue({ id: "a", kind: "k", payload: big(200) }), "payload_store_unavailable");
    expect(error.message).toContain(String(MAX_PAYLOAD_BYTES));
    expect(error.message).toContain("R2 is down");
    expect(value(await stub.listJobs({})).jobs).toEqual([]);
    await swept(stub);
    expect(await owed(stub)).toEqual([]);
    expect(await objects(name)).toEqual([]);
    // The same id is free: nothing was written under it.
    expect(value(await stub.enqueue({ id: "a", kind: "k", payload: { small: true } })).status).toBe("queued");
  });

  it("of a result completes nothing: 503, the job still running under its lease, which completes it later", async () => {
    const { stub } = await setup();
    value(await stub.enqueue({ id: "a", kind: "k", payload: 1 }));
    const { lease } = await claimOne(stub);
    await failUploads(stub);
    refusal(await stub.complete("a", { token: lease.token, result: big(200, "r") }), "payload_store_unavailable");
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "running", result: null });
    expect(value(await stub.complete("a", { token: lease.token, result: { small: true } })).job.result).toEqual({ small: true });
  });
});

describe("the objects of deleted jobs", () => {
  it("go with the jobs a purge of their queue deletes, and the others stay", async () => {
    const { name, stub } = await setup();
    value(await stub.enqueue({ id: "a", kind: "k", queue: "q", payload: big(200, "a") }));
    value(await stub.enqueue({ id: "b", kind: "k", queue: "other", payload: big(200, "b") }));
    expect(value(await stub.purgeQueue("q"))).toMatchObject({ purged: 1 });
    await swept(stub);
    expect(await objects(name)).toEqual([expect.stringMatching(new RegExp(`^${name}/b/`))]);
    expect(await owed(stub)).toEqual([]);
    expect(value(await stub.getJob("b")).payload).toEqual(big(200, "b"));
  });

  it("go with the jobs retention deletes, payload and result", async () => {
    const { name, stub, clock } = await setup();
    value(await stub.configure({ retention: { completedMs: 1_000 } }));
    value(await stub.enqueue({ id: "a", kind: "k", payload: big(200) }));
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token, result: big(200, "r") }));
    expect(await objects(name)).toHaveLength(2);
    clock.advance(400 * 24 * 3_600_000);
    await fireAlarm(stub);
    await swept(stub);
    expect(value(await stub.listJobs({})).jobs).toEqual([]);
    expect(await objects(name)).toEqual([]);
    expect(await owed(stub)).toEqual([]);
  });
});
