/**
 * The SQL of a lane's job rows as the store keeps them: inserts (one, started at once, many), reads,
 * lists and requeue. The statements an attempt's holder makes through the fence are in
 * attempts/lease-statements.ts, the claim's in attempts/claim-statements.ts. `now` is always a
 * parameter; nothing here reads the clock.
 */
import { newJobMayStart } from "../flow/may-start.js";
import { JOB_COLUMNS } from "./job-row.js";

const INSERT_COLUMNS = `id, kind, payload, queue, priority, run_at, max_attempts, backoff_base_ms, backoff_max_ms,
  timeout_ms, max_recoveries, recovery_window_ms, ttl_ms, expires_at, debounce, debounce_key, debounce_deadline, depends_on, dependency_failure,
  traceparent, state, created_at, updated_at`;

// ---- enqueue ----

/** The placeholders of `specValues`, ?1…?20. */
const SPEC_VALUES = Array.from({ length: 20 }, (_, i) => `?${i + 1}`).join(", ");

/**
 * One new job; ?1…?20 `specValues`, ?21 now. Answers its seq, or nothing when the id exists (the
 * store then reads that job to tell a duplicate from a conflict).
 */
export const INSERT_ONE_SQL = `INSERT INTO jobs (${INSERT_COLUMNS}) VALUES (${SPEC_VALUES}, 'queued', ?21, ?21)
  ON CONFLICT (id) DO NOTHING RETURNING seq`;

/**
 * One new job that waits for `?22` dependencies not yet settled (0: none; it is queued as any job):
 * while it waits, its row's run_at is ?23 (BLOCKED_RUN_AT) and its runAt waits in blocked_run_at.
 * ?1…?20 `specValues`, ?21 now. Answers its seq, or nothing when the id exists.
 */
export const INSERT_DEPENDENT_SQL = `INSERT INTO jobs (${INSERT_COLUMNS}, blocked, blocked_run_at)
  VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN ?22 > 0 THEN ?23 ELSE ?6 END, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
    'queued', ?21, ?21, ?22, CASE WHEN ?22 > 0 THEN ?6 END)
  ON CONFLICT (id) DO NOTHING RETURNING seq`;

/**
 * One new job started at once by the lane's dispatcher: inserted running, its first lease minted,
 * when it may start now (a slot free, its TTL not passed: flow/may-start.ts) — one statement where a
 * queued insert and a claim take two, and none of the queued-only indexes written. Returns its seq;
 * nothing when the id exists or it may not start (the caller then enqueues it queued). ?1…?20
 * `specValues`, ?21 now, ?22 token, ?23 lease until, ?24 slots held besides running rows,
 * ?25 concurrency, ?26 the code's version.
 */
export const INSERT_STARTED_SQL = `INSERT INTO jobs (${INSERT_COLUMNS}, attempts, generation, lease_token, lease_until, lease_holder, claimed_at, lease_version)
  SELECT ${SPEC_VALUES}, 'running', ?21, ?21, 1, 1, ?22, ?23, 'lane', ?21, ?26
  WHERE ${newJobMayStart({ expiresAt: "?14", heldSlots: "?24", concurrency: "?25", now: "?21" })}
  ON CONFLICT (id) DO NOTHING RETURNING seq`;

/** Many new jobs from one JSON array of `specValues` rows, in order; returns the ids it inserted. ?1 rows, ?2 now. */
export const INSERT_MANY_SQL = `INSERT INTO jobs (${INSERT_COLUMNS})
  SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9,
    value->>10, value->>11, value->>12, value->>13, value->>14, value->>15, value->>16, value->>17, value->>18, value->>19, 'queued', ?2, ?2
  FROM json_each(?1) WHERE true ORDER BY key
  ON CONFLICT (id) DO NOTHING RETURNING id`;

// ---- read ----

/** One job by id. ?1 id. */
export const JOB_BY_ID_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?1`;

/** One job's kind alone (a completion's result check reads no payload or result). ?1 id. */
export const KIND_BY_ID_SQL = `SELECT kind FROM jobs WHERE id = ?1`;

/** Jobs by id, for the duplicates of a batch. ?1 JSON array of ids. */
export const JOBS_BY_IDS_SQL = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id IN (SELECT value FROM json_each(?1))`;

/** A page of jobs in enqueue order. ?1 after seq, ?2 state, ?3 outcome, ?4 kind, ?5 queue (each null: any), ?6 limit. */
export const LIST_SQL = `SELECT ${JOB_COLUMNS} FROM jobs
  WHERE seq > ?1 AND (?2 IS NULL OR CASE WHEN state = 'queued' AND blocked > 0 THEN 'blocked' ELSE state END = +?2) AND (?3 IS NULL OR outcome = +?3)
    AND (?4 IS NULL OR kind = +?4) AND (?5 IS NULL OR queue = +?5)
  ORDER BY seq LIMIT +?6`;

// ---- requeue ----

/**
 * A settled job queued again with a fresh attempt budget, as a new life: dependencies it was still
 * waiting for (it was cancelled while blocked) no longer hold it; a TTL counts from now (an expired
 * job is not expired again at once); a debounce key another queued, not yet started job holds now
 * stays that job's (one such job per key: the unique index), and this one comes back without it.
 * ?1 seq, ?2 now.
 */
export const REQUEUE_SQL = `UPDATE jobs SET state = 'queued', outcome = NULL, attempts = 0, run_at = ?2, result = NULL, blocked = 0, blocked_run_at = NULL,
    cancel_requested = 0, cancel_reason = NULL, recovery_count = 0, recovery_window_start = NULL,
    settled_at = NULL, updated_at = ?2, attempt_end = NULL, expires_at = ?2 + ttl_ms,
    debounce_key = CASE WHEN EXISTS (SELECT 1 FROM jobs AS holder WHERE holder.debounce_key = jobs.debounce_key
      AND holder.state = 'queued' AND holder.generation = 0) THEN NULL ELSE debounce_key END
  WHERE seq = ?1 AND state = 'settled' RETURNING ${JOB_COLUMNS}`;

