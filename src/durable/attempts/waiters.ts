/**
 * Long-poll claims (docs/api.md "Pull consumers", `waitMs`): a claim that finds nothing claimable waits
 * here as a promise, and the lane's flush (wake.ts: the same flush that starts in-process executors,
 * after every transition and every alarm) answers the waiters in arrival order the moment a job is
 * claimable for one. Nothing polls: a held claim costs no CPU until a flush, and the only timer is
 * one for the earliest deadline, at which a waiter is answered `{"jobs": []}`.
 *
 * A client that goes away cannot be seen from inside the object (an RPC caller's cancellation does
 * not reach the callee), so the front worker tells the lane (`abandon`) when the HTTP request is
 * aborted: a waiter still held is dropped and claims nothing; one answered in the moment before (or
 * at once, with nothing to wait for) has its jobs released at once (their attempts given back); one
 * whose abandonment outran it (the client left before its claim reached the lane) claims nothing when
 * it comes. Where no one tells the lane, a job claimed for a waiter whose connection died is never
 * lost: it runs out its lease and is recovered.
 */
import { ABANDONED_CLAIM_MEMORY, MAX_CLAIM, MAX_CLAIM_WAITERS } from "../../shared/defaults.js";
import type { ClaimedJob } from "../../shared/job.js";
import { countKey, CountsOnce, type ClaimAsk } from "./claim.js";

interface Waiter<J> {
  ask: ClaimAsk;
  /** The front worker's name for this claim (null: the caller cannot abandon it, e.g. over RPC). */
  hold: string | null;
  /** Real time (timers run on real time, whatever the lane's clock says). */
  deadline: number;
  answer(jobs: J[]): void;
}

export interface WaitersHost<J> {
  /** The lane's claim for a pull consumer: the same statement as an immediate claim. */
  claim(ask: ClaimAsk): J[];
  /** How many jobs the claim would take now, counted up to `upTo` (a claim with `minJobs`). */
  count(ask: ClaimAsk, upTo: number): number;
  /** Jobs were claimed outside any call (a claim with `minJobs` at its deadline): the lane flushes. */
  claimed(): void;
  /** Gives a job back through the fence (an abandoned answer): whether it did (a miss changes nothing). */
  release(id: string, token: string): boolean;
}

