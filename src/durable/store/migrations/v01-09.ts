/** The lane's schema migrations 1 to 9 (migrations.ts applies them; never edit one that has shipped). */
import type { Migration } from "./migration.js";

/** The indexes of the jobs table as of version 1. Frozen like the migrations: a change of index is a new migration. */
const JOB_INDEXES_V1 = [
  // Claim: queued jobs in priority, then enqueue, order.
  `CREATE INDEX jobs_claim ON jobs (priority DESC, seq) WHERE state = 'queued'`,
  // Wake: the earliest future runAt.
  `CREATE INDEX jobs_run_at ON jobs (run_at) WHERE state = 'queued'`,
  // Recovery and wake: the earliest lease expiry.
  `CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 'running'`,
  // Queue heads: is a job of this queue running, is another one ahead of this one.
  `CREATE INDEX jobs_queue ON jobs (queue, state, priority DESC, seq) WHERE queue IS NOT NULL`,
  `CREATE INDEX jobs_completing ON jobs (seq) WHERE state = 'completing'`,
  `CREATE INDEX jobs_settled ON jobs (settled_at) WHERE state = 'settled'`,
];

export const MIGRATIONS_V01_09: readonly Migration[] = [
  {
    version: 1,
    name: "jobs and lane settings",
    statements: [
      `CREATE TABLE lane (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        name TEXT,
        concurrency INTEGER NOT NULL DEFAULT 10 CHECK (concurrency BETWEEN 1 AND 1000),
        paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
        registered INTEGER NOT NULL DEFAULT 0 CHECK (registered IN (0, 1))
      )`,
      `INSERT INTO lane (id) VALUES (1)`,
      // The state grammar of docs/concepts.md, enforced here so that not even a bug can write an impossible row.
      `CREATE TABLE jobs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        queue TEXT,
        priority INTEGER NOT NULL,
        run_at INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'completing', 'settled')),
        outcome TEXT CHECK (outcome IN ('completed', 'failed', 'cancelled', 'interrupted')),
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        max_attempts INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 100),
        backoff_base_ms INTEGER NOT NULL,
        backoff_max_ms INTEGER NOT NULL,
        timeout_ms INTEGER NOT NULL,
        result TEXT,
        error TEXT,
        cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
        generation INTEGER NOT NULL DEFAULT 0,
        lease_token TEXT,
        lease_until INTEGER,
        claimed_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        settled_at INTEGER,
        CHECK ((outcome IS NULL) = (state IN ('queued', 'running'))),
        CHECK ((settled_at IS NOT NULL) = (state = 'settled')),
        CHECK (state <> 'running' OR (lease_token IS NOT NULL AND lease_until IS NOT NULL AND attempts >= 1)),
        CHECK (attempts <= max_attempts),
        CHECK (generation >= attempts),
        -- IS, not =: with a NULL outcome = gives NULL, and SQLite lets a NULL CHECK pass.
        CHECK (cancel_requested = 0 OR state = 'running' OR outcome IS 'cancelled')
      )`,
      ...JOB_INDEXES_V1,
    ],
  },
  {
    version: 2,
    name: "recovery budget per job and cancel reasons",
    statements: [
      `ALTER TABLE jobs ADD COLUMN max_recoveries INTEGER NOT NULL DEFAULT 3 CHECK (max_recoveries >= 0)`,
      `ALTER TABLE jobs ADD COLUMN recovery_window_ms INTEGER NOT NULL DEFAULT 3600000 CHECK (recovery_window_ms >= 1)`,
      `ALTER TABLE jobs ADD COLUMN recovery_count INTEGER NOT NULL DEFAULT 0 CHECK (recovery_count >= 0)`,
      `ALTER TABLE jobs ADD COLUMN recovery_window_start INTEGER`,
      `ALTER TABLE jobs ADD COLUMN cancel_reason TEXT`,
    ],
  },
  {
    version: 3,
    name: "who holds a lease: the lane's own dispatcher or a pull consumer",
    statements: [
      // A lease held by the lane's dispatcher dies with the object; at start-up such leases are
      // recovered at once instead of after their expiry. NULL: a lease written before version 3.
      `ALTER TABLE jobs ADD COLUMN lease_holder TEXT CHECK (lease_holder IN ('lane', 'consumer'))`,
    ],
  },
  {
    version: 4,
    name: "queued jobs by kind",
    statements: [
      // The dispatcher claims (and the wake looks for) due jobs of its executors' kinds only: by kind,
      // a backlog of pull-consumer kinds is never walked (the cost must not grow with it).
      `CREATE INDEX jobs_kind ON jobs (kind, priority DESC, seq) WHERE state = 'queued'`,
    ],
  },
  {
    version: 5,
    name: "how a job's last attempt went back to queued",
    statements: [
      // A repeated fail with the token of an attempt whose fail queued a retry answers the job again
      // (docs/api.md); a release or a recovery ended the attempt otherwise. NULL: not queued by an attempt's end.
      `ALTER TABLE jobs ADD COLUMN attempt_end TEXT CHECK (attempt_end IN ('retry', 'release', 'recovery'))`,
    ],
  },
  {
    version: 6,
    name: "kept counts and lifetime stats, retention, indexes for retention and failing a lane",
    statements: [
      // One row: the counts of jobs now (by state, settled ones by outcome) and the lane's lifetime
      // stats (total_*, never lowered). Kept by the triggers below in the same statement as the row
      // they follow, so that no statement, present or future, can forget them.
      `CREATE TABLE lane_counts (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        queued INTEGER NOT NULL, running INTEGER NOT NULL, completing INTEGER NOT NULL,
        completed INTEGER NOT NULL, failed INTEGER NOT NULL, cancelled INTEGER NOT NULL, interrupted INTEGER NOT NULL,
        total_enqueued INTEGER NOT NULL, total_claimed INTEGER NOT NULL, total_completed INTEGER NOT NULL,
        total_failed INTEGER NOT NULL, total_cancelled INTEGER NOT NULL, total_interrupted INTEGER NOT NULL,
        total_retried INTEGER NOT NULL, total_recovered INTEGER NOT NULL, total_lost INTEGER NOT NULL
      )`,
      // An existing lane is counted once, here. Its stats start from what its rows still show: every
      // stored job enqueued, its generation claimed, its recorded outcome; retries, recoveries and
      // lost attempts before this version are unknown and start at 0.
      `INSERT INTO lane_counts SELECT 1,
        COUNT(*) FILTER (WHERE state = 'queued'), COUNT(*) FILTER (WHERE state = 'running'),
        COUNT(*) FILTER (WHERE state = 'completing'),
        COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'completed'), COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'failed'),
        COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'cancelled'), COUNT(*) FILTER (WHERE state = 'settled' AND outcome = 'interrupted'),
        COUNT(*), COALESCE(SUM(generation), 0),
        COUNT(*) FILTER (WHERE outcome = 'completed'), COUNT(*) FILTER (WHERE outcome = 'failed'),
        COUNT(*) FILTER (WHERE outcome = 'cancelled'), COUNT(*) FILTER (WHERE outcome = 'interrupted'),
        0, 0, 0
      FROM jobs`,
      // Each comparison is 0 or 1 (state is NOT NULL; outcome is compared with IS, never NULL).
      `CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
        UPDATE lane_counts SET
          queued = queued + (NEW.state = 'queued'), running = running + (NEW.state = 'running'),
          completing = completing + (NEW.state = 'completing'),
          completed = completed + (NEW.state = 'settled' AND NEW.outcome IS 'completed'),
          failed = failed + (NEW.state = 'settled' AND NEW.outcome IS 'failed'),
          cancelled = cancelled + (NEW.state = 'settled' AND NEW.outcome IS 'cancelled'),
          interrupted = interrupted + (NEW.state = 'settled' AND NEW.outcome IS 'interrupted'),
          total_enqueued = total_enqueued + 1
        WHERE id = 1;
      END`,
      `CREATE TRIGGER jobs_count_update AFTER UPDATE OF state, outcome ON jobs
      WHEN OLD.state IS NOT NEW.state OR OLD.outcome IS NOT NEW.outcome BEGIN
        UPDATE lane_counts SET
          queued = queued + (NEW.state = 'queued') - (OLD.state = 'queued'),
          running = running + (NEW.state = 'running') - (OLD.state = 'running'),
          completing = completing + (NEW.state = 'completing') - (OLD.state = 'completing'),
          completed = completed + (NEW.state = 'settled' AND NEW.outcome IS 'completed') - (OLD.state = 'settled' AND OLD.outcome IS 'completed'),
          failed = failed + (NEW.state = 'settled' AND NEW.outcome IS 'failed') - (OLD.state = 'settled' AND OLD.outcome IS 'failed'),
          cancelled = cancelled + (NEW.state = 'settled' AND NEW.outcome IS 'cancelled') - (OLD.state = 'settled' AND OLD.outcome IS 'cancelled'),
          interrupted = interrupted + (NEW.state = 'settled' AND NEW.outcome IS 'interrupted') - (OLD.state = 'settled' AND OLD.outcome IS 'interrupted'),
          total_claimed = total_claimed + (OLD.state = 'queued' AND NEW.state = 'running'),
          total_completed = total_completed + (OLD.outcome IS NULL AND NEW.outcome IS 'completed'),
          total_failed = total_failed + (OLD.outcome IS NULL AND NEW.outcome IS 'failed'),
          total_cancelled = total_cancelled + (OLD.outcome IS NULL AND NEW.outcome IS 'cancelled'),
          total_interrupted = total_interrupted + (OLD.outcome IS NULL AND NEW.outcome IS 'interrupted'),
          total_retried = total_retried + (OLD.state = 'running' AND NEW.state = 'queued' AND NEW.attempt_end IS 'retry'),
          total_recovered = total_recovered + (OLD.state = 'running' AND NEW.state = 'queued' AND NEW.attempt_end IS 'recovery')
        WHERE id = 1;
      END`,
      `CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
        UPDATE lane_counts SET
          queued = queued - (OLD.state = 'queued'), running = running - (OLD.state = 'running'),
          completing = completing - (OLD.state = 'completing'),
          completed = completed - (OLD.state = 'settled' AND OLD.outcome IS 'completed'),
          failed = failed - (OLD.state = 'settled' AND OLD.outcome IS 'failed'),
          cancelled = cancelled - (OLD.state = 'settled' AND OLD.outcome IS 'cancelled'),
          interrupted = interrupted - (OLD.state = 'settled' AND OLD.outcome IS 'interrupted')
        WHERE id = 1;
      END`,
      // The operator's retention choices as JSON ({"completedMs"?, "failedMs"?}: a number, or null to
      // keep); a key left out takes the default of the running version. NULL: no choice made.
      `ALTER TABLE lane ADD COLUMN retention TEXT CHECK (retention IS NULL OR json_valid(retention))`,
      // Retention and sweep walk settled jobs by outcome, oldest first: one range per outcome, so that
      // a long horizon for one outcome never makes a pass walk the jobs it keeps. Replaces jobs_settled.
      `DROP INDEX jobs_settled`,
      `CREATE INDEX jobs_settled_by_outcome ON jobs (outcome, settled_at) WHERE state = 'settled'`,
      // Failing a lane takes queued jobs in enqueue order, 500 a call, at any backlog.
      `CREATE INDEX jobs_queued ON jobs (seq) WHERE state = 'queued'`,
    ],
  },
  {
    version: 7,
    name: "checkpoints, progress and the history of failed attempts",
    statements: [
      // Every failed attempt, oldest first, the last 20 (a JSON array kept by the statements that end attempts).
      `ALTER TABLE jobs ADD COLUMN errors TEXT NOT NULL DEFAULT '[]'`,
      // The last progress an attempt reported, as JSON text; NULL: none.
      `ALTER TABLE jobs ADD COLUMN progress TEXT`,
      // Keyed by the job's seq, which AUTOINCREMENT never hands out twice: a swept job's id used again
      // can never find the old job's checkpoints. Without rowid: a job's checkpoints are one range, so
      // a job's totals (its limits, a claim's bytes) are one walk over at most 1,000 short rows.
      `CREATE TABLE checkpoints (
        job_seq INTEGER NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        generation INTEGER NOT NULL CHECK (generation >= 1),
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (job_seq, name)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 8,
    name: "schedules, and whether the registry watches the lane's alarm",
    statements: [
      // Exactly one of cron and every_ms; a zone for cron only; a paused schedule has no next fire.
      `CREATE TABLE schedules (
        name TEXT PRIMARY KEY,
        cron TEXT,
        timezone TEXT,
        every_ms INTEGER CHECK (every_ms >= 1000),
        job TEXT NOT NULL,
        paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
        next_run_at INTEGER,
        last_run_at INTEGER,
        last_job_id TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        CHECK ((cron IS NULL) <> (every_ms IS NULL)),
        CHECK ((timezone IS NULL) = (cron IS NULL)),
        CHECK (paused = 0 OR next_run_at IS NULL)
      ) WITHOUT ROWID`,
      // Due fires and the wake's schedule term: the earliest next fire.
      `CREATE INDEX schedules_next_run ON schedules (next_run_at) WHERE next_run_at IS NOT NULL`,
      // 1: the registry lists this lane for the belt (belt.ts); told once when work comes, cleared by the belt.
      `ALTER TABLE lane ADD COLUMN watched INTEGER NOT NULL DEFAULT 0 CHECK (watched IN (0, 1))`,
    ],
  },
  {
    version: 9,
    name: "a job inserted running (started at once) counts as claimed",
    statements: [
      // As version 6's, plus the claim of a row that is born running (statements.ts, INSERT_STARTED_SQL).
      `DROP TRIGGER jobs_count_insert`,
      `CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
        UPDATE lane_counts SET
          queued = queued + (NEW.state = 'queued'), running = running + (NEW.state = 'running'),
          completing = completing + (NEW.state = 'completing'),
          completed = completed + (NEW.state = 'settled' AND NEW.outcome IS 'completed'),
          failed = failed + (NEW.state = 'settled' AND NEW.outcome IS 'failed'),
          cancelled = cancelled + (NEW.state = 'settled' AND NEW.outcome IS 'cancelled'),
          interrupted = interrupted + (NEW.state = 'settled' AND NEW.outcome IS 'interrupted'),
          total_enqueued = total_enqueued + 1, total_claimed = total_claimed + (NEW.state = 'running')
        WHERE id = 1;
      END`,
    ],
  },
];
