/** The registry's named statements (registry.ts); its tables: registry-migrations.ts. */

// ---- lanes ----

/** Remembers a lane (`?1`) first registered at `?2`; again: nothing. */
export const REGISTER_LANE_SQL = `INSERT INTO lanes (name, registered_at) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING`;

/** Lanes after `?1` (exclusive), in name order, at most `?2`. */
export const LANES_AFTER_SQL = `SELECT name FROM lanes WHERE name > ?1 ORDER BY name LIMIT +?2`;

/** The lane named `?1`, if registered. */
export const LANE_NAMED_SQL = `SELECT name FROM lanes WHERE name = ?1`;

/** Lanes after `?1` (exclusive) in the name range [`?2`, `?3`), in name order, at most `?4`. */
export const LANES_IN_RANGE_SQL = `SELECT name FROM lanes WHERE name > ?1 AND name >= ?2 AND name < ?3 ORDER BY name LIMIT +?4`;

// ---- metrics ----

/** An object's (`?1`) latest report of lane `?2`: one of a lane of one shard, which keeps only its count. */
export const ONE_SHARD_REPORT_SQL = `INSERT OR REPLACE INTO object_reports (name, lane, shard, shards, report) VALUES (?1, ?2, 0, 1, '')`;

/** An object's (`?1`) latest report (`?5`, JSON) of lane `?2` as shard `?3` of `?4`. */
export const OBJECT_REPORT_SQL = `INSERT OR REPLACE INTO object_reports (name, lane, shard, shards, report) VALUES (?1, ?2, ?3, ?4, ?5)`;

/** Withdraws an object's (`?1`) report. */
export const FORGET_REPORT_SQL = `DELETE FROM object_reports WHERE name = ?1`;

/** A lane's (`?1`) objects that reported, by shard. */
export const LANE_OBJECTS_SQL = `SELECT name, shard, shards FROM object_reports WHERE lane = +?1 ORDER BY shard`;

/** An object's (`?1`) latest report, as JSON. */
export const REPORT_OF_SQL = `SELECT report FROM object_reports WHERE name = ?1`;

/** Drops a lane's (`?1`) rendered lines. */
export const DROP_LANE_METRICS_SQL = `DELETE FROM lane_metrics WHERE name = ?1`;

/** A lane's (`?1`) rendered lines, made at `?2`, its earliest queued runAt `?3`, and a fragment per family (`?4`..`?7`). */
export const RENDERED_LANE_SQL = `INSERT OR REPLACE INTO lane_metrics (name, reported_at, earliest_run_at, jobs, totals, wait, run) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`;

/** Every lane's rendered lines, in lane order. */
export const RENDERED_LANES_SQL = `SELECT name, earliest_run_at, jobs, totals, wait, run FROM lane_metrics ORDER BY name`;

// ---- the watch list (the cron check that re-arms lost alarms) ----

/** Watches a lane (`?1`) again under a new seq. */
export const WATCH_SQL = `INSERT OR REPLACE INTO watched (name) VALUES (?1)`;

/** Watched lanes after seq `?1` (exclusive), in seq order, at most `?2`. */
export const WATCHED_AFTER_SQL = `SELECT seq, name FROM watched WHERE seq > ?1 ORDER BY seq LIMIT +?2`;

/** Unwatches a lane (`?1`) if its seq is still `?2`. */
export const UNWATCH_SQL = `DELETE FROM watched WHERE name = ?1 AND seq = ?2 RETURNING seq`;
