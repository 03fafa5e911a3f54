/**
 * schema.sql (the repository's root) is what the migrations make: a lane's database and the
 * registry's, migrated from scratch in workerd, read back from sqlite_master.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import snapshot from "../../../schema.sql?raw";
import { SCHEMA_OBJECTS_SQL, schemaText, type SchemaObject } from "../../../scripts/schema-text.js";
import { REGISTRY_MIGRATIONS, REGISTRY_SCHEMA_VERSION } from "../../../src/durable/registry-migrations.js";
import { SCHEMA_VERSION, migrate, runMigrations } from "../../../src/durable/store/migrations.js";
import { T0, dropTables, setup } from "../../helpers/lane.js";

/** Drops every table (their indexes and triggers with them), then runs `migrations` from version 0. */
function fromScratch(storage: DurableObjectStorage, migrations: (storage: DurableObjectStorage) => unknown): SchemaObject[] {
  dropTables(storage);
  migrations(storage);
  return storage.sql.exec<SchemaObject & Record<string, SqlStorageValue>>(SCHEMA_OBJECTS_SQL).toArray();
}

describe("schema.sql", () => {
  it("is the schema a lane's and the registry's migrations make from scratch (else run `npm run schema`)", async () => {
    const { stub } = await setup();
    const lane = await runInDurableObject(stub, (_lane, state) => fromScratch(state.storage, (s) => expect(migrate(s, T0)).toEqual({ ok: true, version: SCHEMA_VERSION })));
    const registry = await runInDurableObject(env.REGISTRY.getByName(`registry-${crypto.randomUUID()}`), (_registry, state) =>
      fromScratch(state.storage, (s) => runMigrations(s, REGISTRY_MIGRATIONS, T0)),
    );
    expect(lane.some((o) => o.type === "table" && o.name === "jobs")).toBe(true);
    expect(registry.some((o) => o.type === "table" && o.name === "watched")).toBe(true);
    const fresh = schemaText({ version: SCHEMA_VERSION, objects: lane }, { version: REGISTRY_SCHEMA_VERSION, objects: registry });
    expect(fresh, "schema.sql is not what the migrations make: run `npm run schema` and commit it").toBe(snapshot);
  });
});
