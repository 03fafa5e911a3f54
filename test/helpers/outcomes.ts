/**
 * The `onOutcome` hook of the test HookLane: records every delivery, and misbehaves on request
 * (payload `{ hook: "throw" }` throws; `{ hook: "hang-once" }` never returns the first time).
 */
import type { Job } from "../../src/shared/job.js";

const deliveries: Job[] = [];
const hung = new Set<string>();

export function deliveriesOf(jobId: string): Job[] {
  return deliveries.filter((j) => j.id === jobId);
}

export async function deliverOutcome(job: Job): Promise<void> {
  deliveries.push(job);
  const mode = (job.payload as { hook?: string } | null)?.hook;
  if (mode === "throw") throw new Error("the outcome hook failed");
  if (mode === "hang-once" && !hung.has(job.id)) {
    hung.add(job.id);
    await new Promise<never>(() => {});
  }
}
