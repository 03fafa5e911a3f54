/** The lane's schema migration 30 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

/** The R2 key in a reference's column text `@<key> <bytes> <sha256>` (payloads/held.ts). */
const keyOf = (column: string) => `substr(${column}, 2, instr(${column}, ' ') - 2)`;

export const MIGRATIONS_V30: readonly Migration[] = [
  {
    version: 30,
    name: "big payloads and results in R2: the objects a lane owes the bucket",
    statements: [
      // An object of the bucket that no job may own: an upload under way (`uploading`, written and
      // made durable before the upload starts), or one to delete (`deleting`). The lane works them
      // off (payloads/payload-sweep.ts); a row of `marker` (key '') says the lane has held objects.
      `CREATE TABLE payload_objects (
        key TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('uploading', 'deleting', 'marker')),
        at INTEGER NOT NULL
      ) WITHOUT ROWID`,
      // Whatever deletes a job or replaces its payload or result (retention, sweep, purge, bulk,
      // debounce, code written later) owes its objects in the same transaction. The WHEN reads one
      // character of a column: a job whose values are in its row pays nothing more.
      `CREATE TRIGGER jobs_held_deleted AFTER DELETE ON jobs
        WHEN substr(old.payload, 1, 1) = '@' OR substr(old.result, 1, 1) = '@'
        BEGIN
          INSERT OR REPLACE INTO payload_objects (key, state, at) SELECT ${keyOf("old.payload")}, 'deleting', old.updated_at WHERE substr(old.payload, 1, 1) = '@';
          INSERT OR REPLACE INTO payload_objects (key, state, at) SELECT ${keyOf("old.result")}, 'deleting', old.updated_at WHERE substr(old.result, 1, 1) = '@';
        END`,
      `CREATE TRIGGER jobs_held_payload_replaced AFTER UPDATE OF payload ON jobs
        WHEN substr(old.payload, 1, 1) = '@' AND new.payload IS NOT old.payload
        BEGIN
          INSERT OR REPLACE INTO payload_objects (key, state, at) VALUES (${keyOf("old.payload")}, 'deleting', new.updated_at);
        END`,
      `CREATE TRIGGER jobs_held_result_replaced AFTER UPDATE OF result ON jobs
        WHEN substr(old.result, 1, 1) = '@' AND new.result IS NOT old.result
        BEGIN
          INSERT OR REPLACE INTO payload_objects (key, state, at) VALUES (${keyOf("old.result")}, 'deleting', new.updated_at);
        END`,
    ],
  },
];
