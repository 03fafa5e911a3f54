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

/** The lane's count deltas as the sink's columns, in store/upkeep.ts's order. */
const COUNTS = [
  "queued", "running", "completing", "completed", "failed", "cancelled", "interrupted", "blocked",
  "total_enqueued", "total_claimed", "total_completed", "total_failed", "total_cancelled", "total_interrupted",
  "total_retried", "total_recovered", "total_snoozed",
];

/** The ring's slots (shared/history.ts's HISTORY_MINUTES at this version: a migration never follows a constant that may change). */
const RING = 1440;

/** The minute being counted ends (store/upkeep.ts, `roll`): only while one is counted, and this statement counts in another. */
const ROLLS = `history_minute IS NOT NULL AND NEW.minute IS NOT NULL AND history_minute <> NEW.minute`;

/**
 * The sink of a statement's upkeep: the store's deltas of one statement (store/upkeep.ts), handed to
 * SQLite in one call, an insert whose one trigger writes them and stores nothing. A JS-to-SQL call
 * costs more than the writes it makes (about 2 µs each, where a write inside the trigger costs a
 * fraction), and a single job's transition would pay four or five. The trigger runs once per insert,
 * so once per statement that changed jobs, never per job row; each part is skipped when its fields
 * are NULL. Its order is the one of the writes it replaces: the history's roll first, from the
 * counts as they stood before this statement, then the counts, the kind's row, the queue's row and
 * the histogram's bucket. A row of kinds or queues that only grows may be made by the write (an
 * upsert); one that shrinks exists already, and the upsert's CHECK would refuse the row it never inserts.
 */
const SINK = [
  `CREATE TABLE upkeep_deltas (
    ${COUNTS.map((c) => `${c} INTEGER`).join(", ")},
    minute INTEGER,
    kind TEXT, kind_queued INTEGER, kind_running INTEGER,
    queue TEXT, queue_queued INTEGER, queue_active INTEGER,
    histogram TEXT, outcome TEXT, bucket INTEGER, count INTEGER, sum_ms INTEGER
  )`,
  `CREATE TRIGGER upkeep_deltas_apply BEFORE INSERT ON upkeep_deltas BEGIN
    INSERT INTO history (slot, minute, enqueued, started, completed, failed, depth)
      SELECT history_minute % ${RING}, history_minute, total_enqueued - history_base_enqueued, total_claimed - history_base_started,
        total_completed - history_base_completed, total_failed - history_base_failed, queued - blocked
      FROM lane_counts WHERE id = 1 AND ${ROLLS}
      ON CONFLICT (slot) DO UPDATE SET
        enqueued = excluded.enqueued + IIF(minute = excluded.minute, enqueued, 0),
        started = excluded.started + IIF(minute = excluded.minute, started, 0),
        completed = excluded.completed + IIF(minute = excluded.minute, completed, 0),
        failed = excluded.failed + IIF(minute = excluded.minute, failed, 0),
        depth = excluded.depth, minute = excluded.minute;
    UPDATE lane_counts SET history_minute = NEW.minute, history_base_enqueued = total_enqueued, history_base_started = total_claimed,
      history_base_completed = total_completed, history_base_failed = total_failed
      WHERE id = 1 AND ${ROLLS};
    UPDATE lane_counts SET ${COUNTS.map((c) => `${c} = ${c} + NEW.${c}`).join(", ")} WHERE id = 1 AND NEW.queued IS NOT NULL;
    INSERT INTO kind_counts (kind, queued, running) SELECT NEW.kind, NEW.kind_queued, NEW.kind_running
      WHERE NEW.kind IS NOT NULL AND NEW.kind_queued >= 0 AND NEW.kind_running >= 0
      ON CONFLICT (kind) DO UPDATE SET queued = queued + excluded.queued, running = running + excluded.running;
    UPDATE kind_counts SET queued = queued + NEW.kind_queued, running = running + NEW.kind_running
      WHERE kind = NEW.kind AND (NEW.kind_queued < 0 OR NEW.kind_running < 0);
    INSERT INTO queues (name, queued, active) SELECT NEW.queue, NEW.queue_queued, NEW.queue_active
      WHERE NEW.queue IS NOT NULL AND NEW.queue_queued >= 0 AND NEW.queue_active >= 0
      ON CONFLICT (name) DO UPDATE SET queued = queued + excluded.queued, active = active + excluded.active;
    UPDATE queues SET queued = queued + NEW.queue_queued, active = active + NEW.queue_active
      WHERE name = NEW.queue AND (NEW.queue_queued < 0 OR NEW.queue_active < 0);
    INSERT INTO job_histograms (name, outcome, bucket, count, sum_ms) SELECT NEW.histogram, NEW.outcome, NEW.bucket, NEW.count, NEW.sum_ms
      WHERE NEW.histogram IS NOT NULL
      ON CONFLICT (name, outcome, bucket) DO UPDATE SET count = count + excluded.count, sum_ms = sum_ms + excluded.sum_ms;
    SELECT RAISE(IGNORE);
  END`,
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
      ...SINK,
      // When a claimed job's wait began (its run_at or its last requeue, whichever is later), written
      // by the claim from the row it overwrites, so that its RETURNING answers the wait: no read first.
      `ALTER TABLE jobs ADD COLUMN wait_from INTEGER`,
    ],
  },
];
