/**
 * A claim's count names what it counts (shards/claim-counts.ts): held claims whose counts are the same
 * share one count in a shard's flush (shards/watchers.ts), whatever else their asks say.
 */
import { expect, it } from "vitest";
import type { Claims, InProcess } from "../../../src/durable/attempts/claim.js";
import { askOf, claimCounter } from "../../../src/durable/shards/claim-counts.js";
import { DEFAULT_LEASE_MS } from "../../../src/shared/defaults.js";
import { value } from "../../helpers/lane.js";

/** The key of claim `input`'s count (nothing is counted). */
const keyOf = (input: object) => value(claimCounter({} as Claims, {} as InProcess, input)).key;

it("names the same count for the same kinds in any order, whatever the lease, and a count as far as minJobs whatever the max", () => {
  expect(keyOf({ kinds: ["b", "a", "a"], max: 3, minJobs: 2 })).toBe(keyOf({ kinds: ["a", "b"], max: 5, minJobs: 2, leaseMs: 1_000 }));
  expect(keyOf({ max: 4 })).toBe(keyOf({ max: 4, leaseMs: 1_000 }));
});

it("names another count for other kinds, any kind, or another minJobs", () => {
  const keys = [{ kinds: ["a"], max: 3, minJobs: 2 }, { kinds: ["a", "b"], max: 3, minJobs: 2 }, { max: 3, minJobs: 2 }, { kinds: ["a"], max: 3, minJobs: 3 }].map(keyOf);
  expect(new Set(keys).size).toBe(keys.length);
});

it("asks with the claim's defaults filled in, without its minJobs", () => {
  expect(askOf({ minJobs: 2 })).toEqual({ kinds: null, max: 1, leaseMs: DEFAULT_LEASE_MS });
  expect(askOf({ kinds: ["a"], max: 3, leaseMs: 5_000 })).toEqual({ kinds: ["a"], max: 3, leaseMs: 5_000 });
});
