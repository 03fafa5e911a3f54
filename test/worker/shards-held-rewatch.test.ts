/**
 * A sharded lane's held claim whose shard answers its watches early with nothing (it holds as many
 * watches as it takes): the router watches that shard again after a growing pause, not at once, so
 * that the claim costs a bounded number of calls over its wait (routing/shard-watches.ts). The
 * router's deadline runs on real time: a short `waitMs` is the wait under test.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import type { LaneParts } from "../../src/durable/lane-parts.js";
import { MAX_CLAIM_WAITERS } from "../../src/shared/defaults.js";
import { post, PULL_KIND } from "../helpers/http.js";
import { setupSharded, type ShardedFixture } from "../helpers/shards.js";

const WAIT_MS = 400;
/** Watches a held claim of `WAIT_MS` may send a full shard: its first, and one after each pause (10, 20, 40, … ms). */
const MOST_WATCHES = 10;

const parts = (lane: Lane) => (lane as unknown as { parts: LaneParts }).parts;

/** Fills shard `i`'s watches with ones of another hold, and counts the watches asked of it from then on. */
async function fillWatches(fixture: ShardedFixture, i: number): Promise<{ watches: () => number; release: () => Promise<void> }> {
  let watches = 0;
  await runInDurableObject(fixture.shard(i), (lane: Lane) => {
    const watchers = parts(lane).watchers;
    for (let n = 0; n < MAX_CLAIM_WAITERS; n++) void watchers.watch(-1, 60_000, "filler");
    const watch = watchers.watch.bind(watchers);
    const watchCount = watchers.watchCount.bind(watchers);
    watchers.watch = (...args) => (watches++, watch(...args));
    watchers.watchCount = (...args) => (watches++, watchCount(...args));
  });
  const release = async () => {
    await runInDurableObject(fixture.shard(i), (lane: Lane) => void parts(lane).watchers.stop("filler"));
  };
  return { watches: () => watches, release };
}

describe("shards: a held claim watching a shard whose watches are full", () => {
  it("watches it again after a growing pause, a bounded number of times, and answers empty at its deadline", async () => {
    const fixture = await setupSharded(2);
    const full = await fillWatches(fixture, 1);
    try {
      const startedAt = Date.now();
      const answer = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], waitMs: WAIT_MS });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.jobs).toEqual([]);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(WAIT_MS - 50);
      expect(full.watches()).toBeGreaterThanOrEqual(1);
      expect(full.watches()).toBeLessThanOrEqual(MOST_WATCHES);
    } finally {
      await full.release();
    }
  });

  it("the same for a held claim with minJobs (its watches with a count)", async () => {
    const fixture = await setupSharded(2);
    const full = await fillWatches(fixture, 1);
    try {
      const answer = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], waitMs: WAIT_MS, max: 2, minJobs: 2 });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.jobs).toEqual([]);
      expect(full.watches()).toBeGreaterThanOrEqual(1);
      expect(full.watches()).toBeLessThanOrEqual(MOST_WATCHES);
    } finally {
      await full.release();
    }
  });
});
