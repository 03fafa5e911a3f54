/** Debounce's statements (debounce.ts runs them; a key move reads the key's queued job with the first). */
import { JOB_COLUMNS } from "../store/job-row.js";

/** The queued, not yet started job of a key. ?1 key. */
export const DEBOUNCE_TARGET_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE debounce_key = ?1 AND state = 'queued' AND generation = 0`;

/**
 * The job replaced in place by a new request of its key. ?1 seq, ?2 kind, ?3 payload, ?4 queue,
 * ?5 priority, ?6 run at, ?7 max attempts, ?8 backoff base, ?9 backoff max, ?10 timeout,
 * ?11 max recoveries, ?12 recovery window, ?13 ttl, ?14 expires at, ?15 debounce (JSON), ?16 deadline, ?17 now,
 * ?18 traceparent.
 */
export const REPLACE_SQL = `UPDATE jobs SET kind = ?2, payload = ?3, queue = ?4, priority = ?5, run_at = ?6, max_attempts = ?7,
    backoff_base_ms = ?8, backoff_max_ms = ?9, timeout_ms = ?10, max_recoveries = ?11, recovery_window_ms = ?12,
    ttl_ms = ?13, expires_at = ?14, debounce = ?15, debounce_deadline = ?16, updated_at = ?17, traceparent = ?18
  WHERE seq = ?1 AND state = 'queued' AND generation = 0 RETURNING ${JOB_COLUMNS}`;

export const COUNT_DEBOUNCED_SQL = `UPDATE lane_counts SET total_debounced = total_debounced + 1 WHERE id = 1`;
