/** The lane's schema migration 25 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

export const MIGRATIONS_V25: readonly Migration[] = [
  {
    version: 25,
    name: "jobs that wait on waitpoints: their waits, the waiters of other objects, and what they are owed",
    statements: [
      // What a job knows of each waitpoint it waits on: a `dependsOn` item (position: its place in
      // dependsOn) or an attempt's wait (position: past every dependsOn item, in the order made).
      // Apart from `dependencies`, whose outcome CHECK knows no `timedOut` and whose rows notices of
      // jobs are told by (lane, id): a waitpoint may share its name with a job.
      `CREATE TABLE job_waits (
        job_seq INTEGER NOT NULL,
        position INTEGER NOT NULL,
        lane TEXT NOT NULL,
        waitpoint TEXT NOT NULL,
        outcome TEXT CHECK (outcome IN ('completed', 'timedOut')),
        result TEXT,
        told_at INTEGER,
        PRIMARY KEY (job_seq, position)
      ) WITHOUT ROWID`,
      // A settling waitpoint's waiters in its own object, not yet told.
      `CREATE INDEX job_waits_waiting ON job_waits (lane, waitpoint) WHERE outcome IS NULL`,
      // The waitpoint's side: jobs of other objects (another lane, or another shard of this one)
      // registered to hear of a waitpoint of this object, as `dependents` keeps them for jobs.
      `CREATE TABLE waitpoint_waiters (
        waitpoint TEXT NOT NULL,
        lane TEXT NOT NULL,
        id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        owners TEXT CHECK (owners IS NULL OR json_valid(owners)),
        PRIMARY KEY (waitpoint, lane, id)
      ) WITHOUT ROWID`,
      // Notices a settled waitpoint owes those waiters, until acknowledged (the result is read from
      // the waitpoint, kept meanwhile).
      `CREATE TABLE waitpoint_outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        waitpoint TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('completed', 'timedOut')),
        lane TEXT NOT NULL,
        id TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      `CREATE INDEX waitpoint_outbox_due ON waitpoint_outbox (next_at)`,
    ],
  },
];
