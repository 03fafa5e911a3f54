import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import { QueueError } from "../../src/shared/errors.js";
import { shardOf } from "../../src/shared/shards.js";
import { PULL_KIND } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

describe("shards: RPC clients with a stale shard count", () => {
  it("an enqueue routed by a stale count is refused by the shard (wrong_shard), and the client routes it again", async () => {
    const fixture = await setupSharded(1);
    for (let i = 1; i < 4; i++) await (await import("../helpers/lane.js")).inject(fixture.shard(i), fixture.clock);
    for (const grouped of [true, false]) {
      const name = grouped ? fixture.lane : `${fixture.lane}-x`;
      const stale = createLaneClient(env.LANE, { groupCommit: grouped }).lane(name);
      const admin = createLaneClient(env.LANE).lane(name);
      expect((await stale.info()).shards).toBe(1); // the stale client has read one shard
      expect((await admin.configure({ shards: 4 })).shards).toBe(4);
      const id = keyOn(1, 4, "order");
      const queue = keyOn(2, 4, "q");
      const queued = await stale.enqueue({ id, kind: PULL_KIND, queue });
      expect(queued.status).toBe("queued");
      const stored = await env.LANE.getByName(`${name}#2`).hasJob(id);
      expect(stored).toEqual({ ok: true, value: true });
      expect((await admin.get(id)).queue).toBe(queue);
      // The id was reserved on its own shard before the write: another queue is a conflict.
      const other = await stale.enqueue({ id, kind: PULL_KIND, queue: keyOn(3, 4, "q") }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(other).toBeInstanceOf(QueueError);
      expect((other as QueueError).code).toBe("job_conflict");
    }
  });

  it("a queue's settings through a stale count reach the queue's shard", async () => {
    const fixture = await setupSharded(1);
    const stale = createLaneClient(env.LANE).lane(fixture.lane);
    expect((await stale.info()).shards).toBe(1);
    await createLaneClient(env.LANE).lane(fixture.lane).configure({ shards: 4 });
    const queue = keyOn(2, 4, "q");
    expect((await stale.putQueue(queue, { concurrency: 3 })).concurrency).toBe(3);
    const there = await env.LANE.getByName(`${fixture.lane}#2`).queueInfo(queue);
    expect(there).toMatchObject({ ok: true, value: { concurrency: 3 } });
  });

  it("a read by id through a stale count finds the job on its shard", async () => {
    const fixture = await setupSharded(1);
    const stale = createLaneClient(env.LANE).lane(fixture.lane);
    expect((await stale.info()).shards).toBe(1);
    const admin = createLaneClient(env.LANE).lane(fixture.lane);
    await admin.configure({ shards: 4 });
    const id = keyOn(3, 4, "job");
    await admin.enqueue({ id, kind: PULL_KIND });
    expect(shardOf(id, 4)).toBe(3);
    expect((await stale.get(id)).id).toBe(id);
    const claimed = await admin.claim({ kinds: [PULL_KIND] });
    expect(claimed.jobs.map((j) => j.id)).toEqual([id]);
    expect((await stale.complete(id, { token: claimed.jobs[0]!.lease.token })).job.outcome).toBe("completed");
  });
});
