/** The lane's schema migration 29 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V29: readonly Migration[] = [
  {
    version: 29,
    name: "bulk actions: requeue, cancel or delete by filter, a chunk at a time",
    statements: [
      // One row per bulk action. `last_seq` is the newest job when it was accepted (later jobs are not
      // its); `cursor` the last seq it has looked at, moved in the transaction of the chunk that acted
      // on the jobs up to it, so that a restart goes on after it and no job is acted on twice. No
      // index: the table holds a week of an operator's bulk actions, and its lookups by anything but
      // id (the one that runs, the oldest finished) are read once per instance.
      `CREATE TABLE bulk_actions (
        id TEXT PRIMARY KEY,
        action TEXT NOT NULL CHECK (action IN ('requeue', 'cancel', 'delete')),
        filter TEXT NOT NULL CHECK (json_valid(filter)),
        reason TEXT,
        last_seq INTEGER NOT NULL,
        cursor INTEGER NOT NULL,
        done INTEGER NOT NULL DEFAULT 0,
        skipped INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        finished_at INTEGER
      ) WITHOUT ROWID`,
    ],
  },
];
