/**
 * Dead-letter copies of big jobs and of many (docs/api.md "Dead letters", "Big payloads"): a copy
 * carries its job's payload whole though it is held in R2, and the job's object outlives the job
 * until its copy is delivered; the receiving lane keeps a copy over 128 KiB in its own bucket (inline
 * without one); a delivery takes a bounded number of bytes in hand; a job failed twice before its
 * copy went owes one copy.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { MAX_PAGE_BYTES } from "../../../src/shared/defaults.js";
import { lanes } from "../../helpers/dependency-lanes.js";
import { claimOne, fireAlarm, inject, sql, TestEntropy, value, type LaneStub } from "../../helpers/lane.js";
import { restartLane } from "../../helpers/restart.js";
import { PAYLOADS_LANE_PREFIX } from "../../helpers/test-worker.js";

type Copy = { id: string; payload: unknown; error: string | null };
type Bucket = { put: (...args: unknown[]) => Promise<unknown> };
type WithPayloads = { parts: { payloads: { bucket: Bucket; sweep: { settled(): Promise<void> } } } };

const owed = (stub: LaneStub) => sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM dead_letter_outbox`).then((r) => r[0]!.n);
const objects = async (name: string) => (await env.PAYLOADS.list({ prefix: `${name}/` })).objects.map((o) => o.key);
const swept = (stub: LaneStub) => runInDurableObject(stub, (lane: Lane) => (lane as unknown as WithPayloads).parts.payloads.sweep.settled());
const firstChar = async (stub: LaneStub, id: string) => (await sql<{ c: string }>(stub, `SELECT substr(payload, 1, 1) AS c FROM jobs WHERE id = ?`, id))[0]!.c;
const big = (kib: number) => ({ blob: "x".repeat(kib * 1024) });

/** A source lane that names `target` its dead-letter lane; `targetPrefix` says whether the target sees PAYLOADS. */
async function setupLanes(sourcePrefix = `${PAYLOADS_LANE_PREFIX}dl`, targetPrefix = `${PAYLOADS_LANE_PREFIX}dlt`) {
  const { clock, lanes: [source] } = await lanes(1, sourcePrefix);
  const name = `${targetPrefix}-${crypto.randomUUID()}`;
  const target = { name, stub: env.LANE.getByName(name) as LaneStub };
  await inject(target.stub, clock, new TestEntropy());
  value(await source!.stub.configure({ deadLetter: { lane: target.name } }));
  return { clock, source: source!, target };
}

async function failPulled(stub: LaneStub, id: string, error: string): Promise<void> {
  const claimed = await claimOne(stub, { kinds: [`k-${id}`] });
  value(await stub.fail(id, { token: claimed.lease.token, error, retry: false }));
}

async function deliver(stub: LaneStub): Promise<void> {
  await fireAlarm(stub);
  await expect.poll(() => owed(stub)).toBe(0);
}

it("a copy of a job whose payload is held in R2 carries it whole, kept in the receiving lane's own bucket", async () => {
  const { source, target } = await setupLanes();
  const payload = big(200);
  value(await source.stub.enqueue({ id: "held", kind: "k-held", payload }));
  expect(await firstChar(source.stub, "held")).toBe("@");
  await failPulled(source.stub, "held", "boom");
  await deliver(source.stub);
  const copyId = `${source.name}.held`;
  const copy = value(await target.stub.getJob(copyId));
  expect(copy.payload as Copy).toMatchObject({ id: "held", payload, error: "boom" });
  expect(await firstChar(target.stub, copyId)).toBe("@");
  expect(await objects(target.name)).toEqual([expect.stringContaining(`/${copyId}/`)]);
  expect(value(await source.stub.info()).stats.deadLettered).toBe(1);
});

