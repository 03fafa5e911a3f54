import { describe, expect, it } from "vitest";
import { decodeMergedCursor, encodeMergedCursor, sumInfo } from "../../src/routing/lane-wide-routing.js";
import { divideAmong, fnv1a32, parseShardObjectName, routingKey, shardObjectName, shardOf, shardOfToken, tokenPrefix } from "../../src/shared/shards.js";

describe("shards: the shared functions", () => {
  it("hashes with FNV-1a 32 (its published test vectors)", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });

  it("maps every key to shard 0 of one shard, and spreads keys over many", () => {
    expect(shardOf("anything", 1)).toBe(0);
    const counts = new Array(4).fill(0);
    for (let i = 0; i < 4000; i++) counts[shardOf(`key-${i}`, 4)]++;
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });

  it("routes by queue, else debounce key, else id", () => {
    expect(routingKey({ queue: "q", debounce: { key: "d" }, id: "i" })).toBe("q");
    expect(routingKey({ debounce: { key: "d" }, id: "i" })).toBe("d");
    expect(routingKey({ id: "i" })).toBe("i");
    expect(routingKey({})).toBeNull();
  });

  it("names shard objects and reads the names back", () => {
    expect(shardObjectName("tenant-7", 0)).toBe("tenant-7");
    expect(shardObjectName("tenant-7", 3)).toBe("tenant-7#3");
    expect(parseShardObjectName("tenant-7#3")).toEqual({ lane: "tenant-7", index: 3 });
    expect(parseShardObjectName("tenant-7")).toEqual({ lane: "tenant-7", index: 0 });
    expect(parseShardObjectName("tenant-7#x")).toEqual({ lane: "tenant-7#x", index: 0 });
  });

  it("finds a token's shard from its prefix; none or a malformed one is shard 0", () => {
    expect(tokenPrefix(0)).toBe("");
    expect(shardOfToken(`${tokenPrefix(5)}abc`, 8)).toBe(5);
    expect(shardOfToken("abc", 8)).toBe(0);
    expect(shardOfToken("s9.abc", 8)).toBe(0);
    expect(shardOfToken("s05.abc", 8)).toBe(0);
  });

  it("divides a lane-wide amount evenly, the remainder to the first shards, at least 1 each", () => {
    expect([0, 1, 2, 3].map((i) => divideAmong(10, 4, i))).toEqual([3, 3, 2, 2]);
    expect([0, 1, 2, 3].map((i) => divideAmong(2, 4, i))).toEqual([1, 1, 1, 1]);
  });

  it("encodes a merged cursor and refuses one of another shape", () => {
    const cursor = encodeMergedCursor([0, 35, -1, 1000]);
    expect(decodeMergedCursor(cursor, 4)).toEqual([0, 35, -1, 1000]);
    expect(decodeMergedCursor(cursor, 3)).toBeNull();
    expect(decodeMergedCursor("c1.5", 4)).toBeNull();
    expect(decodeMergedCursor("m1.0.0.0.x!", 4)).toBeNull();
  });

  it("sums shards' infos: counts, stats, kinds, the earliest times, the settings' sums", () => {
    const info = (n: number, at: number | null) =>
      ({
        lane: "l", counts: { blocked: 0, queued: n, running: 1, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 }, paused: false,
        concurrency: 3, nextWakeAt: at, retention: { completedMs: 1, failedMs: 1 }, stats: { enqueued: n, waitpointsCompleted: n, waitpointsTimedOut: 1 } as never, oldestDueAt: at,
        kinds: { k: { queued: n, running: 1 } }, rateLimit: { limit: 2, periodMs: 1000 }, fairness: "fifo", shards: 2, waitpoints: { pending: n },
      }) as const;
    const sum = sumInfo([info(2, 50), info(3, 40)] as never);
    expect(sum).toMatchObject({ counts: { queued: 5, running: 2 }, stats: { enqueued: 5, waitpointsCompleted: 5, waitpointsTimedOut: 2 }, waitpoints: { pending: 5 }, kinds: { k: { queued: 5, running: 2 } }, nextWakeAt: 40, oldestDueAt: 40, concurrency: 6, rateLimit: { limit: 4 }, shards: 2 });
    expect(sum.shardList).toEqual([{ shard: 0, counts: info(2, 50).counts }, { shard: 1, counts: info(3, 40).counts }]);
  });
});
