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
  token: () => base64url(crypto.getRandomValues(new Uint8Array(18))),
  random: () => Math.random(),
};

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * Bytes (a multiple of 3: no padding) as base64url text. A claim mints a token per job: `btoa` over
 * a byte string spread from the array, then two `replaceAll`s, cost several times this loop.
 */
export function base64url(bytes: Uint8Array): string {
  if (bytes.length % 3 !== 0) throw new RangeError("base64url: a multiple of 3 bytes");
  let text = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    text += BASE64URL[n >>> 18]! + BASE64URL[(n >>> 12) & 63]! + BASE64URL[(n >>> 6) & 63]! + BASE64URL[n & 63]!;
  }
  return text;
}
