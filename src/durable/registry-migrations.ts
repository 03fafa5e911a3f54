/**
 * Forward-only schema migrations of the registry's SQLite database (registry.ts), applied by the
 * lane's runner (store/migrations.ts `runMigrations`) into the registry's own `schema_migrations`.
 * Never edit a migration that has shipped: append a new one.
 */
import type { Migration } from "./store/migrations/migration.js";

export const REGISTRY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    // A registry deployed before migrations made these very tables at every start and holds rows in
    // them: `IF NOT EXISTS` keeps them as they are, and version 1 is only recorded.
    name: "lanes, the watch list, and each object's latest metrics report",
    statements: [
      `CREATE TABLE IF NOT EXISTS lanes (name TEXT PRIMARY KEY, registered_at INTEGER NOT NULL)`,
      // A lane's seq changes whenever it says it has work again, so the alarm check unwatches a lane
      // only if nothing came since it found the lane idle. AUTOINCREMENT: a seq is never given twice.
      `CREATE TABLE IF NOT EXISTS watched (seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE)`,
      // Each lane's latest metrics report, rendered once as it arrives (a fragment per family, the
      // oldest due age apart: it moves with the clock), so that a scrape only joins them.
      `CREATE TABLE IF NOT EXISTS lane_metrics (
        name TEXT PRIMARY KEY, reported_at INTEGER NOT NULL, earliest_run_at INTEGER,
        jobs TEXT NOT NULL, totals TEXT NOT NULL, wait TEXT NOT NULL, run TEXT NOT NULL
      ) WITHOUT ROWID`,
      // Each object's latest report as it came (JSON), by object name, with its lane, its shard index
      // and the shard count it holds: a lane's row of lane_metrics is its counted shards' merged.
      `CREATE TABLE IF NOT EXISTS object_reports (
        name TEXT PRIMARY KEY, lane TEXT NOT NULL, shard INTEGER NOT NULL, shards INTEGER NOT NULL, report TEXT NOT NULL
      ) WITHOUT ROWID`,
      `CREATE INDEX IF NOT EXISTS object_reports_lane ON object_reports (lane, shard)`,
    ],
  },
];

export const REGISTRY_SCHEMA_VERSION = REGISTRY_MIGRATIONS.at(-1)!.version;
