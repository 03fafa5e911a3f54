/**
 * The watches of a sharded lane's held claim (router.ts, held-min-jobs.ts): one `awaitWork` per
 * shard, each answered when its shard flushes with a job due (or at the deadline), claiming nothing.
 * The claim waits for the first to answer, then watches that shard again with the epoch it named.
 * A watch with a count (a claim with `minJobs`) is answered only when the claim's count there grows
 * past the one it names: a shard with too few jobs costs nothing until one more comes.
 */
import { acrossResets, isLaneReset } from "./lane-retry.js";
import type { LanePeer } from "./peer.js";

/** A shard's watch answered: whether a job was due there, and the epoch to name next (a watch with a count: the count it grew to). */
export type Woken = { shard: number; due: boolean; epoch: number; claimable?: number };

/** A watch with a count: the claim (as a shard's `claimable` takes it) and the count there already seen. */
export type Counting = { request: object; seen: number };

export class ShardWatches {
  private readonly watching = new Map<number, Promise<Woken>>();
  private readonly stopped: Promise<null>;
  private readonly stub: (shard: number) => LanePeer;
  private readonly deadline: number;
  private readonly name: string;
  private readonly signal: AbortSignal | undefined;

  // No parameter properties: the client runs the routing layer from Node by stripping types.
  constructor(stub: (shard: number) => LanePeer, deadline: number, name: string, signal?: AbortSignal) {
    this.stub = stub;
    this.deadline = deadline;
    this.name = name;
    this.signal = signal;
    this.stopped = new Promise<null>((resolve) => signal?.addEventListener("abort", () => resolve(null), { once: true }));
  }

  /** Watches `shard` until a flush there after `epoch` finds a job due (with `counting`: until the count there passes its `seen`), or the deadline. */
  watch(shard: number, epoch: number, counting?: Counting): void {
    const call = () => {
      const waitMs = Math.max(1, this.deadline - Date.now());
      return counting ? this.stub(shard).awaitWork(epoch, waitMs, this.name, counting) : this.stub(shard).awaitWork(epoch, waitMs, this.name);
    };
    this.watching.set(shard, acrossResets(call, this.signal).then((w) => (w.ok ? { shard, ...w.value } : { shard, due: false, epoch })));
  }

  /** The first watch to answer (no longer watched), or null once the caller's signal fired. */
  async next(): Promise<Woken | null> {
    const woken = await Promise.race([this.stopped, ...this.watching.values()]);
    if (woken !== null) this.watching.delete(woken.shard);
    return woken;
  }

  /**
   * Drops the watches still held (they claim nothing either way); watched again, a shard starts anew.
   * A shard reset meanwhile lost its watches with its memory: nothing to drop there.
   */
  async stop(): Promise<void> {
    const shards = [...this.watching.keys()];
    this.watching.clear();
    await Promise.all(shards.map((shard) => this.stub(shard).stopWatching(this.name).catch((error: unknown) => {
      if (!isLaneReset(error)) throw error;
    })));
  }
}
