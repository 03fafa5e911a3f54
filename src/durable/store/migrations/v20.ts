/** The lane's schema migration 20 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V20: readonly Migration[] = [
  {
    version: 20,
    name: "sharded lanes: reservations' nonces, and the reservations a shard refused",
    statements: [
      // On an id's own shard: the nonce its reservation was made under. A write on the reserved shard
      // carries it; the reservation is handed to another shard only once that one has refused it.
      `ALTER TABLE reservations ADD COLUMN nonce TEXT`,
      `UPDATE reservations SET nonce = lower(hex(randomblob(16)))`,
      // On a shard a reservation named: the nonces it refused (it held no job of the id), so that a
      // write carrying one, late or left by a crash, is refused (docs/concepts.md "Sharded lanes").
      `CREATE TABLE refused_reservations (
        id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        PRIMARY KEY (id, nonce)
      ) WITHOUT ROWID`,
    ],
  },
];