it("a held job deleted before its copy went keeps its object until the copy is delivered, then the object goes", async () => {
  const { source, target, clock } = await setupLanes();
  // The receiver refuses every call for now: its schema is newer than this code knows.
  await sql(target.stub, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 0)`);
  const refusing = await restartLane(target.name, target.stub, clock);
  const payload = big(150);
  value(await source.stub.enqueue({ id: "held", kind: "k-held", payload }));
  await failPulled(source.stub, "held", "boom");
  await fireAlarm(source.stub);
  await expect.poll(() => sql<{ tries: number }>(source.stub, `SELECT tries FROM dead_letter_outbox`).then((r) => r[0]?.tries)).toBe(1);
  expect(value(await source.stub.sweep({ settledBefore: clock.now() + 1 })).removed).toBe(1);
  await swept(source.stub);
  expect(await objects(source.name)).toHaveLength(1);
  await sql(refusing, `DELETE FROM schema_migrations WHERE version = 999`);
  const healed = await restartLane(target.name, refusing, clock);
  const [row] = await sql<{ next_at: number }>(source.stub, `SELECT next_at FROM dead_letter_outbox`);
  clock.set(row!.next_at);
  await deliver(source.stub);
  expect((value(await healed.getJob(`${source.name}.held`)).payload as Copy).payload).toEqual(payload);
  await swept(source.stub);
  expect(await objects(source.name)).toEqual([]);
});

it("a receiving lane without PAYLOADS keeps a big copy in its row, whole", async () => {
  const { source, target } = await setupLanes(`${PAYLOADS_LANE_PREFIX}dl`, "plain-dlt");
  const payload = big(200);
  value(await source.stub.enqueue({ id: "held", kind: "k-held", payload }));
  await failPulled(source.stub, "held", "boom");
  await deliver(source.stub);
  const copyId = `${source.name}.held`;
  expect((value(await target.stub.getJob(copyId)).payload as Copy).payload).toEqual(payload);
  expect(await firstChar(target.stub, copyId)).toBe("{");
});

it("a copy the receiving lane could not store is no copy made: the sender tries it again, then it is made", async () => {
  const { source, target, clock } = await setupLanes();
  const bucket = await runInDurableObject(target.stub, (lane: Lane) => {
    const payloads = (lane as unknown as WithPayloads).parts.payloads;
    const real = payloads.bucket;
    payloads.bucket = { ...real, put: () => Promise.reject(new Error("bucket down")) } as Bucket;
    return "swapped";
  });
  expect(bucket).toBe("swapped");
  value(await source.stub.enqueue({ id: "held", kind: "k-held", payload: big(150) }));
  await failPulled(source.stub, "held", "boom");
  await fireAlarm(source.stub);
  await expect.poll(() => sql<{ tries: number }>(source.stub, `SELECT tries FROM dead_letter_outbox`).then((r) => r[0]?.tries)).toBe(1);
  expect((await target.stub.getJob(`${source.name}.held`)).ok).toBe(false);
  expect(value(await source.stub.info()).stats.deadLettered).toBe(0);
  const healed = await restartLane(target.name, target.stub, clock);
  const [row] = await sql<{ next_at: number }>(source.stub, `SELECT next_at FROM dead_letter_outbox`);
  clock.set(row!.next_at);
  await deliver(source.stub);
  expect((value(await healed.getJob(`${source.name}.held`)).payload as Copy).error).toBe("boom");
  expect(value(await source.stub.info()).stats.deadLettered).toBe(1);
});

it("one delivery takes a bounded number of bytes in hand, the rest the next", async () => {
  const { source, target, clock } = await setupLanes("plain-dl", "plain-dlt");
  await sql(target.stub, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 0)`);
  await restartLane(target.name, target.stub, clock);
  const n = 90;
  for (let i = 0; i < n; i++) value(await source.stub.enqueue({ id: `j${i}`, kind: "k", payload: big(100) }));
  expect(value(await source.stub.failLane({ reason: "gone" })).failed).toHaveLength(n);
  await fireAlarm(source.stub);
  // Every copy it took failed (the receiver refuses): those taken count a try.
  await expect.poll(() => sql<{ n: number }>(source.stub, `SELECT COUNT(*) AS n FROM dead_letter_outbox WHERE next_at <= ?`, clock.now()).then((r) => r[0]!.n)).toBeLessThan(n);
  await expect.poll(() => sql<{ n: number }>(source.stub, `SELECT COUNT(*) AS n FROM dead_letter_outbox WHERE tries = 1`).then((r) => r[0]!.n)).toBeGreaterThan(0);
  const [taken] = await sql<{ n: number }>(source.stub, `SELECT COUNT(*) AS n FROM dead_letter_outbox WHERE next_at > ?`, clock.now());
  expect(taken!.n * 100 * 1024).toBeLessThanOrEqual(2 * MAX_PAGE_BYTES + 100 * 1024);
  expect(taken!.n).toBeLessThan(n);
});

it("a job requeued and failed again before its first copy went owes one copy, of its first failure", async () => {
  const { source, target } = await setupLanes("plain-dl", "plain-dlt");
  value(await source.stub.enqueue({ id: "j", kind: "k-j" }));
  await failPulled(source.stub, "j", "first");
  value(await source.stub.requeue("j"));
  await failPulled(source.stub, "j", "second");
  expect(await owed(source.stub)).toBe(1);
  await deliver(source.stub);
  expect((value(await target.stub.getJob(`${source.name}.j`)).payload as Copy).error).toBe("first");
  expect(value(await source.stub.info()).stats.deadLettered).toBe(1);
});
