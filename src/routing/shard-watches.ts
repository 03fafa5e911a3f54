/**
 * The watches of a sharded lane's held claim (router.ts, held-min-jobs.ts): one `awaitWork` per
 * shard, each answered when its shard flushes with a job due (or at the deadline), claiming nothing.
 * The claim waits for the first to answer, then watches that shard again with the epoch it named.
 * A watch with a count (a claim with `minJobs`) is answered only when the claim's count there grows
 * past the one it names: a shard with too few jobs costs nothing until one more comes.
 *
 * A shard that answers a watch early with nothing (it holds as many watches as it takes, or the call
 * was refused) would answer the next at once too: watched again, it is watched after a pause that
 * doubles with each such answer in a row (`WATCH_RETRY_BASE_MS` up to `WATCH_RETRY_MAX_MS`, never
 * past the deadline), so that a held claim costs a bounded number of calls, not a spin until its wait
 * is spent. A shard that answers with work, or at the deadline, is watched again at once.
 */
import { acrossResets, isLaneReset } from "./lane-retry.js";
import type { LanePeer } from "./peer.js";

/** The pause before watching again a shard that answered a watch early with nothing; doubled with each such answer in a row. */
const WATCH_RETRY_BASE_MS = 10;

/** The longest pause between two watches of a shard that keeps answering early with nothing. */
const WATCH_RETRY_MAX_MS = 500;

/** A shard's watch answered: whether a job was due there, and the epoch to name next (a watch with a count: the count it grew to). */
export type Woken = { shard: number; due: boolean; epoch: number; claimable?: number };

/** A watch with a count: the claim (as a shard's `claimable` takes it) and the count there already seen. */
export type Counting = { request: object; seen: number };

export class ShardWatches {
  private readonly watching = new Map<number, Promise<Woken>>();
  /** Per shard: its answers in a row that came early with nothing (the next watch there waits first). */
  private readonly empties = new Map<number, number>();
  /** Bumped by `stop`: a watch still pausing then is not sent. */
  private generation = 0;
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
    const empties = this.empties.get(shard) ?? 0;
    const generation = this.generation;
    const pauseMs = empties === 0 ? 0 : Math.min(WATCH_RETRY_BASE_MS * 2 ** (empties - 1), WATCH_RETRY_MAX_MS, this.deadline - Date.now());
    const paused = pauseMs > 0 ? new Promise<void>((resolve) => setTimeout(resolve, pauseMs)) : Promise.resolve();
    const sent = paused.then(() => (generation !== this.generation || this.signal?.aborted ? null : acrossResets(call, this.signal)));
    this.watching.set(
      shard,
      sent.then((w) => {
        const woken: Woken = w?.ok ? { shard, ...w.value } : { shard, due: false, epoch };
        const empty = !woken.due && woken.claimable === undefined && Date.now() < this.deadline;
        // A watch answered because `stop` dropped it says nothing of its shard.
        if (generation === this.generation) this.empties.set(shard, empty ? empties + 1 : 0);
        return woken;
      }),
    );
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
    this.generation++;
    await Promise.all(shards.map((shard) => this.stub(shard).stopWatching(this.name).catch((error: unknown) => {
      if (!isLaneReset(error)) throw error;
    })));
  }
}
