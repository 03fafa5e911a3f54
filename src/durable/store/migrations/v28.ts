/** The lane's schema migration 28 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V28: readonly Migration[] = [
  {
    version: 28,
    name: "dead letters: the lane's dead-letter lane, the copies it owes, and how many it made",
    statements: [
      // The lane that failed and interrupted jobs are copied into (NULL: none).
      `ALTER TABLE lane ADD COLUMN dead_letter TEXT`,
      `ALTER TABLE lane_counts ADD COLUMN total_dead_lettered INTEGER NOT NULL DEFAULT 0`,
      // The copies this lane owes its dead-letter lanes, each the job as it settled (a requeue or
      // retention may change or delete the job before delivery), kept until the receiving lane has
      // it; `lane` is the dead-letter lane named when the job settled. `tries` counts failed deliveries.
      `CREATE TABLE dead_letter_outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        lane TEXT NOT NULL,
        id TEXT NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('failed', 'interrupted')),
        error TEXT,
        errors TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        settled_at INTEGER NOT NULL,
        tries INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        -- The R2 key of a payload held there (migration 30), NULL otherwise: the job's object is kept
        -- for the copy until it is delivered, though the job goes first (payloads/payload-sweep.ts).
        held TEXT,
        -- One copy of a job per dead-letter lane owed at a time: a job requeued and failed again
        -- before its first copy went is copied as it first failed, as a copy already made stays.
        UNIQUE (lane, id)
      )`,
      `CREATE INDEX dead_letter_outbox_due ON dead_letter_outbox (next_at)`,
      `CREATE INDEX dead_letter_outbox_held ON dead_letter_outbox (held) WHERE held IS NOT NULL`,
      // Written by the statement that settles the job, whichever it is (a fenced fail, recovery, the
      // operator's fail, a dependency's or a wait's failure, and any to come), as the dependencies'
      // outbox is: atomic with the settlement, with no path to forget. A job that completes or is
      // cancelled stops at the outcome's comparison; a lane with no dead-letter lane at one read of
      // its own row, on failures alone. OR IGNORE is for UNIQUE (lane, id) alone (a copy owed already
      // stays): the row's other constraints hold by the WHEN and the job's own NOT NULL columns (its
      // settlement's time falls back to its last change's), so that no copy is skipped for them.
      `CREATE TRIGGER jobs_dead_letter AFTER UPDATE OF state ON jobs
      WHEN NEW.state = 'settled' AND OLD.state <> 'settled' AND NEW.outcome IN ('failed', 'interrupted')
        AND (SELECT dead_letter FROM lane WHERE id = 1) IS NOT NULL BEGIN
        INSERT OR IGNORE INTO dead_letter_outbox (lane, id, kind, payload, outcome, error, errors, attempts, settled_at, next_at, held)
          SELECT l.dead_letter, NEW.id, NEW.kind, NEW.payload, NEW.outcome, NEW.error, NEW.errors, NEW.attempts, ifnull(NEW.settled_at, NEW.updated_at), NEW.updated_at,
            IIF(substr(NEW.payload, 1, 1) = '@', substr(NEW.payload, 2, instr(NEW.payload, ' ') - 2), NULL)
          FROM lane l WHERE l.id = 1;
      END`,
    ],
  },
];
