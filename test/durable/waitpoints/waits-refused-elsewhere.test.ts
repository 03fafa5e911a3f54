/**
 * An in-process wait on a sharded lane whose waitpoint's shard cannot register it (its object fails)
 * is no wait: the attempt fails (retried as any failure, here settled by maxAttempts 1) at once,
 * rather than running on, silently, until its lease expires.
 */
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { shardOf } from "../../../src/shared/shards.js";
import { get, post } from "../../helpers/http.js";
import { dropTables } from "../../helpers/lane.js";
import { setupSharded } from "../../helpers/shards.js";

it("on a 4-shard lane a ctx.waitFor whose waitpoint's shard fails to register it fails the attempt", async () => {
  const lane = await setupSharded(4);
  let id = "broken-0";
  for (let n = 1; shardOf(`${id}.approval`, 4) === shardOf(id, 4); n++) id = `broken-${n}`;
  await runInDurableObject(lane.shard(shardOf(`${id}.approval`, 4)), (_lane, state) => dropTables(state.storage));
  expect((await post(`${lane.base}/jobs`, { id, kind: "demo.approval", maxAttempts: 1 })).status).toBe(201);
  await expect.poll(async () => (await get(`${lane.base}/jobs/${id}`)).body, { timeout: 3_000 }).toMatchObject({ state: "settled", outcome: "failed", attempts: 1 });
  expect((await get(`${lane.base}/jobs/${id}`)).body.error).toContain(`${id}.approval`);
});
