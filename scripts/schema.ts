/**
 * `npm run schema` (Node runs the sources as they are: scripts/ts-imports.ts): writes schema.sql, the schema a lane's and the registry's migrations make from
 * scratch, run by their own runner on Node's SQLite (test/durable/store/schema-snapshot.test.ts checks
 * it against workerd's). Run it after adding a migration, and commit schema.sql with it.
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { REGISTRY_MIGRATIONS, REGISTRY_SCHEMA_VERSION } from "../src/durable/registry-migrations.js";
import { MIGRATIONS, SCHEMA_VERSION, runMigrations } from "../src/durable/store/migrations.js";
import type { Migration } from "../src/durable/store/migrations/migration.js";
import { SCHEMA_OBJECTS_SQL, schemaText, type SchemaObject } from "./schema-text.js";

const ROOT = resolve(import.meta.dirname, "..");

/** A fresh database with `migrations` applied by the objects' own runner, through the part of a Durable Object's storage it uses. */
function migrated(migrations: readonly Migration[], version: number): { version: number; objects: SchemaObject[] } {
  const db = new DatabaseSync(":memory:");
  const exec = (query: string, ...bindings: SQLInputValue[]) => {
    const rows = db.prepare(query).all(...bindings);
    return { one: () => rows[0], toArray: () => rows };
  };
  const storage = {
    sql: { exec },
    transactionSync<T>(run: () => T): T {
      db.exec("BEGIN");
      try {
        const result = run();
        db.exec("COMMIT");
        return result;
      } catch (error) {
        db.exec("ROLLBACK");
        throw error;
      }
    },
  } as unknown as DurableObjectStorage;
  const state = runMigrations(storage, migrations, 0);
  if (!state.ok || state.version !== version) throw new Error(`migrated to ${JSON.stringify(state)}, not version ${version}`);
  return { version, objects: exec(SCHEMA_OBJECTS_SQL).toArray() as unknown as SchemaObject[] };
}

const path = resolve(ROOT, "schema.sql");
writeFileSync(path, schemaText(migrated(MIGRATIONS, SCHEMA_VERSION), migrated(REGISTRY_MIGRATIONS, REGISTRY_SCHEMA_VERSION)));
console.log(`wrote ${path}`);
