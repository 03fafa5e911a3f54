/**
 * Reloads that keep up with a busy lane without flooding the server: at most one read in flight and
 * at most one started every `everyMs`; a reload asked for during a read runs once after it. The read
 * is always the latest render's (its filter, its page), even when an older render scheduled it.
 */
import { useEffect, useRef } from "hono/jsx/dom";
import { useAlive } from "./alive.js";

export interface Reload {
  /** Read now (or, if a read is in flight, once more right after it). */
  now(): void;
  /** Read within `everyMs`, sharing the read with every other call until then. */
  soon(): void;
}

export function useCoalescedReload(read: () => Promise<void>, everyMs: number): Reload {
  const latest = useRef(read);
  latest.current = read;
  const state = useRef({ inFlight: false, again: false, lastAt: 0, timer: undefined as ReturnType<typeof setTimeout> | undefined });
  const alive = useAlive();

  const now = async () => {
    const s = state.current;
    if (s.inFlight) {
      s.again = true;
      return;
    }
    s.inFlight = true;
    s.lastAt = Date.now();
    try {
      await latest.current();
    } finally {
      s.inFlight = false;
      if (s.again && alive.current) {
        s.again = false;
        soon();
      }
    }
  };
  const soon = () => {
    const s = state.current;
    if (s.timer !== undefined) return;
    s.timer = setTimeout(() => {
      s.timer = undefined;
      if (alive.current) void now();
    }, Math.max(0, s.lastAt + everyMs - Date.now()));
  };
  useEffect(() => () => clearTimeout(state.current.timer), []);
  return { now: () => void now(), soon };
}
