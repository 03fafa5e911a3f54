/**
 * The clients' bulk actions (docs/api.md "Bulk actions"): `bulk` starts one, `getBulk` reads it,
 * `bulk_running` and `bulk_not_found` come back as `QueueError`s. The HTTP client against the worker's
 * own app, the RPC client against the real lanes; each on a lane of one object and of 3 shards.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import type { LaneClient } from "../../src/client/types.js";
import { QueueError } from "../../src/shared/errors.js";
import { PULL_KIND, T0, TOKEN } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

const httpLane = (name: string): LaneClient =>
  createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) }).lane(name);

const rpcLane = (name: string): LaneClient => createLaneClient(env.LANE).lane(name);

async function refusal(promise: Promise<unknown>): Promise<QueueError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(QueueError);
  return error as QueueError;
}

describe.each([
  ["the HTTP client", 1, httpLane],
  ["the HTTP client", 3, httpLane],
  ["the RPC client", 1, rpcLane],
  ["the RPC client", 3, rpcLane],
] as const)("%s, a lane of %i shard(s)", (_client, shards, lane) => {
  it("starts a bulk cancel, refuses a second while it runs, and reads it done", async () => {
    const fixture = await setupSharded(shards);
    const client = lane(fixture.lane);
    for (let i = 0; i < 4; i++) await client.enqueue({ id: keyOn(i % shards, shards, `j${i}`), kind: PULL_KIND });
    const { bulk } = await client.bulk({ action: "cancel", filter: { kind: PULL_KIND }, reason: "bad deploy" });
    expect(bulk).toMatchObject({ action: "cancel", state: "running", matched: null, createdAt: T0 });
    const busy = await refusal(client.bulk({ action: "delete", filter: { state: "settled" } }));
    expect(busy.code).toBe("bulk_running");
    expect((busy.details as { bulk: { id: string } }).bulk.id).toBe(bulk.id);
    for (let i = 0; i < shards; i++) await runDurableObjectAlarm(fixture.shard(i));
    expect((await client.getBulk(bulk.id)).bulk).toMatchObject({ id: bulk.id, state: "done", done: 4, skipped: 0, matched: 4 });
    expect((await refusal(client.getBulk("nope"))).code).toBe("bulk_not_found");
  });
});
