/**
 * Dead letters into a sharded dead-letter lane (docs/api.md "Dead letters", "Sharded lanes"): a copy
 * whose id a refused enqueue left reserved for another shard is still made, and a lane whose copies
 * all land on shards other than its first is listed among the lanes.
 */
import { expect, it } from "vitest";
import { shardOf } from "../../src/shared/shards.js";
import { get, post, setup } from "../helpers/http.js";
import { fireAlarm, sql } from "../helpers/lane.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

const owed = (stub: Parameters<typeof sql>[0]) => sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM dead_letter_outbox`).then((r) => r[0]!.n);

/** A lane and a sharded dead-letter lane of 4 shards; the copy id of the lane's job `j`, its shard, and a queue of the next shard. */
async function setupLanes() {
  const source = await setup();
  const target = await setupSharded(4);
  const copyId = `${source.lane}.j`;
  const home = shardOf(copyId, 4);
  return { source, target, copyId, home, queue: keyOn((home + 1) % 4, 4, "q") };
}

it("a copy whose id a refused enqueue left reserved for another shard is made on the id's shard and counted", async () => {
  const { source, target, copyId, home, queue } = await setupLanes();
  // Refused for its missing dependency: the id stays reserved on its own shard for the queue's.
  const refused = await post(`${target.base}/jobs`, { id: copyId, kind: "x", queue, dependsOn: [{ id: "missing" }] });
  expect(refused.status, JSON.stringify(refused.body)).toBe(409);
  expect(refused.body.error.code).toBe("dependency_not_found");
  expect(await sql<{ shard: number }>(target.shard(home), `SELECT shard FROM reservations WHERE id = ?`, copyId)).toEqual([{ shard: (home + 1) % 4 }]);
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  expect((await post(`${source.base}/jobs`, { id: "j", kind: "email.send", payload: { n: 1 } })).status).toBe(201);
  expect((await post(`${source.base}/fail`, { reason: "gone" })).body.failed).toEqual(["j"]);
  await fireAlarm(source.stub);
  await expect.poll(() => owed(source.stub)).toBe(0);
  const read = await get(`${target.base}/jobs/${copyId}`);
  expect(read.status, JSON.stringify(read.body)).toBe(200);
  expect(read.body).toMatchObject({ kind: "deadletter", payload: { id: "j", payload: { n: 1 }, error: "gone" } });
  expect((await target.shard(home).getJob(copyId)).ok).toBe(true);
  expect((await get(source.base)).body.stats.deadLettered).toBe(1);
});

it("a copy whose id is reserved for a shard that holds a job of that id counts as made there already", async () => {
  const { source, target, copyId, queue } = await setupLanes();
  expect((await post(`${target.base}/jobs`, { id: copyId, kind: "mine", queue, payload: "kept" })).status).toBe(201);
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  expect((await post(`${source.base}/jobs`, { id: "j", kind: "email.send" })).status).toBe(201);
  await post(`${source.base}/fail`, { reason: "gone" });
  await fireAlarm(source.stub);
  await expect.poll(() => owed(source.stub)).toBe(0);
  expect((await get(`${target.base}/jobs/${copyId}`)).body).toMatchObject({ kind: "mine", payload: "kept" });
  expect((await get(source.base)).body.stats.deadLettered).toBe(0);
});

it("a sharded dead-letter lane whose copies all land on shards other than its first is listed among the lanes", async () => {
  const source = await setup();
  const target = await setupSharded(4);
  await source.stub.configure({ deadLetter: { lane: target.lane } });
  const ids: string[] = [];
  for (let n = 0; ids.length < 3; n++) if (shardOf(`${source.lane}.j${n}`, 4) !== 0) ids.push(`j${n}`);
  for (const id of ids) expect((await post(`${source.base}/jobs`, { id, kind: "email.send" })).status).toBe(201);
  await post(`${source.base}/fail`, { reason: "gone" });
  await fireAlarm(source.stub);
  await expect.poll(() => owed(source.stub)).toBe(0);
  expect((await get(target.base)).body.counts.queued).toBe(3);
  const listed = await get(`/v1/lanes?limit=1&cursor=${target.lane.slice(0, -1)}`);
  expect(listed.body.lanes.map((l: { lane: string }) => l.lane)).toEqual([target.lane]);
});
