/**
 * Dependencies' results held in R2 (docs/api.md "Big payloads"): a dependency's notice carries its
 * result's column text, which for a big result is the reference to its object. A pull claim's
 * `dependencies` entry then says `resultRef` (and `result` null); an in-process executor gets it whole.
 */
import type { DependencyOutcome, Job, Json } from "../../shared/job.js";
import { isHeld, keyOfRef, refOf } from "./held.js";
import type { PayloadStore } from "./payload-store.js";

/** A dependency's result as an entry shows it: the value, or null and its reference when held in R2. */
export function dependencyResult(text: string | null): { result: Json; resultRef?: { bytes: number } } {
  if (text === null) return { result: null };
  return isHeld(text) ? { result: null, resultRef: refOf(text) } : { result: JSON.parse(text) as Json };
}

/**
 * What an in-process attempt is started with when something of it is held in R2: its payload, and its
 * dependencies' results, whole. Null when nothing is (the attempt starts in its own turn, as before).
 * A dependency's object deleted with its job meanwhile (retention) is left as its reference.
 */
export function wholeForExecutor(payloads: PayloadStore, job: Job, dependencies: () => DependencyOutcome[]): Promise<{ payload: Json; dependencies?: DependencyOutcome[] }> | null {
  const deps = job.dependsOn.length > 0 && payloads.mayHold ? dependencies() : [];
  const heldDeps = deps.some((d) => "resultRef" in d && d.resultRef !== undefined);
  if (job.payloadRef === null && !heldDeps) return null;
  return (async () => {
    const payload = job.payloadRef === null ? job.payload : (await payloads.whole(job)).payload;
    if (!heldDeps) return { payload };
    const whole = await Promise.all(
      deps.map(async (d) => {
        const ref = "resultRef" in d ? d.resultRef : undefined;
        const key = ref ? keyOfRef(ref) : undefined;
        if (!ref || key === undefined) return d;
        const text = await payloads.text(key);
        if (text === null) return d;
        const { resultRef: _, ...rest } = d as typeof d & { resultRef?: unknown };
        return { ...rest, result: JSON.parse(text) as Json } as DependencyOutcome;
      }),
    );
    return { payload, dependencies: whole };
  })();
}
