/**
 * `POST /v1/lanes/{lane}/jobs/{id}/requeue` as a new life (docs/api.md "Requeue"), on one object and
 * on a sharded lane alike: a debounced job whose key a newer queued job holds is requeued without it
 * (never a 5xx), and an expired job gets `expiresAt` = now + `ttlMs`.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { shardOf } from "../../src/shared/shards.js";
import { get, post, PULL_KIND, setup, T0 } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

/** A lane of `shards` shards (1: one object) and a way to run the alarm of the object that holds a routing key. */
async function lane(shards: number) {
  if (shards === 1) {
    const fixture = await setup();
    return { ...fixture, key: "d", alarm: (_key: string) => runDurableObjectAlarm(fixture.stub) };
  }
  const fixture = await setupSharded(shards);
  return { ...fixture, key: keyOn(2, shards, "d"), alarm: (key: string) => runDurableObjectAlarm(fixture.shard(shardOf(key, shards))) };
}

const enqueued = async (base: string, body: Record<string, unknown>) => {
  const answer = await post(`${base}/jobs`, { kind: PULL_KIND, ...body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.job;
};

describe.each([1, 4])("requeue on a lane of %i shard(s)", (shards) => {
  it("answers 200 for a cancelled debounced job whose key a newer job holds; the newer one keeps the key", async () => {
    const { base, key } = await lane(shards);
    const debounce = { key, delayMs: 1_000 };
    await enqueued(base, { id: "old", debounce });
    expect((await post(`${base}/jobs/old/cancel`, {})).status).toBe(200);
    const newer = await enqueued(base, { payload: { n: 2 }, debounce });

    const requeued = await post(`${base}/jobs/old/requeue`, {});
    expect(requeued.status, JSON.stringify(requeued.body)).toBe(200);
    expect(requeued.body.job).toMatchObject({ id: "old", state: "queued", outcome: null, attempts: 0, settledAt: null });
    expect(requeued.body.job).not.toHaveProperty("debounce");
    const again = await post(`${base}/jobs`, { kind: PULL_KIND, payload: { n: 3 }, debounce });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "debounced", job: { id: newer.id, payload: { n: 3 } } });
    expect((await get(base)).body.counts).toMatchObject({ queued: 2, cancelled: 0 });
  });

  it("gives an expired job expiresAt = now + ttlMs; it is not expired again at once, and stats.expired counts once", async () => {
    const { base, clock, alarm } = await lane(shards);
    await enqueued(base, { id: "t", ttlMs: 1_000 });
    clock.set(T0 + 1_000);
    expect(await alarm("t")).toBe(true);
    expect((await get(`${base}/jobs/t`)).body).toMatchObject({ state: "settled", error: "expired" });

    clock.set(T0 + 6_000);
    const requeued = await post(`${base}/jobs/t/requeue`, {});
    expect(requeued.status, JSON.stringify(requeued.body)).toBe(200);
    expect(requeued.body.job).toMatchObject({ state: "queued", runAt: T0 + 6_000, expiresAt: T0 + 7_000 });
    expect((await get(base)).body.nextWakeAt).toBe(T0 + 7_000);
    await alarm("t");
    expect((await get(`${base}/jobs/t`)).body.state).toBe("queued");
    expect((await get(base)).body.stats.expired).toBe(1);
    const claimed = await post(`${base}/claims`, { kinds: [PULL_KIND] });
    expect(claimed.body.jobs.map((j: { id: string }) => j.id)).toEqual(["t"]);
  });
});
