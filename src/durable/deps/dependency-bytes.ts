/**
 * What a pull claim's candidates' dependencies add to its answer, for the page's size (claim.ts).
 */
import { mayHaveWaits } from "../waits/owned-waits.js";
import * as D from "./dependency-statements.js";

/** What one dependency adds to a claimed job's `dependencies` beyond its result and error: lane, id, outcome and keys. */
const DEPENDENCY_ENTRY_OVERHEAD = 2 * 128 + 96;

/** What claim candidates' dependencies add to a pull claim's answer, by seq (none: absent). */
export function dependencyBytes(sql: SqlStorage, seqs: readonly number[]): Map<number, number> {
  const bytes = new Map<number, number>();
  if (seqs.length === 0) return bytes;
  const query = mayHaveWaits(sql) ? D.DEPENDENCY_BYTES_SQL : D.JOB_DEPENDENCY_BYTES_SQL;
  for (const r of sql.exec<{ seq: number; bytes: number }>(query, JSON.stringify(seqs), DEPENDENCY_ENTRY_OVERHEAD)) bytes.set(r.seq, r.bytes);
  return bytes;
}

