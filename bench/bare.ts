/**
 * The bare table: the floors' second table, the platform without us. It has the lane's `jobs` columns,
 * read from the live schema (`PRAGMA table_info`), so it keeps the same columns as migrations add
 * them, with their types, NOT NULL and defaults (the same INSERT writes the same row), and nothing of
 * ours on top: only its primary key, a plain rowid (no AUTOINCREMENT), no other index, no trigger, no
 * CHECK, no UNIQUE. A floor on `jobs` itself slows down with every index and trigger the product adds,
 * and so hides the very cost it is read against; this one moves only with SQLite and the runtime.
 * Never deployed: only the bench's probe lanes create it.
 */

export type FloorTable = "jobs" | "bare";

const BARE = "bare_jobs";

export const tableName = (table: FloorTable) => (table === "bare" ? BARE : "jobs");

/** The same columns the queue's insertJobs writes, without RETURNING. */
export const insertJobSql = (table: FloorTable) => `INSERT INTO ${tableName(table)} (id, kind, payload, queue, priority, run_at, state, max_attempts,
  backoff_base_ms, backoff_max_ms, timeout_ms, max_recoveries, recovery_window_ms, created_at, updated_at)
  VALUES (?, ?, ?, NULL, 0, ?, 'queued', 3, 1000, 300000, 60000, 3, 3600000, ?, ?)`;

export const updateByPkSql = (table: FloorTable) => `UPDATE ${tableName(table)} SET updated_at = ?, error = ? WHERE seq = ?`;

const CLAIM_SET = `state = 'running', attempts = attempts + 1, generation = generation + 1,
    lease_token = ?, lease_until = ?, claimed_at = ?, updated_at = ?`;

/** One claim, the way a queue would write it: the head of the claim index, leased, returned. */
export const CLAIM_ONE = `UPDATE jobs SET ${CLAIM_SET}
  WHERE seq = (SELECT seq FROM jobs WHERE state = 'queued' ORDER BY priority DESC, seq LIMIT 1)
  RETURNING seq, id, generation`;

/**
 * The same claim on the bare table. With no claim index, the head is found through the primary key
 * from the last row claimed (`seq > ?`): the lookup an index gives the lane, at the price of a rowid
 * seek. Without that bound every claim would scan the rows claimed before it, and the floor would
 * measure a missing index instead of the platform.
 */
export const BARE_CLAIM_ONE = `UPDATE ${BARE} SET ${CLAIM_SET}
  WHERE seq = (SELECT seq FROM ${BARE} WHERE seq > ? AND state = 'queued' ORDER BY seq LIMIT 1)
  RETURNING seq, id, generation`;

type ColumnInfo = {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
};

/** Creates the bare table once per object, from the columns `jobs` has now. */
export function ensureBareTable(sql: SqlStorage): void {
  const columns = sql.exec<ColumnInfo>(`PRAGMA table_info(jobs)`).toArray();
  const primary = columns.filter((c) => c.pk > 0);
  if (primary.length !== 1 || primary[0]!.name !== "seq") throw new Error("the bare table expects jobs to have the primary key seq");
  const definitions = columns.map((c) =>
    c.pk > 0
      ? `${c.name} INTEGER PRIMARY KEY`
      : `${c.name} ${c.type}${c.notnull ? " NOT NULL" : ""}${c.dflt_value === null ? "" : ` DEFAULT (${c.dflt_value})`}`,
  );
  sql.exec(`CREATE TABLE IF NOT EXISTS ${BARE} (${definitions.join(", ")})`);
}

/**
 * `n` claim-shaped UPDATEs on the bare table, from the row after `after` on: the rows claimed and the
 * last seq claimed (the next call's `after`).
 */
export function bareClaims(sql: SqlStorage, n: number, after: number, now: number): { claimed: number; last: number } {
  let last = after;
  let claimed = 0;
  for (let i = 0; i < n; i++) {
    const row = sql.exec<{ seq: number }>(BARE_CLAIM_ONE, `t${i}`, now + 30_000, now, now, last).toArray()[0];
    if (!row) break;
    last = row.seq;
    claimed++;
  }
  return { claimed, last };
}
