/**
 * Dead letters over HTTP (docs/api.md "Dead letters"): the setting on PATCH and GET, its refusals, a
 * sharded dead-letter lane, copies' ids (longer than a name) on every route that takes a job id, and
 * `deadLettered` in the lane's stats and metrics.
 */
import { expect, it } from "vitest";
import { shardOf } from "../../src/shared/shards.js";
import { call, expectError, get, post, setup } from "../helpers/http.js";
import { fireAlarm, sql } from "../helpers/lane.js";
import { setupSharded } from "../helpers/shards.js";

const patch = (lane: string, json: unknown) => call("PATCH", `/v1/lanes/${lane}`, { json });

it("PATCH sets and clears deadLetter, and GET says it (default null)", async () => {
  const source = await setup();
  expect((await get(source.base)).body.deadLetter).toBeNull();
  const set = await patch(source.lane, { deadLetter: { lane: "graveyard" } });
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  expect(set.body.deadLetter).toEqual({ lane: "graveyard" });
  expect(set.body.stats.deadLettered).toBe(0);
  expect((await patch(source.lane, { concurrency: 4 })).body.deadLetter).toEqual({ lane: "graveyard" });
  expect((await patch(source.lane, { deadLetter: null })).body.deadLetter).toBeNull();
});

it.each([
  ["the lane itself", (lane: string) => ({ lane })],
  ["a name that breaks the pattern", () => ({ lane: "a b" })],
  ["a name too long", () => ({ lane: "x".repeat(129) })],
  ["an unknown field", () => ({ lane: "graveyard", queue: "q" })],
  ["no lane", () => ({})],
  ["not an object", () => "graveyard"],
])("refuses a deadLetter naming %s: 400 naming the field, nothing changed", async (_what, deadLetter) => {
  const source = await setup();
  const before = (await get(source.base)).body;
  const error = expectError(await patch(source.lane, { concurrency: 3, deadLetter: deadLetter(source.lane) }), 400, "invalid_request");
  expect(JSON.stringify(error.details ?? error.message)).toContain("deadLetter");
  const after = (await get(source.base)).body;
  expect({ concurrency: after.concurrency, deadLetter: after.deadLetter }).toEqual({ concurrency: before.concurrency, deadLetter: null });
});

it("refuses a sharded lane naming itself before any shard changes", async () => {
  const source = await setupSharded(3);
  expectError(await patch(source.lane, { concurrency: 9, deadLetter: { lane: source.lane } }), 400, "invalid_request");
  expect((await get(source.base)).body).toMatchObject({ deadLetter: null, concurrency: 10 });
});

it("copies go to the shard of their id in a sharded dead-letter lane, each readable by its id", async () => {
  const source = await setup();
  const target = await setupSharded(4);
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  const ids = Array.from({ length: 8 }, (_, i) => `j${i}`);
  for (const id of ids) expect((await post(`${source.base}/jobs`, { id, kind: "email.send" })).status).toBe(201);
  expect((await post(`${source.base}/fail`, { reason: "gone" })).body.failed).toHaveLength(8);
  await fireAlarm(source.stub);
  await expect.poll(() => sql<{ n: number }>(source.stub, `SELECT COUNT(*) AS n FROM dead_letter_outbox`).then((r) => r[0]!.n)).toBe(0);
  for (const id of ids) {
    const copyId = `${source.lane}.${id}`;
    const read = await get(`${target.base}/jobs/${copyId}`);
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body).toMatchObject({ kind: "deadletter", payload: { lane: source.lane, id, outcome: "failed", error: "gone" } });
    const onShard = await target.shard(shardOf(copyId, 4)).getJob(copyId);
    expect(onShard.ok).toBe(true);
  }
  expect((await get(target.base)).body.counts.queued).toBe(8);
  expect((await get(source.base)).body.stats.deadLettered).toBe(8);
  const metrics = await get(`${source.base}/metrics`);
  expect(metrics.body).toContain(`switchyard_jobs_total{lane="${source.lane}",event="deadLettered"} 8`);
});

it("every route that takes a job id takes a copy's id longer than a name, while no enqueue may choose one", async () => {
  const source = await setup();
  const target = await setup();
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  const id = `fire-${"y".repeat(100)}`;
  expect((await post(`${source.base}/jobs`, { id, kind: "email.send" })).status).toBe(201);
  await post(`${source.base}/fail`, { reason: "gone" });
  await fireAlarm(source.stub);
  const copyId = `${source.lane}.${id}`;
  expect(copyId.length).toBeGreaterThan(128);
  await expect.poll(async () => (await get(`${target.base}/jobs/${copyId}`)).status).toBe(200);
  expect((await get(`${target.base}/jobs/${copyId}/dependents`)).status).toBe(200);
  expect((await get(`${target.base}/jobs/${copyId}/checkpoints`)).status).toBe(200);
  const cancelled = await post(`${target.base}/jobs/${copyId}/cancel`, {});
  expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
  expect((await post(`${target.base}/jobs/${copyId}/requeue`)).status).toBe(200);
  // A fire's id in a copy's: `<lane>.<schedule>@<T>`.
  expect((await get(`${target.base}/jobs/${source.lane}.nightly@1795936561938`)).status).toBe(404);
  expectError(await post(`${target.base}/jobs`, { id: copyId, kind: "email.send" }), 400, "invalid_request");
  expectError(await post(`${target.base}/jobs`, { id: `${source.lane}.nightly@1`, kind: "email.send" }), 400, "invalid_request");
});

it("a consumer of copies writes checkpoints and acks under a copy's id longer than a name", async () => {
  const source = await setup();
  const target = await setup();
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  const id = `long-${"z".repeat(100)}`;
  expect((await post(`${source.base}/jobs`, { id, kind: "email.send" })).status).toBe(201);
  await post(`${source.base}/fail`, { reason: "gone" });
  await fireAlarm(source.stub);
  const copyId = `${source.lane}.${id}`;
  await expect.poll(async () => (await get(`${target.base}/jobs/${copyId}`)).status).toBe(200);
  const claimed = await post(`${target.base}/claims`, { kinds: ["deadletter"], leaseMs: 30_000 });
  expect(claimed.body.jobs.map((j: { id: string }) => j.id)).toEqual([copyId]);
  const token = claimed.body.jobs[0].lease.token;
  const saved = await call("PUT", `${target.base}/jobs/${copyId}/checkpoints/seen`, { json: { token, value: 1 } });
  expect(saved.status, JSON.stringify(saved.body)).toBe(200);
  const acked = await post(`${target.base}/acks`, { acks: [{ op: "complete", id: copyId, token, result: "handled" }] });
  expect(acked.status, JSON.stringify(acked.body)).toBe(200);
  expect((await get(`${target.base}/jobs/${copyId}`)).body).toMatchObject({ state: "settled", outcome: "completed", result: "handled" });
});

it("a lane that only ever received copies is listed among the lanes", async () => {
  const source = await setup();
  const target = await setup();
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  expect((await post(`${source.base}/jobs`, { id: "j", kind: "email.send" })).status).toBe(201);
  await post(`${source.base}/fail`, { reason: "gone" });
  await fireAlarm(source.stub);
  await expect.poll(async () => (await get(`${target.base}/jobs/${source.lane}.j`)).status).toBe(200);
  const listed = await get(`/v1/lanes?limit=1&cursor=${target.lane.slice(0, -1)}`);
  expect(listed.body.lanes.map((l: { lane: string }) => l.lane)).toEqual([target.lane]);
});
