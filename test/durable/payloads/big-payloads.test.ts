import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { MAX_HELD_PAYLOAD_BYTES } from "../../../src/shared/payload-ref.js";
import type { Lane } from "../../../src/durable/lane.js";
import { T0, TestEntropy, claim, claimOne, inject, refusal, sql, value, type LaneStub } from "../../helpers/lane.js";
import { PAYLOADS_LANE_PREFIX } from "../../helpers/test-worker.js";

/** A pull-only lane that sees the PAYLOADS bucket (its name's prefix: test-worker.ts). */
async function setup(prefix = PAYLOADS_LANE_PREFIX) {
  const name = `${prefix}${crypto.randomUUID()}`;
  const stub: LaneStub = env.PLAIN_LANE.getByName(name);
  const clock = new ManualClock(T0);
  await inject(stub, clock, new TestEntropy());
  return { name, stub, clock };
}

/** A payload whose JSON is about `kib` KiB. */
const big = (kib: number, tag = "a") => ({ tag, blob: "x".repeat(kib * 1024) });

/** The keys the bucket holds for a lane. */
async function objects(name: string): Promise<string[]> {
  return (await env.PAYLOADS.list({ prefix: `${name}/` })).objects.map((o) => o.key);
}

/** Waits for the lane's sweep of owed objects to be done. */
async function swept(stub: LaneStub): Promise<void> {
  await runInDurableObject(stub, async (lane: Lane) => {
    await (lane as unknown as { parts: { payloads: { sweep: { settled(): Promise<void> } } } }).parts.payloads.sweep.settled();
  });
}

