/** The statements of bulk actions (bulk-actions.ts runs them): their rows, and the jobs a chunk reaches. */
import { UNTOLD } from "../operator/operator-statements.js";
import { SETTLE_CANCELLED_SQL } from "../attempts/lease-statements.js";
import { REQUEUE_SQL } from "../store/job-statements.js";
import { SNAP_COLUMNS, type Snap } from "../store/upkeep.js";

const BULK_COLUMNS = `id, action, filter, reason, last_seq, cursor, done, skipped, created_at, finished_at`;

/** A bulk action's row, as the table holds it. */
export type BulkRow = {
  id: string;
  action: "requeue" | "cancel" | "delete";
  filter: string;
  reason: string | null;
  last_seq: number;
  cursor: number;
  done: number;
  skipped: number;
  created_at: number;
  finished_at: number | null;
};

/**
 * A job a chunk reached: its state as the API names it (`shown`: blocked apart), what its action
 * needs to decide, whether a sweep would keep it (`kept`), and what the upkeep reads of it.
 */
export type ReachedJob = Snap & {
  seq: number;
  id: string;
  shown: "blocked" | "queued" | "running" | "completing" | "settled";
  cancel_requested: number;
  kept: number;
};

/** A job a chunk changed (requeued, or settled cancelled), as the upkeep and the transitions read it. */
export type ChangedJob = Snap & { seq: number; id: string; attempts: number; generation: number; traceparent: string | null };

/** The bulk action that runs (at most one). */
export const RUNNING_BULK_SQL = `SELECT ${BULK_COLUMNS} FROM bulk_actions WHERE finished_at IS NULL LIMIT 1`;

/** One bulk action by id. ?1 id. */
export const BULK_BY_ID_SQL = `SELECT ${BULK_COLUMNS} FROM bulk_actions WHERE id = ?1`;

/** When the oldest finished bulk action finished (null: none kept). */
export const OLDEST_FINISHED_SQL = `SELECT MIN(finished_at) AS at FROM bulk_actions WHERE finished_at IS NOT NULL`;

/** A new bulk action, after the newest job there is now. ?1 id, ?2 action, ?3 filter JSON, ?4 reason, ?5 now. */
export const INSERT_BULK_SQL = `INSERT INTO bulk_actions (id, action, filter, reason, last_seq, cursor, created_at)
  VALUES (?1, ?2, ?3, ?4, (SELECT COALESCE(MAX(seq), 0) FROM jobs), 0, ?5) RETURNING ${BULK_COLUMNS}`;

/** A chunk's progress, in the chunk's transaction. ?1 id, ?2 cursor, ?3 done, ?4 skipped, ?5 finished at (null: runs on). */
export const ADVANCE_BULK_SQL = `UPDATE bulk_actions SET cursor = ?2, done = done + ?3, skipped = skipped + ?4, finished_at = ?5
  WHERE id = ?1 RETURNING ${BULK_COLUMNS}`;

/** Finished bulk actions past their keeping. ?1 cutoff. */
export const PRUNE_BULKS_SQL = `DELETE FROM bulk_actions WHERE finished_at IS NOT NULL AND finished_at <= ?1`;

const STATE = `CASE WHEN state = 'queued' AND blocked > 0 THEN 'blocked' ELSE state END`;

/**
 * The jobs of one chunk: enqueue order after the cursor, up to a seq (the scan's bound), those that
 * match every field of the filter, at most a chunk. A range of the primary key, whatever the filter
 * (its columns are kept off their indexes with `+`). The parameters compared for equality and the
 * limit are written `+?N`: bare, they would make SQLite compile the statement again at every run
 * (test/node/statement-text.test.ts). ?1 after seq, ?2 up to seq, ?3 state, ?4 outcome, ?5 kind,
 * ?6 queue, ?7 created after, ?8 created before (each null: any), ?9 limit.
 */
export const CHUNK_SQL = `SELECT seq, id, ${STATE} AS shown, cancel_requested, ${UNTOLD} AS kept, ${SNAP_COLUMNS} FROM jobs
  WHERE seq > ?1 AND seq <= ?2 AND (?3 IS NULL OR ${STATE} = +?3) AND (?4 IS NULL OR +outcome = +?4)
    AND (?5 IS NULL OR +kind = +?5) AND (?6 IS NULL OR +queue = +?6) AND (?7 IS NULL OR +created_at > ?7) AND (?8 IS NULL OR +created_at < ?8)
  ORDER BY seq LIMIT +?9`;

/** Where the requeue route's statement names its one job: the bulk requeue's names a chunk's. */
const ONE_JOB = "\n  WHERE seq = ?1 AND state = 'settled' RETURNING ";
if (!REQUEUE_SQL.includes(ONE_JOB)) throw new Error("the requeue statement no longer names its job as the bulk requeue expects");

/**
 * The requeue route's statement (job-statements.ts: the same new life, the same debounce rule, row
 * by row) over a chunk's jobs at once: those settled otherwise than completed. ?1 JSON array of
 * seqs, ?2 now.
 */
export const REQUEUE_CHUNK_SQL = `${REQUEUE_SQL.slice(0, REQUEUE_SQL.indexOf(ONE_JOB))}
  WHERE seq IN (SELECT value FROM json_each(?1)) AND state = 'settled' AND outcome <> 'completed'
  RETURNING seq, id, attempts, generation, traceparent, ${SNAP_COLUMNS}`;

/** Where the cancel route's settlement names its one job: the bulk cancel's names a chunk's. */
const ONE_SETTLED = "\n  WHERE seq = ?1 AND state = ?2 RETURNING ";
if (!SETTLE_CANCELLED_SQL.includes(ONE_SETTLED)) throw new Error("the cancel statement no longer names its job as the bulk cancel expects");

/**
 * The cancel route's settlement of a queued (or blocked) job (lease-statements.ts) over a chunk's
 * queued jobs at once. ?1 JSON array of seqs, ?2 'queued', ?3 state (completing or settled), ?4
 * reason, ?5 settled at, ?6 now.
 */
export const CANCEL_CHUNK_SQL = `${SETTLE_CANCELLED_SQL.slice(0, SETTLE_CANCELLED_SQL.indexOf(ONE_SETTLED))}
  WHERE seq IN (SELECT value FROM json_each(?1)) AND state = ?2
  RETURNING seq, id, attempts, generation, traceparent, ${SNAP_COLUMNS}`;
