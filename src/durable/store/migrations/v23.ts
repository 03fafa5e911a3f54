/** The lane's schema migration 23 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V23: readonly Migration[] = [
  {
    version: 23,
    name: "waitpoints: one-shot latches settled by a completion or their timeout",
    statements: [
      // `result` is the completion's JSON text (NULL: none, or timed out). `untold` counts the waiters
      // in other lanes not yet told of the settlement: retention and sweep keep the row until it is 0.
      `CREATE TABLE waitpoints (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('pending', 'completed', 'timedOut')),
        result TEXT,
        timeout_at INTEGER,
        created_at INTEGER NOT NULL,
        settled_at INTEGER,
        untold INTEGER NOT NULL DEFAULT 0 CHECK (untold >= 0),
        CHECK ((state = 'pending') = (settled_at IS NULL))
      ) WITHOUT ROWID`,
      // The timeout term of the wake and the timeout pass: pending ones with a timeout, earliest first.
      `CREATE INDEX waitpoints_timeout ON waitpoints (timeout_at) WHERE state = 'pending' AND timeout_at IS NOT NULL`,
      // Retention and sweep: settled ones, oldest settlement first.
      `CREATE INDEX waitpoints_settled ON waitpoints (settled_at) WHERE state <> 'pending'`,
      // Kept as waitpoints change, never counted, beside the lane's other totals.
      `ALTER TABLE lane_counts ADD COLUMN waitpoints_pending INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE lane_counts ADD COLUMN total_waitpoints_completed INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE lane_counts ADD COLUMN total_waitpoints_timed_out INTEGER NOT NULL DEFAULT 0`,
    ],
  },
];