export class Waiters<J extends ClaimedJob> {
  /** Held claims in arrival order. */
  private queue: Waiter<J>[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  /** The leases of the last answered holds, oldest first, in case their client turns out to be gone. */
  private readonly answered = new Map<string, { id: string; token: string }[]>();
  /** The last holds abandoned before they came (names are never reused), oldest first. */
  private readonly gone = new Set<string>();

  constructor(private readonly host: WaitersHost<J>) {}

  get size(): number {
    return this.queue.length;
  }

  /** Whether the client of `hold` has gone already: its claim, when it comes, claims nothing. */
  left(hold: string | null): boolean {
    return hold !== null && this.gone.has(hold);
  }

  /** The jobs a held claim took at once, with no wait: released too if its client turns out gone. */
  tookAtOnce(hold: string | null, jobs: J[]): void {
    if (hold !== null && jobs.length > 0) this.remember(hold, jobs);
  }

  /** Holds a claim until a flush answers it or `waitMs` passes; null when the lane holds as many as it may. */
  hold(ask: ClaimAsk, waitMs: number, hold: string | null): Promise<J[]> | null {
    if (this.queue.length >= MAX_CLAIM_WAITERS) return null;
    if (hold !== null && this.queue.some((w) => w.hold === hold)) return null;
    const deadline = Date.now() + waitMs;
    return new Promise((answer) => {
      this.queue.push({ ask, hold, deadline, answer });
      if (deadline < this.timerAt) this.arm(deadline);
    });
  }

  /**
   * Answers every held claim that can be answered now, oldest first. Kinds a claim found nothing of
   * are not asked again in this pass, so a flush costs a claim statement per distinct ask, not per
   * waiter, when nothing is claimable; and claims with `minJobs` that count the same share one count
   * until a claim of the pass takes jobs.
   */
  answer(): void {
    if (this.queue.length === 0) return;
    const emptyKinds = new Set<string>();
    const answered = new Set<Waiter<J>>();
    let counts: CountsOnce | undefined;
    for (const waiter of this.queue) {
      const { kinds, minJobs = 1 } = waiter.ask;
      if (kinds !== null && kinds.every((k) => emptyKinds.has(k))) continue;
      // A claim with minJobs takes nothing until that many are claimable; what it leaves stays for the claims after it.
      const claimable = minJobs > 1 ? (counts ??= new CountsOnce()).of(countKey(waiter.ask, minJobs), () => this.host.count(waiter.ask, minJobs)) : minJobs;
      if (claimable > 0 && claimable < minJobs) continue;
      const jobs = claimable === 0 ? [] : this.host.claim(waiter.ask);
      if (jobs.length === 0) {
        if (kinds === null) break; // nothing of any kind: nobody after it gets anything either
        for (const kind of kinds) emptyKinds.add(kind);
        continue;
      }
      counts?.clear(); // jobs were taken: every count may have changed
      answered.add(waiter);
      if (waiter.hold !== null) this.remember(waiter.hold, jobs);
      waiter.answer(jobs);
    }
    if (answered.size > 0) this.queue = this.queue.filter((w) => !answered.has(w));
    if (this.queue.length === 0) this.disarm();
  }

  /**
   * The client of `hold` went away: a held claim is dropped (it claims nothing); one answered a moment
   * ago has its jobs released: those still held by the answer's lease (one completed since, or
   * recovered, is left as it is); and a claim that comes under its name later claims nothing. Returns
   * how many jobs it released.
   */
  abandon(hold: string): number {
    // Whatever it was doing, a claim that comes later under this name claims nothing (the abort may
    // have outrun it; a sharded lane's router may still be sending this shard another claim for it).
    this.gone.add(hold);
    if (this.gone.size > ABANDONED_CLAIM_MEMORY) this.gone.delete(this.gone.values().next().value!);
    const waiter = this.queue.find((w) => w.hold === hold);
    if (waiter) {
      this.queue = this.queue.filter((w) => w !== waiter);
      waiter.answer([]);
      if (this.queue.length === 0) this.disarm();
      return 0;
    }
    const leases = this.answered.get(hold);
    if (leases === undefined) return 0;
    this.answered.delete(hold);
    let released = 0;
    for (const { id, token } of leases) if (this.host.release(id, token)) released++;
    return released;
  }

  /**
   * A sharded lane's held claim may claim one shard more than once under its name: each claim's
   * leases are kept, the newest `MAX_CLAIM` of them. Those it still holds are among them: all its
   * claims together take at most its `max`, and a claim with `minJobs` gives back what an earlier
   * round took before it claims again.
   */
  private remember(hold: string, jobs: J[]): void {
    const leases = [...(this.answered.get(hold) ?? []), ...jobs.map((j) => ({ id: j.id, token: j.lease.token }))];
    this.answered.delete(hold); // the newest last, the first forgotten
    this.answered.set(hold, leases.length > MAX_CLAIM ? leases.slice(-MAX_CLAIM) : leases);
    if (this.answered.size > ABANDONED_CLAIM_MEMORY) this.answered.delete(this.answered.keys().next().value!);
  }

  /** One timer, for the earliest deadline; when it fires it answers what is due and sets itself again. */
  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - Date.now()));
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    const due = this.queue.filter((w) => w.deadline <= now);
    this.queue = this.queue.filter((w) => w.deadline > now);
    let claimed = false;
    for (const waiter of due) {
      // A claim with minJobs is answered at its deadline with what is claimable then, maybe fewer, maybe none.
      const jobs = (waiter.ask.minJobs ?? 1) > 1 ? this.host.claim(waiter.ask) : [];
      if (jobs.length > 0 && waiter.hold !== null) this.remember(waiter.hold, jobs);
      claimed ||= jobs.length > 0;
      waiter.answer(jobs);
    }
    if (claimed) this.host.claimed();
    let next = Infinity;
    for (const waiter of this.queue) next = Math.min(next, waiter.deadline);
    if (next !== Infinity) this.arm(next);
  }
}
