/** The upkeep's statements (upkeep.ts runs them): the kinds, queues and histogram buckets of a statement that touched several, and the sink that takes the counts (its trigger rolling the history) and a single job's whole upkeep in one call. */

/** The lane's counts row, its deltas in this order (the sink's parameters ?1…?17). */
export const COUNT_COLUMNS = [
  "queued", "running", "completing", "completed", "failed", "cancelled", "interrupted", "blocked",
  "total_enqueued", "total_claimed", "total_completed", "total_failed", "total_cancelled", "total_interrupted",
  "total_retried", "total_recovered", "total_snoozed",
] as const;

// A row of kinds or queues that only grows may be made by the write (an upsert); one that shrinks
// exists already (its job is there), and an upsert's CHECK would refuse the row it never inserts.
export const KIND_ADD_SQL = `INSERT INTO kind_counts (kind, queued, running) VALUES (?1, ?2, ?3)
  ON CONFLICT (kind) DO UPDATE SET queued = queued + excluded.queued, running = running + excluded.running`;

export const KIND_MOVE_SQL = `UPDATE kind_counts SET queued = queued + ?2, running = running + ?3 WHERE kind = ?1`;

export const QUEUE_ADD_SQL = `INSERT INTO queues (name, queued, active) VALUES (?1, ?2, ?3)
  ON CONFLICT (name) DO UPDATE SET queued = queued + excluded.queued, active = active + excluded.active`;

export const QUEUE_MOVE_SQL = `UPDATE queues SET queued = queued + ?2, active = active + ?3 WHERE name = ?1`;

/** One touched bucket of the histograms (most statements touch one). ?1 name, ?2 outcome, ?3 bucket, ?4 count, ?5 sum. */
export const OBSERVE_ONE_SQL = `INSERT INTO job_histograms (name, outcome, bucket, count, sum_ms) VALUES (?1, ?2, ?3, ?4, ?5)
  ON CONFLICT (name, outcome, bucket) DO UPDATE SET count = count + excluded.count, sum_ms = sum_ms + excluded.sum_ms`;

/** Every touched bucket of the histograms at once. ?1 JSON [[name, outcome, bucket, count, sum_ms], …]. */
export const OBSERVE_SQL = `INSERT INTO job_histograms (name, outcome, bucket, count, sum_ms)
  SELECT value->>0, value->>1, value->>2, value->>3, value->>4 FROM json_each(?1) WHERE true
  ON CONFLICT (name, outcome, bucket) DO UPDATE SET count = count + excluded.count, sum_ms = sum_ms + excluded.sum_ms`;

/**
 * A statement's whole upkeep in one call, when it touched one kind, one queue and one histogram
 * bucket at most (a single job's transition always does): an insert into the sink whose one trigger
 * (migration 22) applies the deltas (the history's roll, the counts, the kind's and queue's rows, the
 * bucket) and stores no row. Per statement, never per job row; it exists because a JS-to-SQL call
 * costs more than the writes, and the writes below would take four or five. ?1…?17 the count deltas
 * (NULL: none), ?18 the minute this statement counts in (NULL: a deletion, or no count moved),
 * ?19…?21 a kind and its deltas, ?22…?24 a queue and its deltas, ?25…?29 a bucket's observations.
 */
export const SINK_SQL = `INSERT INTO upkeep_deltas VALUES (${Array.from({ length: 29 }, (_, i) => `?${i + 1}`).join(", ")})`;
