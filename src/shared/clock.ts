/** Where time comes from. Store and dispatcher never read the platform clock themselves. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to: every test controls time. */
export class ManualClock implements Clock {
  constructor(private current: number) {}
  now(): number {
    return this.current;
  }
  /** Moves time forward by `ms` (never backward). */
  advance(ms: number): number {
    if (ms < 0) throw new RangeError("a clock never goes back");
    this.current += ms;
    return this.current;
  }
  set(ms: number): void {
    if (ms < this.current) throw new RangeError("a clock never goes back");
    this.current = ms;
  }
}

/** Where ids, lease tokens and jitter come from. */
export interface Entropy {
  id(): string;
  token(): string;
  /** A number in [0, 1). */
  random(): number;
}

export const systemEntropy: Entropy = {
  id: () => crypto.randomUUID(),
  token: () => {
    const bytes = crypto.getRandomValues(new Uint8Array(18));
    return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_");
  },
  random: () => Math.random(),
};
