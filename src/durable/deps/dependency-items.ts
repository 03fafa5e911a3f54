/**
 * A job spec's `dependsOn` items (jobs and waitpoints, each lane named) as the dependent's enqueue
 * reads them, and the refusal that names those that do not exist.
 */
import type { DependsOnItem, JobRef } from "../../shared/job.js";
import type { JobSpec } from "../store/job-row.js";
import { isWaitpointRef } from "../waits/depends-on-waits.js";

/** A spec's `dependsOn` items (jobs and waitpoints), each lane named. */
export function itemsOf(spec: JobSpec): DependsOnItem[] {
  return spec.dependsOn === null ? [] : (JSON.parse(spec.dependsOn) as DependsOnItem[]);
}

export const isJobRef = (item: DependsOnItem): item is JobRef => "id" in item;

/** A spec's dependencies on jobs, each lane named (its waitpoints apart: waits/). */
export function refsOf(spec: JobSpec): JobRef[] {
  return itemsOf(spec).filter(isJobRef);
}

/** The refusal of an enqueue whose `dependsOn` names items that do not exist. */
export function notFound(missing: readonly DependsOnItem[]): { ok: false; error: { code: "dependency_not_found"; message: string; details: { dependencies: DependsOnItem[] } } } {
  const named = missing.map((r) => (isWaitpointRef(r) ? `waitpoint ${r.lane}/${r.waitpoint}` : `${r.lane}/${r.id}`)).join(", ");
  return { ok: false, error: { code: "dependency_not_found", message: `no such dependency: ${named}`, details: { dependencies: [...missing] } } };
}
