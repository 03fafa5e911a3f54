/** The lane's schema migration 22 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

/** The per-row triggers that kept the upkeep until version 22 (the store keeps it since: store/upkeep.ts). */
const UPKEEP_TRIGGERS = [
  "jobs_count_insert", "jobs_count_update", "jobs_count_delete",
  "jobs_count_blocked_insert", "jobs_count_blocked_update", "jobs_count_blocked_delete", "jobs_count_snoozed",
  "jobs_kinds_insert", "jobs_kinds_move", "jobs_kinds_leave", "jobs_kinds_enter", "jobs_kinds_delete",
  "jobs_queues_insert", "jobs_queues_update", "jobs_queues_delete",
  // Made at start-up while the lane recorded (never by a migration): gone too, if there.
  "jobs_histogram_update", "jobs_histogram_wait_insert", "jobs_history_insert", "jobs_history_update",
];

export const MIGRATIONS_V22: readonly Migration[] = [
  {
    version: 22,
    name: "the upkeep kept by the store, once per statement, not by per-row triggers",
    statements: [
      ...UPKEEP_TRIGGERS.map((name) => `DROP TRIGGER IF EXISTS ${name}`),
      // Everything rows can tell is counted again, once, in place; the lifetime totals (which no row
      // can tell) and the history's minute stay as they are. The outbox's triggers stay (why: upkeep.ts).
      `UPDATE lane_counts SET
        queued = (SELECT COUNT(*) FROM jobs WHERE state = 'queued'),
        running = (SELECT COUNT(*) FROM jobs WHERE state = 'running'),
        completing = (SELECT COUNT(*) FROM jobs WHERE state = 'completing'),
        completed = (SELECT COUNT(*) FROM jobs WHERE state = 'settled' AND outcome = 'completed'),
        failed = (SELECT COUNT(*) FROM jobs WHERE state = 'settled' AND outcome = 'failed'),
        cancelled = (SELECT COUNT(*) FROM jobs WHERE state = 'settled' AND outcome = 'cancelled'),
        interrupted = (SELECT COUNT(*) FROM jobs WHERE state = 'settled' AND outcome = 'interrupted'),
        blocked = (SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND blocked > 0)
      WHERE id = 1`,
      `UPDATE kind_counts SET queued = 0, running = 0`,
      `INSERT INTO kind_counts (kind, queued, running)
        SELECT kind, COUNT(*) FILTER (WHERE state = 'queued'), COUNT(*) FILTER (WHERE state = 'running')
        FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind
        ON CONFLICT (kind) DO UPDATE SET queued = excluded.queued, running = excluded.running`,
      `UPDATE queues SET queued = 0, active = 0`,
      `INSERT INTO queues (name, queued, active)
        SELECT queue, COUNT(*) FILTER (WHERE state = 'queued'), COUNT(*) FILTER (WHERE state IN ('running', 'completing'))
        FROM jobs WHERE queue IS NOT NULL AND state <> 'settled' GROUP BY queue
        ON CONFLICT (name) DO UPDATE SET queued = excluded.queued, active = excluded.active`,
    ],
  },
];
