/**
 * The `onOutcome` hook of the test HookLane: records every delivery, and misbehaves on request
 * (payload `{ hook: "throw" }` throws; `{ hook: "hang-once" }` never returns the first time;
 * `{ hook: "held" }` waits until the test opens `heldDeliveries`).
 */
import type { Job } from "../../src/shared/job.js";

const deliveries: Job[] = [];
const hung = new Set<string>();

export function deliveriesOf(jobId: string): Job[] {
  return deliveries.filter((j) => j.id === jobId);
}

/** Deliveries of `{ hook: "held" }` jobs wait here until `open()`; `waiting` counts those in the hook now. */
export const heldDeliveries = (() => {
  let release!: () => void;
  let opened = new Promise<void>((resolve) => (release = resolve));
  const state = {
    waiting: 0,
    open(): void {
      release();
    },
    /** Closes the gate again, for the next test. */
    reset(): void {
      state.waiting = 0;
      opened = new Promise<void>((resolve) => (release = resolve));
    },
    async hold(): Promise<void> {
      state.waiting++;
      try {
        await opened;
      } finally {
        state.waiting--;
      }
    },
  };
  return state;
})();

export async function deliverOutcome(job: Job): Promise<void> {
  deliveries.push(job);
  const mode = (job.payload as { hook?: string } | null)?.hook;
  if (mode === "throw") throw new Error("the outcome hook failed");
  if (mode === "held") return heldDeliveries.hold();
  if (mode === "hang-once" && !hung.has(job.id)) {
    hung.add(job.id);
    await new Promise<never>(() => {});
  }
}
