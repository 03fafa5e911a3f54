/** Lanes that see the PAYLOADS bucket, and what the payload tests read of them: objects, owed deletions, the sweep. */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { ManualClock } from "../../src/shared/clock.js";
import type { Lane } from "../../src/durable/lane.js";
import type { Dependencies } from "../../src/durable/deps/dependencies.js";
import type { PayloadBucket } from "../../src/durable/payloads/bucket.js";
import type { PayloadStore } from "../../src/durable/payloads/payload-store.js";
import { T0, TestEntropy, inject, sql, type LaneStub } from "./lane.js";
import { PAYLOADS_LANE_PREFIX } from "./test-worker.js";

export const payloadsOf = (lane: Lane) => (lane as unknown as { parts: { payloads: PayloadStore } }).parts.payloads;

/** A fresh lane of `namespace` that sees the PAYLOADS bucket (its name's prefix: test-worker.ts), on a manual clock. */
export async function heldLane(namespace: typeof env.LANE | typeof env.PLAIN_LANE = env.LANE) {
  const name = `${PAYLOADS_LANE_PREFIX}${crypto.randomUUID()}`;
  const stub: LaneStub = namespace.getByName(name);
  const clock = new ManualClock(T0);
  await inject(stub, clock, new TestEntropy());
  return { name, stub, clock };
}

/** The keys the bucket holds for a lane. */
export const objects = async (name: string) => (await env.PAYLOADS.list({ prefix: `${name}/` })).objects.map((o) => o.key);
/** The uploads and deletions the lane owes. */
export const owed = (stub: LaneStub) => sql<{ key: string; state: string }>(stub, "SELECT key, state FROM payload_objects WHERE state <> 'marker'");
/** Waits for the lane's sweep of owed objects to be done. */
export const swept = (stub: LaneStub) => runInDurableObject(stub, (lane: Lane) => payloadsOf(lane).sweep.settled());

/** Every upload of the lane fails from now on (R2 down); reads and deletions still reach the bucket. */
export async function failUploads(stub: LaneStub): Promise<void> {
  await runInDurableObject(stub, (lane: Lane) => {
    const store = payloadsOf(lane) as unknown as { bucket: PayloadBucket };
    const real = store.bucket;
    store.bucket = { put: () => Promise.reject(new Error("R2 is down")), get: (key) => real.get(key), delete: (keys) => real.delete(keys) };
  });
}

/**
 * Counts the lane's reads of a job's dependencies (`Dependencies.of`, one statement each) from now on;
 * the answer tells the count so far. Tests and lanes share one isolate.
 */
export async function countDependencyReads(stub: LaneStub): Promise<() => number> {
  let reads = 0;
  await runInDurableObject(stub, (lane: Lane) => {
    const dependencies = (lane as unknown as { parts: { dependencies: Dependencies } }).parts.dependencies;
    const of = dependencies.of.bind(dependencies);
    dependencies.of = (seq) => {
      reads++;
      return of(seq);
    };
  });
  return () => reads;
}
