/** The lane's schema migration 19 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V19: readonly Migration[] = [
  {
    version: 19,
    name: "dependents: the enqueues that registered each",
    statements: [
      // The tokens (JSON array of nonces) of the enqueues that registered this dependent: two
      // enqueues of one dependent (a retry, or two callers) share its row, and the one that withdraws
      // (refused) takes out its own token alone, so that it never removes what the other's written
      // job relies on; the row goes with its last token. NULL: held for good (registered with the
      // dependent's own write, or before this version, or by a lane that names no token).
      `ALTER TABLE dependents ADD COLUMN owners TEXT CHECK (owners IS NULL OR json_valid(owners))`,
    ],
  },
];
