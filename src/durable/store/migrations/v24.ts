/** The lane's schema migration 24 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

/** A row's state as the API shows it (job-row.ts `stateOf`): a queued row with unsettled dependencies is blocked. */
const shown = (row: "NEW" | "OLD") => `IIF(${row}.state = 'queued' AND ${row}.blocked > 0, 'blocked', ${row}.state)`;

/**
 * The seq after a job's last event: the last one is never dropped (only older progress is), so a seq
 * is never reused. An insert stores no event (no trigger on an insert: an enqueue, batch or single,
 * pays nothing for the log): seq 1, the enqueue, and for a job inserted running (started in its
 * enqueue's turn) seq 2, its claim, are told by the row and its first stored transition
 * (results/stream-log.ts). So with none stored, a job whose state (`running`: the state before the
 * change) was never changed since its insert has 2 events if it was inserted running, else 1.
 */
const nextSeq = (running: string) => `(SELECT COALESCE(MAX(seq), IIF(${running}, 2, 1)) + 1 FROM job_events WHERE job = NEW.seq)`;

/**
 * Each job's event log (docs/api.md "Results": the stream). Transitions and progress are written by
 * the triggers below, inside the statement that changes the job: no statement of the store's, and
 * no JS-to-SQL call, is added to an enqueue, a claim or a completion, and every path that changes a
 * job's state (present or future) logs it. Chunks are written by the fenced stream write
 * (results/stream-log.ts). Deleting a job row, by whatever path (retention, sweep, purge, a key's
 * move), deletes its log with it.
 */
export const MIGRATIONS_V24: readonly Migration[] = [
  {
    version: 24,
    name: "each job's event log: transitions, progress and chunks, for its stream",
    statements: [
      // `job` is the job's seq (the jobs row's key: smaller than its id, and what a delete knows).
      // Columns, not a JSON document: a transition's write builds no JSON; the reader does.
      `CREATE TABLE job_events (
        job INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('transition', 'progress', 'chunk')),
        at INTEGER NOT NULL,
        attempt INTEGER,
        from_state TEXT,
        to_state TEXT,
        outcome TEXT,
        data TEXT,
        PRIMARY KEY (job, seq)
      ) WITHOUT ROWID`,
      // Only progress rows pay this index: it finds the ones past the last 100 to drop.
      `CREATE INDEX job_events_progress ON job_events (job, seq) WHERE type = 'progress'`,
      // A job's chunks so far, kept as they are written, so that a write checks its limits in one read.
      `CREATE TABLE job_streams (
        job INTEGER PRIMARY KEY,
        chunks INTEGER NOT NULL,
        bytes INTEGER NOT NULL
      )`,
      // A change of the state as the API shows it; a statement that sets neither column never runs it.
      `CREATE TRIGGER job_events_transition AFTER UPDATE OF state, blocked ON jobs
        WHEN ${shown("OLD")} IS NOT ${shown("NEW")} BEGIN
        INSERT INTO job_events (job, seq, type, at, attempt, from_state, to_state, outcome)
          SELECT NEW.seq, ${nextSeq("OLD.state = 'running'")}, 'transition', NEW.updated_at, NEW.attempts, ${shown("OLD")}, ${shown("NEW")}, NEW.outcome;
      END`,
      // A progress report: the fenced progress write (its token kept) or a renewal that carried a
      // new value (a renewal without progress leaves it as it was; one that repeats the value it
      // holds cannot be told from that). Only the last 100 are kept.
      `CREATE TRIGGER job_events_progressed AFTER UPDATE OF progress ON jobs
        WHEN NEW.progress IS NOT NULL AND (NEW.lease_token IS OLD.lease_token OR NEW.progress IS NOT OLD.progress) BEGIN
        INSERT INTO job_events (job, seq, type, at, data) SELECT NEW.seq, ${nextSeq("NEW.state = 'running'")}, 'progress', NEW.updated_at, NEW.progress;
        DELETE FROM job_events WHERE job = NEW.seq AND type = 'progress' AND seq <= (
          SELECT seq FROM job_events WHERE job = NEW.seq AND type = 'progress' ORDER BY seq DESC LIMIT 1 OFFSET 100);
      END`,
      `CREATE TRIGGER job_events_delete AFTER DELETE ON jobs BEGIN
        DELETE FROM job_events WHERE job = OLD.seq;
        DELETE FROM job_streams WHERE job = OLD.seq;
      END`,
    ],
  },
];