describe("big payloads in R2", () => {
  it("keeps a payload over 128 KiB in R2, the row holding only a reference, and answers it whole", async () => {
    const { name, stub } = await setup();
    const payload = big(200);
    const { job } = value(await stub.enqueue({ id: "a", kind: "k", payload }));
    expect(job.payload).toEqual(payload);
    expect(job.payloadRef).toBeNull();
    const [stored] = await sql<{ bytes: number }>(stub, "SELECT length(payload) AS bytes FROM jobs WHERE id = 'a'");
    expect(stored!.bytes).toBeLessThan(200);
    expect(await objects(name)).toHaveLength(1);
    const read = value(await stub.getJob("a"));
    expect(read.payload).toEqual(payload);
    expect(read.payloadRef).toBeNull();
  });

  it("leaves a held payload out of lists and of claims of several jobs, and gives it whole to a claim of one", async () => {
    const { stub } = await setup();
    const payload = big(200);
    value(await stub.enqueue({ id: "a", kind: "k", payload }));
    value(await stub.enqueue({ id: "b", kind: "k", payload: { small: true } }));
    const bytes = JSON.stringify(payload).length;
    const listed = value(await stub.listJobs({})).jobs;
    expect(listed.map((j) => [j.id, j.payload, j.payloadRef])).toEqual([["a", null, { bytes }], ["b", { small: true }, null]]);
    const one = await claimOne(stub, { max: 1 });
    expect(one.payload).toEqual(payload);
    expect(one.payloadRef).toBeNull();
    value(await stub.release("a", { token: one.lease.token }));
    const several = await claim(stub, { max: 2 });
    expect(several.map((j) => [j.id, j.payload, j.payloadRef])).toEqual([["a", null, { bytes }], ["b", { small: true }, null]]);
  });

  it("keeps a result over 128 KiB in R2 under a key of the job and attempt, and answers it whole", async () => {
    const { name, stub } = await setup();
    value(await stub.enqueue({ id: "a", kind: "k", payload: 1 }));
    const { lease } = await claimOne(stub);
    const result = big(300, "r");
    const { job } = value(await stub.complete("a", { token: lease.token, result }));
    expect(job.result).toEqual(result);
    expect(job.resultRef).toBeNull();
    const [stored] = await sql<{ bytes: number }>(stub, "SELECT length(result) AS bytes FROM jobs WHERE id = 'a'");
    expect(stored!.bytes).toBeLessThan(200);
    expect(await objects(name)).toEqual([expect.stringMatching(new RegExp(`^${name}/a/[^/]+/result-1$`))]);
    expect(value(await stub.getJob("a")).result).toEqual(result);
    expect(value(await stub.listJobs({})).jobs[0]!.resultRef).toEqual({ bytes: JSON.stringify(result).length });
  });

  it("compares a held payload by content: the same one (any key order) is a duplicate, another a conflict, neither uploaded", async () => {
    const { name, stub } = await setup();
    const payload = big(200);
    value(await stub.enqueue({ id: "a", kind: "k", payload }));
    const again = value(await stub.enqueue({ id: "a", kind: "k", payload: { blob: payload.blob, tag: "a" } }));
    expect(again.status).toBe("duplicate");
    expect(again.job.payload).toEqual(payload);
    refusal(await stub.enqueue({ id: "a", kind: "k", payload: big(200, "b") }), "job_conflict");
    refusal(await stub.enqueue({ id: "a", kind: "k", payload: { small: 1 } }), "job_conflict");
    await swept(stub);
    expect(await objects(name)).toHaveLength(1);
  });

  it("answers a group commit's duplicate of a held job with its payload whole, beside the group's other callers", async () => {
    const { name, stub } = await setup();
    const payload = big(200);
    value(await stub.enqueue({ id: "a", kind: "k", payload }));
    const texts = [JSON.stringify({ id: "a", kind: "k", payload }), JSON.stringify({ id: "b", kind: "k" })];
    const answers = value(await stub.enqueueGroup(texts)).map((text) => JSON.parse(text));
    expect(answers.map((a) => a.ok && a.value.status)).toEqual(["duplicate", "queued"]);
    expect(answers[0].value.job.payload).toEqual(payload);
    await swept(stub);
    expect(await objects(name)).toHaveLength(1);
  });

  it("deletes the object with its job, and an id enqueued again after starts afresh", async () => {
    const { name, stub, clock } = await setup();
    value(await stub.enqueue({ id: "a", kind: "k", payload: big(200) }));
    const { lease } = await claimOne(stub);
    value(await stub.complete("a", { token: lease.token, result: big(150, "r") }));
    expect(await objects(name)).toHaveLength(2);
    clock.advance(1_000);
    expect(value(await stub.sweep({ settledBefore: clock.now() }))).toEqual({ removed: 1 });
    await swept(stub);
    expect(await objects(name)).toEqual([]);
    expect(await sql(stub, "SELECT key FROM payload_objects WHERE state <> 'marker'")).toEqual([]);
    const fresh = value(await stub.enqueue({ id: "a", kind: "k", payload: big(200, "c") }));
    expect(fresh.status).toBe("queued");
    expect(value(await stub.getJob("a")).payload).toEqual(big(200, "c"));
  });

  it("refuses a payload over 16 MiB with 413 naming the limit, storing nothing", async () => {
    const { name, stub } = await setup();
    const answer = refusal(await stub.enqueue({ id: "a", kind: "k", payload: "x".repeat(MAX_HELD_PAYLOAD_BYTES) }), "payload_too_large");
    expect(answer.message).toContain(String(MAX_HELD_PAYLOAD_BYTES));
    expect(value(await stub.listJobs({})).jobs).toEqual([]);
    expect(await objects(name)).toEqual([]);
  });

  it("without PAYLOADS, refuses a payload over 128 KiB as before (413)", async () => {
    const { stub } = await setup("plain-");
    refusal(await stub.enqueue({ id: "a", kind: "k", payload: big(200) }), "payload_too_large");
  });
});

describe("big payloads in a batch", () => {
  it("refuses a batch item over 128 KiB with 413 naming the item, enqueuing nothing (a big payload goes on its own)", async () => {
    const { name, stub } = await setup();
    const answer = refusal(await stub.enqueueBatch({ jobs: [{ kind: "k", payload: 1 }, { kind: "k", payload: big(200) }] }), "payload_too_large");
    expect(answer.message).toContain("jobs[1]");
    expect(value(await stub.listJobs({})).jobs).toEqual([]);
    expect(await objects(name)).toEqual([]);
  });
});
