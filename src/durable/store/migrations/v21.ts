/** The lane's schema migration 21 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V21: readonly Migration[] = [
  {
    version: 21,
    name: "sharded lanes: debounce keys reserved on their own shard, and the moves of their queued jobs",
    statements: [
      // On a key's own shard: the shard its queued job is on, when another (no row: here, or none),
      // and the nonce a write there carries (docs/concepts.md "Sharded lanes").
      `CREATE TABLE key_reservations (
        key TEXT PRIMARY KEY,
        shard INTEGER NOT NULL,
        nonce TEXT NOT NULL
      ) WITHOUT ROWID`,
      // On a shard a key's reservation named: the nonces it gave up (its queued job moved, or it had
      // none), so that a write carrying one, late or left by a crash, is refused.
      `CREATE TABLE refused_keys (
        key TEXT NOT NULL,
        nonce TEXT NOT NULL,
        PRIMARY KEY (key, nonce)
      ) WITHOUT ROWID`,
      // On the sending shard: a key's queued job taken out of its jobs and owed to another shard, kept
      // until that shard took it and the key's and the id's own shards point there.
      `CREATE TABLE key_moves (
        nonce TEXT PRIMARY KEY,
        key TEXT NOT NULL,
        job_id TEXT NOT NULL,
        to_shard INTEGER NOT NULL,
        key_shard INTEGER NOT NULL,
        old_nonce TEXT,
        id_shard INTEGER NOT NULL,
        row TEXT NOT NULL,
        dependents TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      `CREATE INDEX key_moves_due ON key_moves (next_at)`,
      `CREATE INDEX key_moves_key ON key_moves (key)`,
      `CREATE INDEX key_moves_job ON key_moves (job_id)`,
      // On the receiving shard: the moves it took, so that one delivered again is taken once.
      `CREATE TABLE key_arrivals (
        nonce TEXT PRIMARY KEY
      ) WITHOUT ROWID`,
    ],
  },
];
