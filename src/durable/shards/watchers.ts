/**
 * A sharded lane's held claim (docs/concepts.md "Sharded lanes"): the router waits on every shard for
 * work without claiming there, then claims from the shard that has some, so that it never claims a job
 * only to give it back (a claim with `minJobs` may, when another took jobs between its count and its
 * claim: routing/held-min-jobs.ts). A watcher is answered by the lane's flush (the one that answers
 * held claims) when a queued job is due here, or at its deadline. Each flush is an epoch: a watcher that names an
 * epoch older than the current one is answered at once when a job is due, so that work that arrived
 * between the router's look and its watch is not missed; one that names the current epoch waits for
 * the next flush, so that a due job no claim can take (its queue busy, the lane full) does not wake
 * the router again and again.
 */
import { MAX_CLAIM_WAITERS } from "../../shared/defaults.js";
import type { Watched } from "../../routing/peer.js";
import type { ClaimCount } from "./claim-counts.js";
import { CountsOnce } from "../attempts/claim.js";

/** What a watcher is answered, declared where the router reads it (routing/peer.ts). */
export type { Watched };

interface Watcher {
  hold: string | null;
  deadline: number;
  answer(watched: Watched): void;
  /** A watch with a count (`watchCount`): answered only when the count is more than `seen`. */
  counting?: { count: ClaimCount; seen: number };
}

export class Watchers {
  private watchers: Watcher[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Flushes seen so far in this instance (an instance restarted starts again at 0: a watcher then answers at once if due). */
  epoch = 0;

  constructor(private readonly due: () => boolean) {}

  get size(): number {
    return this.watchers.length;
  }

  /** Waits for a due job here, at most `waitMs`; answered at once when one is due and `epoch` is not the current one. */
  watch(epoch: number, waitMs: number, hold: string | null): Promise<Watched> {
    if (epoch !== this.epoch && this.due()) return Promise.resolve({ due: true, epoch: this.epoch });
    if (this.watchers.length >= MAX_CLAIM_WAITERS) return Promise.resolve({ due: false, epoch: this.epoch });
    return new Promise((answer) => {
      this.watchers.push({ hold, deadline: Date.now() + waitMs, answer });
      this.arm();
    });
  }

  /**
   * Waits until `count()` is more than `seen` (answered with it), at most `waitMs`: a held claim with
   * `minJobs` is woken only by claimable work it has not counted yet, never by a due job too few for it
   * nor by a flush that changed nothing for it.
   */
  watchCount(count: ClaimCount, seen: number, waitMs: number, hold: string | null): Promise<Watched> {
    const now = count.read();
    if (now > seen) return Promise.resolve({ due: true, epoch: this.epoch, claimable: now });
    if (this.watchers.length >= MAX_CLAIM_WAITERS) return Promise.resolve({ due: false, epoch: this.epoch });
    return new Promise((answer) => {
      this.watchers.push({ hold, deadline: Date.now() + waitMs, answer, counting: { count, seen } });
      this.arm();
    });
  }

  /**
   * The flush: a new epoch; every watcher is answered if a job is due (a watch with a count, if its
   * count grew). Watches that count the same (the same `key`) share one count in a flush.
   */
  flushed(): void {
    this.epoch++;
    if (this.watchers.length === 0 || !this.due()) return;
    let counts: CountsOnce | undefined;
    const answered: Watcher[] = [];
    this.watchers = this.watchers.filter((w) => {
      let claimable: number | undefined;
      if (w.counting) {
        const { count, seen } = w.counting;
        claimable = (counts ??= new CountsOnce()).of(count.key, count.read);
        if (claimable <= seen) return true;
      }
      answered.push(w);
      w.answer(claimable === undefined ? { due: true, epoch: this.epoch } : { due: true, epoch: this.epoch, claimable });
      return false;
    });
    if (answered.length > 0) this.arm();
  }

  /** The router stops watching (it claimed elsewhere, or its client left). */
  stop(hold: string): number {
    const stopped = this.watchers.filter((w) => w.hold === hold);
    this.watchers = this.watchers.filter((w) => w.hold !== hold);
    for (const w of stopped) w.answer({ due: false, epoch: this.epoch });
    this.arm();
    return stopped.length;
  }

  /** One timer for the earliest deadline. */
  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.watchers.length === 0) return;
    const next = Math.min(...this.watchers.map((w) => w.deadline));
    this.timer = setTimeout(() => {
      const now = Date.now();
      const expired = this.watchers.filter((w) => w.deadline <= now);
      this.watchers = this.watchers.filter((w) => w.deadline > now);
      for (const w of expired) w.answer({ due: false, epoch: this.epoch });
      this.arm();
    }, Math.max(0, next - Date.now()));
  }
}
