/**
 * Deadlines of things held in memory (held reads), with one timer for the earliest: when it fires,
 * the entries due are handed over and the timer is set for the next. Kept in a binary min-heap, so
 * the next deadline costs O(log n) however the waits interleave (a scan per expiry would cost O(n²)
 * over n entries that each end at their own instant). An entry answered before its deadline stays in
 * the heap until popped (its `done` says so): removing it early would cost a search.
 */
export interface Deadlined {
  /** Real time (timers run on real time, whatever the lane's clock says). */
  readonly deadline: number;
  done: boolean;
}

export class Deadlines<T extends Deadlined> {
  private heap: T[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;

  /** `due`: the entries not yet done whose deadline has passed, earliest first. */
  constructor(private readonly due: (entries: T[]) => void) {}

  /** Adds an entry; the timer moves only when it is the earliest. */
  add(entry: T): void {
    this.push(entry);
    if (entry.deadline < this.timerAt) this.arm(entry.deadline);
  }

  /** Forgets every entry and stops the timer (nothing is held any more). */
  clear(): void {
    this.heap = [];
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - Date.now()));
  }

  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const due = this.takeDue(Date.now());
    const next = this.next();
    if (next !== null) this.arm(next);
    if (due.length > 0) this.due(due);
  }

  private push(entry: T): void {
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.deadline <= entry.deadline) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  /** The earliest deadline of an entry not yet done (those done at the top are dropped); null: none. */
  private next(): number | null {
    while (this.heap.length > 0 && this.heap[0]!.done) this.pop();
    return this.heap.length > 0 ? this.heap[0]!.deadline : null;
  }

  /** Takes every entry not yet done whose deadline is at or before `now`. */
  private takeDue(now: number): T[] {
    const due: T[] = [];
    while (this.heap.length > 0 && this.heap[0]!.deadline <= now) {
      const entry = this.pop();
      if (!entry.done) due.push(entry);
    }
    return due;
  }

  private pop(): T {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child = right < heap.length && heap[right]!.deadline < heap[left]!.deadline ? right : left;
        if (heap[child]!.deadline >= last.deadline) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
