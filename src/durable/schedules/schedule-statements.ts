/**
 * Every SQL statement of a lane's schedules, by name, with its parameter legend. `now` is always a
 * parameter. The query-plan test reads the hot ones (`SCHEDULE_HOT_STATEMENTS`).
 */

/** A row of `schedules`, column for column. */
export type ScheduleRow = {
  name: string;
  cron: string | null;
  timezone: string | null;
  every_ms: number | null;
  /** The job template as JSON text. */
  job: string;
  paused: number;
  next_run_at: number | null;
  last_run_at: number | null;
  last_job_id: string | null;
  created_at: number;
  updated_at: number;
};

const COLUMNS = `name, cron, timezone, every_ms, job, paused, next_run_at, last_run_at, last_job_id, created_at, updated_at`;

/** One schedule. ?1 name. */
export const SCHEDULE_BY_NAME_SQL = `SELECT ${COLUMNS} FROM schedules WHERE name = ?1`;

/** A page of schedules by name. ?1 after name (exclusive), ?2 limit. */
export const SCHEDULE_PAGE_SQL = `SELECT ${COLUMNS} FROM schedules WHERE name > ?1 ORDER BY name LIMIT +?2`;

/** A new schedule. ?1 name, ?2 cron, ?3 timezone, ?4 every_ms, ?5 job, ?6 paused, ?7 next_run_at, ?8 now. */
export const INSERT_SCHEDULE_SQL = `INSERT INTO schedules (name, cron, timezone, every_ms, job, paused, next_run_at, created_at, updated_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)`;

/** A new definition for a schedule; its fires so far are kept. ?1…?8 as `INSERT_SCHEDULE_SQL`. */
export const REPLACE_SCHEDULE_SQL = `UPDATE schedules SET cron = ?2, timezone = ?3, every_ms = ?4, job = ?5, paused = ?6, next_run_at = ?7, updated_at = ?8
  WHERE name = ?1`;

/** ?1 name; returns the name when there was one. */
export const DELETE_SCHEDULE_SQL = `DELETE FROM schedules WHERE name = ?1 RETURNING name`;

/**
 * Schedules due at `now`, earliest first, but those whose fire is in hand (a sharded lane's: in flight
 * to another shard, or waiting to be sent again). ?1 now, ?2 limit, ?3 JSON array of names left out.
 */
export const DUE_SCHEDULES_SQL = `SELECT ${COLUMNS} FROM schedules WHERE next_run_at <= ?1 AND name NOT IN (SELECT value FROM json_each(?3))
  ORDER BY next_run_at LIMIT +?2`;

/**
 * Fires recorded and their next ones set, each only while its row still waits for the fire it was
 * read for. ?1 JSON array of [name, next_run_at read, new next_run_at, last_run_at, last_job_id].
 */
export const ADVANCE_SCHEDULES_SQL = `UPDATE schedules SET next_run_at = f.f_next, last_run_at = f.f_at, last_job_id = f.f_id
  FROM (SELECT value->>0 AS f_name, value->>1 AS f_due, value->>2 AS f_next, value->>3 AS f_at, value->>4 AS f_id FROM json_each(?1)) AS f
  WHERE schedules.name = f.f_name AND schedules.next_run_at = f.f_due`;

/** The wake's schedule term: the earliest next fire of an unpaused schedule whose fire is not in hand. ?1 as ?3 of `DUE_SCHEDULES_SQL`. */
export const EARLIEST_FIRE_SQL = `SELECT next_run_at FROM schedules WHERE next_run_at IS NOT NULL AND name NOT IN (SELECT value FROM json_each(?1))
  ORDER BY next_run_at LIMIT 1`;

/** The statements the alarm and the wake run, for the query-plan test: none may read the whole table. */
export const SCHEDULE_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the due schedules", DUE_SCHEDULES_SQL, (now) => [now, 500, "[]"]],
  ["the due schedules, some in hand", DUE_SCHEDULES_SQL, (now) => [now, 500, JSON.stringify(["s1", "s4"])]],
  ["the fires' advance", ADVANCE_SCHEDULES_SQL, (now) => [JSON.stringify([["s1", now, now + 1, now, "s1@1"], ["s2", now, null, now, "s2@1"]])]],
  ["the wake: earliest schedule fire", EARLIEST_FIRE_SQL, () => ["[]"]],
  ["the wake: earliest schedule fire, some in hand", EARLIEST_FIRE_SQL, () => [JSON.stringify(["s1", "s4"])]],
  ["one schedule", SCHEDULE_BY_NAME_SQL, () => ["s"]],
];
