import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_HELD_PAYLOAD_BYTES } from "../../../src/shared/payload-ref.js";
import { claimOne, sql, value } from "../../helpers/lane.js";
import { failUploads, heldLane, objects, owed, swept } from "../../helpers/held-payloads.js";

/** A pull-only lane that sees the PAYLOADS bucket. */
const setup = () => heldLane(env.PLAIN_LANE);

/** A value whose JSON is about `kib` KiB. */
const big = (kib: number, tag = "a") => ({ tag, blob: "x".repeat(kib * 1024) });

describe("batch acks with big results", () => {
  it("keep each result over 128 KiB in R2 and apply every ack in its turn", async () => {
    const { name, stub } = await setup();
    for (const id of ["a", "b", "c"]) value(await stub.enqueue({ id, kind: "k", payload: id }));
    const [a, b, c] = [await claimOne(stub), await claimOne(stub), await claimOne(stub)];
    const answer = value(await stub.acks({ acks: [
      { op: "complete", id: "a", token: a.lease.token, result: big(200, "a") },
      { op: "complete", id: "b", token: b.lease.token, result: { small: true } },
      { op: "fail", id: "c", token: c.lease.token, error: "no" },
    ] }));
    expect(answer.results.map((r) => r.ok)).toEqual([true, true, true]);
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "completed", result: big(200, "a"), resultRef: null });
    expect(value(await stub.getJob("b")).result).toEqual({ small: true });
    const [stored] = await sql<{ bytes: number }>(stub, "SELECT length(result) AS bytes FROM jobs WHERE id = 'a'");
    expect(stored!.bytes).toBeLessThan(200);
    expect(await objects(name)).toEqual([expect.stringMatching(new RegExp(`^${name}/a/[^/]+/result-1$`))]);
    expect(await owed(stub)).toEqual([]);
  });

  it("delete the upload of a completion the fence refuses (a lost lease), and answer it as refused", async () => {
    const { name, stub } = await setup();
    value(await stub.enqueue({ id: "a", kind: "k", payload: 1 }));
    await claimOne(stub);
    const answer = value(await stub.acks({ acks: [{ op: "complete", id: "a", token: "not-the-token", result: big(200) }] }));
    expect(answer.results).toEqual([{ id: "a", ok: false, error: expect.objectContaining({ code: "lease_superseded" }) }]);
    await swept(stub);
    expect(await objects(name)).toEqual([]);
    expect(await owed(stub)).toEqual([]);
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "running", result: null });
  });

  it("answer a failed upload as its item's refusal, the other items applied", async () => {
    const { stub } = await setup();
    for (const id of ["a", "b"]) value(await stub.enqueue({ id, kind: "k", payload: id }));
    const [a, b] = [await claimOne(stub), await claimOne(stub)];
    await failUploads(stub);
    const answer = value(await stub.acks({ acks: [
      { op: "complete", id: "a", token: a.lease.token, result: big(200) },
      { op: "complete", id: "b", token: b.lease.token, result: 2 },
    ] }));
    expect(answer.results).toEqual([
      { id: "a", ok: false, error: expect.objectContaining({ code: "payload_store_unavailable" }) },
      { id: "b", ok: true },
    ]);
    expect(value(await stub.getJob("a")).state).toBe("running");
    expect(value(await stub.getJob("b")).outcome).toBe("completed");
  });

  it("refuse a result over 16 MiB naming that limit, uploading nothing", async () => {
    const { name, stub } = await setup();
    value(await stub.enqueue({ id: "a", kind: "k", payload: 1 }));
    const { lease } = await claimOne(stub);
    const answer = value(await stub.acks({ acks: [{ op: "complete", id: "a", token: lease.token, result: "x".repeat(MAX_HELD_PAYLOAD_BYTES) }] }));
    expect(answer.results).toEqual([{ id: "a", ok: false, error: expect.objectContaining({ code: "payload_too_large", message: expect.stringContaining(String(MAX_HELD_PAYLOAD_BYTES)) }) }]);
    expect(await objects(name)).toEqual([]);
    expect(value(await stub.getJob("a")).state).toBe("running");
  });
});
