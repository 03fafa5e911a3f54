/** TTL expiry's statements (expiry.ts runs them; the wake reads the next expiry with its own). */
import { SUBJECT_COLUMNS } from "../store/job-row.js";

/** Queued jobs not yet started whose expiry has come, soonest first. ?1 now, ?2 limit. */
export const EXPIRED_DUE_SQL = `SELECT seq FROM jobs WHERE state = 'queued' AND generation = 0 AND expires_at <= ?1
  ORDER BY expires_at LIMIT +?2`;

/** The given queued jobs settled `cancelled`, "expired". ?1 now, ?2 state (completing or settled), ?3 settled at, ?4 JSON array of seqs. */
export const EXPIRE_SQL = `UPDATE jobs SET state = ?2, outcome = 'cancelled', error = 'expired', settled_at = ?3, updated_at = ?1
  WHERE seq IN (SELECT value FROM json_each(?4)) AND state = 'queued' AND generation = 0
  RETURNING ${SUBJECT_COLUMNS}, blocked`;

export const COUNT_EXPIRED_SQL = `UPDATE lane_counts SET total_expired = total_expired + ?1 WHERE id = 1`;
