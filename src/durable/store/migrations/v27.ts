/** The lane's schema migration 27 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V27: readonly Migration[] = [
  {
    version: 27,
    name: "queue defaults: the lane's concurrency and rate limit for every queue that never named its own",
    statements: [
      // The lane's queueDefaults (docs/api.md "The lane"): what a queue's unnamed settings follow.
      `ALTER TABLE lane ADD COLUMN queue_concurrency INTEGER NOT NULL DEFAULT 1 CHECK (queue_concurrency BETWEEN 1 AND 1000)`,
      `ALTER TABLE lane ADD COLUMN queue_rate_limit INTEGER CHECK (queue_rate_limit IS NULL OR queue_rate_limit >= 1)`,
      `ALTER TABLE lane ADD COLUMN queue_rate_period_ms INTEGER CHECK ((queue_rate_period_ms IS NULL) = (queue_rate_limit IS NULL))`,
      // Which of a queue's settings a PUT named (1: kept as named) or not (0: its columns hold the
      // lane's defaults, rewritten when they change: flow/queue-defaults.ts). The claim and the wake
      // read the columns alone, as before.
      `ALTER TABLE queues ADD COLUMN concurrency_named INTEGER NOT NULL DEFAULT 0 CHECK (concurrency_named IN (0, 1))`,
      `ALTER TABLE queues ADD COLUMN rate_named INTEGER NOT NULL DEFAULT 0 CHECK (rate_named IN (0, 1))`,
      // A queue an operator set before: which of its settings the PUTs named was not kept, so both
      // stay as they are (named); a queue never set holds the old defaults (1, none) and follows.
      `UPDATE queues SET concurrency_named = 1, rate_named = 1 WHERE configured = 1`,
    ],
  },
];
