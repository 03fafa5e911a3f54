/** The lane's schema migration 26 (migrations.ts applies it; never edit one that has shipped). */
import type { Migration } from "./migration.js";

/** The withdrawals owed by a job of `row` (NEW or OLD) that stops waiting unheard, due at its `updated_at`. */
const owe = (row: "NEW" | "OLD") => `INSERT INTO waitpoint_withdrawals (lane, waitpoint, id, token, next_at, created_at)
          SELECT lane, waitpoint, ${row}.id, token, ${row}.updated_at, ${row}.updated_at FROM job_waits
          WHERE job_seq = ${row}.seq AND token IS NOT NULL AND outcome IS NULL;`;

export const MIGRATIONS_V26: readonly Migration[] = [
  {
    version: 26,
    name: "a job that stops waiting on a waitpoint of another object withdraws its registration",
    statements: [
      // 1: the job registered with a waitpoint of another object (NULL: never), so that the triggers
      // below cost a job that never did nothing but their WHEN.
      `ALTER TABLE jobs ADD COLUMN remote_waits INTEGER`,
      // The token the job's registration with that waitpoint's object holds there (NULL: a wait on a
      // waitpoint of this object, or withdrawn already): a withdrawal takes back that registration
      // alone, never a newer one of a job enqueued again under the same id.
      `ALTER TABLE job_waits ADD COLUMN token TEXT`,
      `CREATE INDEX job_waits_registered ON job_waits (job_seq) WHERE token IS NOT NULL`,
      // What this object owes the waitpoints' objects: each registration of a job that stopped
      // waiting unheard, to withdraw, until acknowledged (the waitpoints' outbox, the other way).
      `CREATE TABLE waitpoint_withdrawals (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        lane TEXT NOT NULL,
        waitpoint TEXT NOT NULL,
        id TEXT NOT NULL,
        token TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      `CREATE INDEX waitpoint_withdrawals_due ON waitpoint_withdrawals (next_at)`,
      // Written by the statement that settles a waiting job otherwise than by hearing (cancel, expiry,
      // the lane's fail, another dependency's failure, a bulk action), whichever path it takes, and
      // by the deletion of one (a purge): a queued job is the only one with a registration unheard.
      `CREATE TRIGGER job_waits_withdrawn AFTER UPDATE OF state ON jobs
        WHEN OLD.remote_waits IS NOT NULL AND OLD.state = 'queued' AND NEW.state IN ('completing', 'settled') BEGIN
        ${owe("NEW")}
        UPDATE job_waits SET token = NULL WHERE job_seq = NEW.seq AND token IS NOT NULL;
      END`,
      // Its waits are deleted after it (store/deletion.ts): read here first.
      `CREATE TRIGGER job_waits_withdrawn_deleted AFTER DELETE ON jobs
        WHEN OLD.remote_waits IS NOT NULL AND OLD.state = 'queued' BEGIN
        ${owe("OLD")}
      END`,
    ],
  },
];
