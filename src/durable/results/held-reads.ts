/**
 * Held reads (docs/api.md "Results", `?waitMs`): a read of a job that is not settled waits here as a
 * promise until the job settles or its deadline passes. Nothing polls: the lane listens to its
 * transition log (events/transitions.ts) only while it holds a read, so a lane without held reads
 * pays nothing for them on any write (not even a listener told of each transition), and one with
 * them pays a map lookup per transition. The only timer is one for the earliest deadline.
 *
 * The log tells a transition once its write is durable, so a read answered `settled` never speaks
 * of a settlement a crash could still undo. A client that goes away cannot be seen from inside the
 * object (an RPC caller's cancellation does not reach the callee): its read is dropped at its
 * deadline at the latest, having written nothing.
 */
import { MAX_HELD_READS } from "../../shared/defaults.js";
import type { Job } from "../../shared/job.js";
import type { TransitionEvent } from "../../shared/log.js";
import { Deadlines, type Deadlined } from "./deadlines.js";

interface HeldRead extends Deadlined {
  id: string;
  /** The job as it stands when answered; null: it no longer exists (deleted while held). */
  answer(job: Job | null): void;
}

export interface HeldReadsHost {
  /** The job as it stands now (null: none). */
  read(id: string): Job | null;
  /** Listens to the lane's durable transitions; returns the removal. */
  listen(listener: (event: TransitionEvent) => void): () => void;
}

export class HeldReads {
  /** Held reads by job id. */
  private readonly byJob = new Map<string, Set<HeldRead>>();
  private readonly deadlines = new Deadlines<HeldRead>((due) => this.expire(due));
  private count = 0;
  private unlisten: (() => void) | null = null;

  constructor(private readonly host: HeldReadsHost) {}

  /** How many reads are held now. */
  get size(): number {
    return this.count;
  }

  /**
   * Holds a read of job `id` (read unsettled just now, in this synchronous stretch, so no settlement
   * can fall between that read and the listening) for `waitMs`; null when the lane holds as many as it may.
   */
  hold(id: string, waitMs: number): Promise<Job | null> | null {
    if (this.count >= MAX_HELD_READS) return null;
    return new Promise((answer) => {
      const read: HeldRead = { id, deadline: Date.now() + waitMs, done: false, answer };
      let reads = this.byJob.get(id);
      if (!reads) this.byJob.set(id, (reads = new Set()));
      reads.add(read);
      this.count++;
      this.deadlines.add(read);
      this.unlisten ??= this.host.listen((event) => this.transition(event));
    });
  }

  private transition(event: TransitionEvent): void {
    if (event.to !== "settled") return;
    const reads = this.byJob.get(event.jobId);
    if (!reads) return;
    const job = this.host.read(event.jobId);
    // Requeued again since its settlement was written: it is not settled now, so its reads wait on.
    if (job !== null && job.state !== "settled") return;
    this.answer(event.jobId, reads, job);
    this.idle();
  }

  private answer(id: string, reads: Set<HeldRead>, job: Job | null): void {
    this.byJob.delete(id);
    this.count -= reads.size;
    for (const read of reads) {
      read.done = true;
      read.answer(job);
    }
  }

  /** Stops listening and forgets the deadlines (and their timer) once no read is held. */
  private idle(): void {
    if (this.count > 0) return;
    this.unlisten?.();
    this.unlisten = null;
    this.deadlines.clear();
  }

  /** Reads whose deadline passed: each answered with its job as it stands (the job of several read once). */
  private expire(due: HeldRead[]): void {
    const byId = new Map<string, HeldRead[]>();
    for (const read of due) {
      const reads = byId.get(read.id);
      if (reads) reads.push(read);
      else byId.set(read.id, [read]);
    }
    for (const [id, reads] of byId) {
      const job = this.host.read(id);
      const held = this.byJob.get(id)!;
      for (const read of reads) {
        held.delete(read);
        read.done = true;
        read.answer(job);
      }
      this.count -= reads.length;
      if (held.size === 0) this.byJob.delete(id);
    }
    this.idle();
  }
}
