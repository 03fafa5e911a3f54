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
 * What an in-process attempt is started with. `payload`: its payload whole, once it and its
 * dependencies' held results are read back from R2; null when nothing of it is held (the attempt
 * starts in its own turn, as before). `dependencies`: what `ctx.dependencies` shows, read from the
 * lane once, whether the read-back needed it first or the executor does (held results whole once
 * `payload` has resolved).
 */
export interface ExecutorStart {
  payload: Promise<Json> | null;
  dependencies: () => DependencyOutcome[];
}

/**
 * The start of an in-process attempt of `job` (`read`: its dependencies from the lane). They are read
 * here only when one may hold a result in R2 (the job names dependencies, the lane has held an object); a
 * dependency's object deleted with its job meanwhile (retention) is left as its reference.
 */
export function wholeForExecutor(payloads: PayloadStore, job: Job, read: () => DependencyOutcome[]): ExecutorStart {
  let known: DependencyOutcome[] | undefined;
  const dependencies = () => (known ??= read());
  const heldDeps = job.dependsOn.length > 0 && payloads.mayHold && dependencies().some((d) => "resultRef" in d && d.resultRef !== undefined);
  if (job.payloadRef === null && !heldDeps) return { payload: null, dependencies };
  const payload = (async () => {
    const whole = job.payloadRef === null ? job.payload : (await payloads.whole(job)).payload;
    if (heldDeps) known = await Promise.all(known!.map((d) => wholeResult(payloads, d)));
    return whole;
  })();
  return { payload, dependencies };
}

/** A dependency's entry with its held result read back whole (as it was when nothing is held, or its object is gone). */
async function wholeResult(payloads: PayloadStore, d: DependencyOutcome): Promise<DependencyOutcome> {
  const ref = "resultRef" in d ? d.resultRef : undefined;
  const key = ref ? keyOfRef(ref) : undefined;
  if (key === undefined) return d;
  const text = await payloads.text(key);
  if (text === null) return d;
  const { resultRef: _, ...rest } = d as typeof d & { resultRef?: unknown };
  return { ...rest, result: JSON.parse(text) as Json } as DependencyOutcome;
}
