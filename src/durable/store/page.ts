/**
 * A page of jobs (a list, a claim's answer) holds at most 4 MiB of JSON (docs/api.md): fewer jobs when
 * they are large, never none while one is there. These bound a job's JSON from its row without
 * serializing it.
 */
import { utf8Length } from "../../shared/json.js";
import type { JobState, Outcome } from "../../shared/job.js";
import type { JobRow } from "./job-row.js";

/** A bound on the JSON of one job beyond its payload, result and error: ids, names, numbers and keys. */
export const JOB_JSON_OVERHEAD = 2_048;

/** What one checkpoint adds to a claimed job's `checkpoints` beyond its value: `"name":` and a comma (names need no escapes). */
export const CHECKPOINT_ENTRY_OVERHEAD = 128 + 4;

/** A claim candidate: its seq, priority, and the bytes its payload, error, errors, progress and checkpoints add to a page. */
export type Candidate = { seq: number; priority: number; bytes: number };

/**
 * A bound on the JSON of a job: its payload, result, errors and progress are stored as the JSON they
 * are sent as, and an error's text grows at most 6× when escaped.
 */
export function rowBytes(row: JobRow): number {
  const stored = (text: string | null) => (text === null ? 0 : utf8Length(text));
  return stored(row.payload) + stored(row.result) + stored(row.errors) + stored(row.progress) + stored(row.depends_on) + 6 * (row.error?.length ?? 0) + JOB_JSON_OVERHEAD;
}

/** The first candidates whose answer stays within `maxBytes` (never none while one is there). */
export function withinBytes(candidates: Candidate[], maxBytes: number): Candidate[] {
  if (maxBytes === Infinity) return candidates;
  let bytes = 0;
  let n = 0;
  for (const candidate of candidates) {
    bytes += candidate.bytes + JOB_JSON_OVERHEAD;
    if (n > 0 && bytes > maxBytes) break;
    n++;
  }
  return candidates.slice(0, n);
}

/** What a list asks for (`LaneStore.listJobs`): a page of jobs in enqueue order. */
export interface ListFilter {
  state?: JobState | undefined;
  outcome?: Outcome | undefined;
  kind?: string | undefined;
  queue?: string | undefined;
  afterSeq: number;
  limit: number;
}
