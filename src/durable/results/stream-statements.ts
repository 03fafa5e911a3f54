/**
 * The SQL of jobs' streams (docs/api.md "Results"). Transitions and progress are written by the
 * triggers of migration 24, in the statement that changes the job; chunks here, behind the fence.
 * `now` is always a parameter.
 */
import { FENCE } from "../attempts/fence.js";

/** The job the fence lets write: its seq, attempts, and its stream's chunks and bytes so far. ?1 id, ?2 token, ?3 now. */
export const STREAM_WRITER_SQL = `SELECT jobs.seq, jobs.attempts, COALESCE(s.chunks, 0) AS chunks, COALESCE(s.bytes, 0) AS bytes
  FROM jobs LEFT JOIN job_streams s ON s.job = jobs.seq WHERE ${FENCE}`;

/**
 * A write's chunks, in order, after the job's last event (a running job with none stored was inserted
 * running: its enqueue and claim, seqs 1 and 2, are the row's, migrations/v24.ts). ?1 the job's seq, ?2 now, ?3 attempt,
 * ?4 JSON array of each chunk's JSON text (strings, so that json_each gives back the text itself).
 */
export const INSERT_CHUNKS_SQL = `INSERT INTO job_events (job, seq, type, at, attempt, data)
  SELECT ?1, (SELECT COALESCE(MAX(seq), 2) FROM job_events WHERE job = +?1) + c.key + 1, 'chunk', ?2, ?3, c.value
  FROM json_each(?4) AS c ORDER BY c.key
  RETURNING seq`;

/** The job's chunks so far. ?1 the job's seq, ?2 chunks added, ?3 bytes added. */
export const COUNT_CHUNKS_SQL = `INSERT INTO job_streams (job, chunks, bytes) VALUES (?1, ?2, ?3)
  ON CONFLICT (job) DO UPDATE SET chunks = chunks + excluded.chunks, bytes = bytes + excluded.bytes`;

/** A job by id: its seq, and what its enqueue's event (seq 1, never stored) is made of. ?1 id. */
export const STREAM_JOB_SQL = `SELECT seq, state, blocked, outcome, created_at FROM jobs WHERE id = ?1`;

/** The state a job's first stored transition left: the one its enqueue made. ?1 the job's seq. */
export const FIRST_TRANSITION_SQL = `SELECT from_state FROM job_events WHERE job = +?1 AND type = 'transition' ORDER BY seq LIMIT 1`;

/** A job by seq: its state and its last event's seq (none stored: 1, or 2 for a job inserted running and running still). ?1 the job's seq. */
export const STREAM_HEAD_SQL = `SELECT state, (SELECT COALESCE(MAX(seq), IIF(jobs.state = 'running', 2, 1)) FROM job_events WHERE job = ?1) AS last FROM jobs WHERE seq = ?1`;

/** A page of a job's events after a seq, in order. ?1 the job's seq, ?2 after, ?3 limit. */
export const STREAM_EVENTS_SQL = `SELECT seq, type, at, attempt, from_state, to_state, outcome, data FROM job_events
  WHERE job = +?1 AND seq > ?2 ORDER BY seq LIMIT +?3`;

/**
 * The progress events of a job past the last 100: the subquery by which migration 24's trigger drops
 * them, as a statement of its own for the query-plan test (a migration's text never changes; this
 * must say what it says). ?1 the job's seq.
 */
export const PROGRESS_PAST_KEPT_SQL = `SELECT seq FROM job_events WHERE job = +?1 AND type = 'progress' ORDER BY seq DESC LIMIT 1 OFFSET 100`;

/** The statements the query-plan tests read (each must use its index). */
export const STREAM_HOT_STATEMENTS: readonly [string, string, (now: number) => unknown[]][] = [
  ["a stream writer's fence", STREAM_WRITER_SQL, (now) => ["a", "t", now]],
  ["a stream's head", STREAM_HEAD_SQL, () => [1]],
  ["a page of a stream", STREAM_EVENTS_SQL, () => [1, 0, 100]],
];
