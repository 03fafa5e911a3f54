/**
 * Forward-only schema migrations of a lane's SQLite database, applied in order inside
 * `blockConcurrencyWhile` and recorded in `schema_migrations`. A lane written by an older version is
 * upgraded in place: never edit a migration that has shipped, append a new one.
 */
import type { Migration } from "./migrations/migration.js";
import { MIGRATIONS_V01_09 } from "./migrations/v01-09.js";
import { MIGRATIONS_V10_18 } from "./migrations/v10-18.js";
import { MIGRATIONS_V19 } from "./migrations/v19.js";
import { MIGRATIONS_V20 } from "./migrations/v20.js";
import { MIGRATIONS_V21 } from "./migrations/v21.js";
import { MIGRATIONS_V22 } from "./migrations/v22.js";
import { MIGRATIONS_V23 } from "./migrations/v23.js";
import { MIGRATIONS_V24 } from "./migrations/v24.js";
import { MIGRATIONS_V25 } from "./migrations/v25.js";
import { MIGRATIONS_V26 } from "./migrations/v26.js";
import { MIGRATIONS_V27 } from "./migrations/v27.js";
import { MIGRATIONS_V28 } from "./migrations/v28.js";
import { MIGRATIONS_V29 } from "./migrations/v29.js";
import { MIGRATIONS_V30 } from "./migrations/v30.js";

export type { Migration };

/** Every migration, in version order (migrations/: one file per era). */
export const MIGRATIONS: readonly Migration[] = [...MIGRATIONS_V01_09, ...MIGRATIONS_V10_18, ...MIGRATIONS_V19, ...MIGRATIONS_V20, ...MIGRATIONS_V21, ...MIGRATIONS_V22, ...MIGRATIONS_V23, ...MIGRATIONS_V24, ...MIGRATIONS_V25, ...MIGRATIONS_V26, ...MIGRATIONS_V27, ...MIGRATIONS_V28, ...MIGRATIONS_V29, ...MIGRATIONS_V30];

export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

/** The schema a lane's database holds after `migrate`. */
export type SchemaState = { ok: true; version: number } | { ok: false; stored: number };

/**
 * Applies every migration above the database's version, up to `target`, each in its own transaction.
 * A database written by a newer Switchyard (a version above every migration known here: a
 * rolled-back deploy) is left untouched: the lane refuses every operation rather than guess.
 */
export function migrate(storage: DurableObjectStorage, nowMs: number, target = SCHEMA_VERSION): SchemaState {
  return runMigrations(storage, MIGRATIONS, nowMs, target);
}

/**
 * The runner of `migrate`, for any object's list of migrations (the registry's too: its own
 * database, its own `schema_migrations`), `target` at most the list's last version.
 */
export function runMigrations(storage: DurableObjectStorage, migrations: readonly Migration[], nowMs: number, target = migrations.at(-1)!.version): SchemaState {
  const sql = storage.sql;
  const latest = migrations.at(-1)!.version;
  sql.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const current = sql.exec<{ v: number | null }>(`SELECT MAX(version) AS v FROM schema_migrations`).one().v ?? 0;
  if (current > latest) return { ok: false, stored: current };
  for (const migration of migrations) {
    if (migration.version <= current || migration.version > target) continue;
    storage.transactionSync(() => {
      for (const statement of migration.statements) sql.exec(statement);
      sql.exec(
        `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
        migration.version,
        migration.name,
        nowMs,
      );
    });
  }
  return { ok: true, version: Math.max(current, Math.min(target, latest)) };
}
