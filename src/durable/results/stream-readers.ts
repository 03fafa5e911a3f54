/**
 * Held stream readers (docs/api.md "Results": idle streams cost the lane no CPU). The front worker's
 * SSE route holds a call to the lane while its job has nothing new; the call waits here as a
 * promise, answered when a look finds the job has an event after the reader's seq or is settled
 * (or gone), or when its hold passes (the front worker then asks again). A look is asked for by the
 * lane's flush (after every change and every alarm) and by writes the flush does not follow (an
 * in-process attempt's chunks and progress); it runs once per turn, and only while someone holds:
 * one read per held job, never per reader. Nothing polls.
 */

import { MAX_HELD_STREAM_READERS } from "../../shared/defaults.js";

/** What a look reads: whether a reader after `after` has something (null: the job is gone). */
export type StreamReady = (seq: number, after: number) => boolean | null;

interface Reader {
  after: number;
  /** Its hold's end (real time: timers run on it, whatever the lane's clock says). */
  timer: ReturnType<typeof setTimeout>;
  answer(): void;
}

export class StreamReaders {
  /** Held readers by their job's seq. */
  private readonly byJob = new Map<number, Reader[]>();
  private held = 0;
  private looking = false;

  constructor(private readonly ready: StreamReady) {}

  get size(): number {
    return this.held;
  }

  /**
   * Resolves when job `seq` has an event after `after`, is settled or gone, or `holdMs` has passed;
   * null when the lane holds as many readers as it may (a dropped reader's hold lasts until it passes).
   */
  hold(seq: number, after: number, holdMs: number): Promise<void> | null {
    if (this.held >= MAX_HELD_STREAM_READERS) return null;
    return new Promise((answer) => {
      // A timer each: a hold is long (seconds) and readers are few per lane, so one shared timer
      // would save nothing worth its bookkeeping.
      const reader: Reader = { after, answer, timer: setTimeout(() => this.drop(seq, reader), holdMs) };
      const readers = this.byJob.get(seq);
      if (readers) readers.push(reader);
      else this.byJob.set(seq, [reader]);
      this.held++;
    });
  }

  /** Something may have been written: look at the end of the turn (once, however many ask), if anyone holds. */
  poke(): void {
    if (this.held === 0 || this.looking) return;
    this.looking = true;
    queueMicrotask(() => {
      this.looking = false;
      this.look();
    });
  }

  /** Answers every reader whose job has something for it now. */
  private look(): void {
    for (const [seq, readers] of this.byJob) {
      const least = Math.min(...readers.map((r) => r.after));
      const some = this.ready(seq, least);
      if (some === false) continue;
      for (const reader of [...readers]) if (some === null || this.ready(seq, reader.after) !== false) this.drop(seq, reader);
    }
  }

  /** Answers a reader and forgets it. */
  private drop(seq: number, reader: Reader): void {
    const readers = this.byJob.get(seq);
    const at = readers?.indexOf(reader) ?? -1;
    if (at < 0) return;
    readers!.splice(at, 1);
    if (readers!.length === 0) this.byJob.delete(seq);
    this.held--;
    clearTimeout(reader.timer);
    reader.answer();
  }
}
