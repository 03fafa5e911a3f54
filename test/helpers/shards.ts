/**
 * Sharded lanes in tests: a fresh lane of N shards through the worker's own routes, every shard with
 * the same manual clock, and keys chosen for the shard they map to.
 */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { ManualClock } from "../../src/shared/clock.js";
import { shardObjectName, shardOf } from "../../src/shared/shards.js";
import { call, T0 } from "./http.js";
import { inject } from "./lane.js";

export interface ShardedFixture {
  lane: string;
  base: string;
  shards: number;
  clock: ManualClock;
  /** The stub of shard i (the object `lane#i`). */
  shard(i: number): ReturnType<typeof env.LANE.getByName>;
}

/** A fresh lane set to `shards` shards (through PATCH), every shard on one manual clock at `T0`. */
export async function setupSharded(shards: number, binding: "LANE" | "PLAIN_LANE" = "LANE"): Promise<ShardedFixture> {
  const lane = crypto.randomUUID();
  const clock = new ManualClock(T0);
  const shard = (i: number) => env[binding].getByName(shardObjectName(lane, i));
  for (let i = 0; i < shards; i++) await inject(shard(i), clock);
  if (shards > 1) {
    const set = await call("PATCH", `/v1/lanes/${lane}`, { json: { shards } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.shards).toBe(shards);
  }
  return { lane, base: `/v1/lanes/${lane}`, shards, clock, shard };
}

/** A key (with `prefix`) that maps to shard `target` of `shards`. */
export function keyOn(target: number, shards: number, prefix = "k"): string {
  for (let n = 0; ; n++) {
    const key = `${prefix}-${n}`;
    if (shardOf(key, shards) === target) return key;
  }
}
