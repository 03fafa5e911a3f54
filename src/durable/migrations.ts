/**
 * Forward-only schema migrations of a lane's SQLite database, applied in order inside
 * `blockConcurrencyWhile` and recorded in `schema_migrations`. A lane written by an older version is
 * upgraded in place: never edit a migration that has shipped, append a new one.
 */
export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

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

export const MIGRATIONS: readonly Migration[] = [
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
      // The state grammar of DESIGN.md, enforced here so that not even a bug can write an impossible row.
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
      // a backlog of pull-consumer kinds is never walked (issue 6: the cost must not grow with it).
      `CREATE INDEX jobs_kind ON jobs (kind, priority DESC, seq) WHERE state = 'queued'`,
    ],
  },
  {
    version: 5,
    name: "how a job's last attempt went back to queued",
    statements: [
      // A repeated fail with the token of an attempt whose fail queued a retry answers the job again
      // (API.md); a release or a recovery ended the attempt otherwise. NULL: not queued by an attempt's end.
      `ALTER TABLE jobs ADD COLUMN attempt_end TEXT CHECK (attempt_end IN ('retry', 'release', 'recovery'))`,
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
];

export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

/** The schema a lane's database holds after `migrate`. */
export type SchemaState = { ok: true; version: number } | { ok: false; stored: number };

/**
 * Applies every migration above the database's version, up to `target`, each in its own transaction.
 * A database written by a newer Switchyard (a version above every migration known here: a
 * rolled-back deploy) is left untouched: the lane refuses every operation rather than guess.
 */
export function migrate(storage: DurableObjectStorage, nowMs: number, target = SCHEMA_VERSION): SchemaState {
  const sql = storage.sql;
  sql.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const current = sql.exec<{ v: number | null }>(`SELECT MAX(version) AS v FROM schema_migrations`).one().v ?? 0;
  if (current > SCHEMA_VERSION) return { ok: false, stored: current };
  for (const migration of MIGRATIONS) {
    if (migration.version <= current || migration.version > target) continue;
    storage.transactionSync(() => {
      for (const statement of migration.statements) sql.exec(statement);
      sql.exec(
        `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
        migration.version,
        migration.name,
        nowMs,
      );
    });
  }
  return { ok: true, version: Math.max(current, Math.min(target, SCHEMA_VERSION)) };
}
