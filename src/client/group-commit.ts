/**
 * Group commit: concurrent single calls to one lane, made in one isolate, travel as one call
 * (docs/architecture.md). A call to a lane with nothing in flight goes at once, after one microtask
 * (so that the calls of the same turn go with it); calls made while one is in flight wait, and the
 * first of them, once it returns, takes them all along (at most `maxItems` and about `maxBytes`).
 * Each caller gets its own answer, whatever the others' were. A lone call waits one microtask, never
 * more; under load the groups are as large as the callers who waited.
 *
 * The group's call is made by one of its callers, in its own request context, with its own `send`:
 * each caller waits for its turn on a promise of its own, so that on the Workers runtime a caller
 * never resumes in another request's context and never uses another request's stub.
 */

import type { Result } from "../shared/errors.js";

/** How long a caller's timer keeps it waiting for its group (far more than any call takes). */
const KEEP_WAITING_MS = 120_000;

type Deferred<T> = { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void };

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

interface Entry<I, O> {
  item: I;
  bytes: number;
  /** Resolved when this caller leads the next group, or its item has been taken into one. */
  turn: Deferred<void>;
  taken: boolean;
  answer: Deferred<O>;
}

interface Group<I, O> {
  waiting: Entry<I, O>[];
  /** A group's call is in flight (or about to be made). */
  busy: boolean;
}

export interface GroupLimits {
  maxItems: number;
  maxBytes: number;
}

/** What a group's call reports, for the benchmark: how many calls, how many items they carried. */
export interface GroupCounters {
  calls: number;
  items: number;
  largest: number;
}

export class GroupCommit<I, O> {
  private readonly groups = new Map<string, Group<I, O>>();
  readonly counters: GroupCounters = { calls: 0, items: 0, largest: 0 };

  // No parameter properties: the client runs in Node straight from TypeScript by type stripping.
  private readonly limits: GroupLimits;
  constructor(limits: GroupLimits) {
    this.limits = limits;
  }

  /**
   * Makes `item`'s call to the lane `key` as part of a group: `send` makes one call for many items
   * and answers one result per item, in order (it must not throw for one item's sake). `keepAlive`,
   * when given, is handed the group's call this caller makes, so that it completes even if the
   * caller's own request goes away (the others wait on it).
   */
  async call(key: string, item: I, bytes: number, send: (items: I[]) => Promise<O[]>, keepAlive?: (promise: Promise<unknown>) => void): Promise<O> {
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { waiting: [], busy: false }));
    const entry: Entry<I, O> = { item, bytes, turn: deferred(), taken: false, answer: deferred() };
    group.waiting.push(entry);
    const leads = !group.busy;
    if (leads) {
      group.busy = true;
      entry.turn.resolve();
    }
    // A request of the Workers runtime that waits on nothing of its own but another request's
    // promise is cancelled as hung: a caller that waits for another's call keeps a timer of its own
    // until it is answered (one that leads at once waits on its own call).
    const alive = leads ? undefined : setTimeout(() => undefined, KEEP_WAITING_MS);
    try {
      await entry.turn.promise;
      if (!entry.taken) {
        // This caller leads: one more microtask, so that callers just answered by the last group,
        // which call again at once, join this one (with one, groups of 16 waiting callers held 8 on
        // average, with two 16), then the group goes. Both run in the current turn's microtasks.
        await Promise.resolve();
        const call = this.lead(key, group, send);
        keepAlive?.(call);
        await call;
      }
      return await entry.answer.promise;
    } finally {
      if (alive !== undefined) clearTimeout(alive);
    }
  }

  private async lead(key: string, group: Group<I, O>, send: (items: I[]) => Promise<O[]>): Promise<void> {
    const batch: Entry<I, O>[] = [];
    let bytes = 0;
    while (group.waiting.length > 0 && batch.length < this.limits.maxItems) {
      const next = group.waiting[0]!;
      if (batch.length > 0 && bytes + next.bytes > this.limits.maxBytes) break;
      group.waiting.shift();
      next.taken = true;
      next.turn.resolve(); // it waits for its answer now
      batch.push(next);
      bytes += next.bytes;
    }
    this.counters.calls++;
    this.counters.items += batch.length;
    this.counters.largest = Math.max(this.counters.largest, batch.length);
    try {
      const answers = await send(batch.map((e) => e.item));
      batch.forEach((e, i) => (i < answers.length ? e.answer.resolve(answers[i]!) : e.answer.reject(new Error(`the group's call answered ${answers.length} of ${batch.length} items`))));
    } catch (error) {
      for (const e of batch) e.answer.reject(error);
    } finally {
      // The first caller that waited leads the next group, in its own context.
      const next = group.waiting[0];
      if (next) next.turn.resolve();
      else {
        group.busy = false;
        this.groups.delete(key);
      }
    }
  }
}

/**
 * One call for a group of enqueue texts: alone, as `enqueueText`; else `enqueueGroup`, whose refusal
 * of the whole call (a lane of a newer schema) becomes every caller's answer.
 */
export async function sendGroup(stub: { enqueueText(text: string): string | Promise<string>; enqueueGroup(texts: string[]): Result<string[]> | Promise<Result<string[]>> }, texts: string[]): Promise<string[]> {
  if (texts.length === 1) return [await stub.enqueueText(texts[0]!)];
  const answer = await stub.enqueueGroup(texts);
  return answer.ok ? answer.value : texts.map(() => JSON.stringify(answer));
}
