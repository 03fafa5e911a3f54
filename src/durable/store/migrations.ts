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

/**
 * The upper bounds (ms) of version 16's histogram buckets (its `bucket` numbers them). Frozen like
 * the migrations: other bounds would be a new migration (metrics/exposition.ts renders these).
 */
const V16_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 900000, 3600000] as const;

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
  {
    version: 10,
    name: "the version of the code that took each lease",
    statements: [
      // A lease of the lane's own dispatcher outlives its executor only across a restart. At start-up,
      // one taken by another version (a deploy) is given back without spending its job's recovery
      // budget; one of this version (a crash) is recovered on the budget. NULL: taken before version 10.
      `ALTER TABLE jobs ADD COLUMN lease_version TEXT`,
    ],
  },
  {
    version: 11,
    name: "queued and running jobs per kind, kept",
    statements: [
      // A row per kind that has had queued or running jobs; zero rows are pruned by retention passes.
      `CREATE TABLE kind_counts (kind TEXT PRIMARY KEY, queued INTEGER NOT NULL, running INTEGER NOT NULL) WITHOUT ROWID`,
      // An existing lane is counted once, here.
      `INSERT INTO kind_counts (kind, queued, running)
        SELECT kind, COUNT(*) FILTER (WHERE state = 'queued'), COUNT(*) FILTER (WHERE state = 'running')
        FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind`,
      // Kept by triggers in the same statement as the row they follow, one statement each: a job that
      // comes into queued or running (an insert, a requeue, a kind replaced), one that moves between
      // them (claim, retry, release, recovery), one that leaves them (settles, is deleted, changes kind).
      `CREATE TRIGGER jobs_kinds_insert AFTER INSERT ON jobs WHEN NEW.state IN ('queued', 'running') BEGIN
        INSERT INTO kind_counts (kind, queued, running) VALUES (NEW.kind, NEW.state = 'queued', NEW.state = 'running')
          ON CONFLICT (kind) DO UPDATE SET queued = queued + excluded.queued, running = running + excluded.running;
      END`,
      `CREATE TRIGGER jobs_kinds_move AFTER UPDATE OF state ON jobs
      WHEN OLD.kind = NEW.kind AND OLD.state <> NEW.state AND OLD.state IN ('queued', 'running') AND NEW.state IN ('queued', 'running') BEGIN
        UPDATE kind_counts SET queued = queued + (NEW.state = 'queued') - (OLD.state = 'queued'),
          running = running + (NEW.state = 'running') - (OLD.state = 'running')
        WHERE kind = NEW.kind;
      END`,
      `CREATE TRIGGER jobs_kinds_leave AFTER UPDATE OF state, kind ON jobs
      WHEN OLD.state IN ('queued', 'running') AND (NEW.state NOT IN ('queued', 'running') OR OLD.kind <> NEW.kind) BEGIN
        UPDATE kind_counts SET queued = queued - (OLD.state = 'queued'), running = running - (OLD.state = 'running') WHERE kind = OLD.kind;
      END`,
      `CREATE TRIGGER jobs_kinds_enter AFTER UPDATE OF state, kind ON jobs
      WHEN NEW.state IN ('queued', 'running') AND (OLD.state NOT IN ('queued', 'running') OR OLD.kind <> NEW.kind) BEGIN
        INSERT INTO kind_counts (kind, queued, running) VALUES (NEW.kind, NEW.state = 'queued', NEW.state = 'running')
          ON CONFLICT (kind) DO UPDATE SET queued = queued + excluded.queued, running = running + excluded.running;
      END`,
      `CREATE TRIGGER jobs_kinds_delete AFTER DELETE ON jobs WHEN OLD.state IN ('queued', 'running') BEGIN
        UPDATE kind_counts SET queued = queued - (OLD.state = 'queued'), running = running - (OLD.state = 'running') WHERE kind = OLD.kind;
      END`,
    ],
  },
  {
    version: 12,
    name: "flow control: rate limits, queue settings and counts, fairness, TTL, debounce",
    statements: [
      // A job's TTL: not started by expires_at (its runAt + ttl_ms), it settles cancelled, "expired".
      // It holds until the job's first start (generation 0): a retry is never expired.
      `ALTER TABLE jobs ADD COLUMN ttl_ms INTEGER CHECK (ttl_ms IS NULL OR ttl_ms >= 1)`,
      `ALTER TABLE jobs ADD COLUMN expires_at INTEGER`,
      // Debounce: the request's {key, delayMs, maxDelayMs} as JSON (part of the spec), the key apart for
      // its index, and the latest runAt the key's pushes may reach (the first enqueue + maxDelayMs).
      `ALTER TABLE jobs ADD COLUMN debounce TEXT CHECK (debounce IS NULL OR json_valid(debounce))`,
      `ALTER TABLE jobs ADD COLUMN debounce_key TEXT`,
      `ALTER TABLE jobs ADD COLUMN debounce_deadline INTEGER`,
      // The next expiry (a wake term) and expired jobs in bounded batches.
      `CREATE INDEX jobs_expiry ON jobs (expires_at) WHERE state = 'queued' AND generation = 0 AND expires_at IS NOT NULL`,
      // At most one job per key is queued and not yet started: the one a debounced enqueue replaces.
      `CREATE UNIQUE INDEX jobs_debounce ON jobs (debounce_key) WHERE state = 'queued' AND generation = 0 AND debounce_key IS NOT NULL`,
      // Round-robin: the best due job outside any queue (those count as one queue).
      `CREATE INDEX jobs_unqueued ON jobs (priority DESC, seq) WHERE state = 'queued' AND queue IS NULL`,
      // The lane's token bucket (units: a token is rate_period_ms units; a ms refills rate_limit of
      // them; bucket_units NULL: never drawn, full), its fairness, and when a job outside any queue last started.
      `ALTER TABLE lane ADD COLUMN rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit >= 1)`,
      `ALTER TABLE lane ADD COLUMN rate_period_ms INTEGER CHECK ((rate_period_ms IS NULL) = (rate_limit IS NULL))`,
      `ALTER TABLE lane ADD COLUMN bucket_units INTEGER`,
      `ALTER TABLE lane ADD COLUMN bucket_at INTEGER`,
      `ALTER TABLE lane ADD COLUMN fairness TEXT NOT NULL DEFAULT 'fifo' CHECK (fairness IN ('fifo', 'round-robin'))`,
      `ALTER TABLE lane ADD COLUMN unqueued_started_at INTEGER`,
      // A row per queue that has jobs or settings: its settings (concurrency, a token bucket, whether an
      // operator set them), its kept counts (queued; active: running or completing, what holds its
      // slots) and when one of its jobs last started (round-robin). Settings outlive the jobs; a row with
      // neither jobs nor settings is pruned by the alarm's housekeeping.
      `CREATE TABLE queues (
        name TEXT PRIMARY KEY,
        concurrency INTEGER NOT NULL DEFAULT 1 CHECK (concurrency BETWEEN 1 AND 1000),
        rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit >= 1),
        rate_period_ms INTEGER CHECK ((rate_period_ms IS NULL) = (rate_limit IS NULL)),
        bucket_units INTEGER,
        bucket_at INTEGER,
        configured INTEGER NOT NULL DEFAULT 0 CHECK (configured IN (0, 1)),
        queued INTEGER NOT NULL DEFAULT 0 CHECK (queued >= 0),
        active INTEGER NOT NULL DEFAULT 0 CHECK (active >= 0),
        last_started_at INTEGER
      ) WITHOUT ROWID`,
      `CREATE INDEX queues_round_robin ON queues (last_started_at) WHERE queued > 0`,
      `CREATE INDEX queues_rate_limited ON queues (name) WHERE rate_limit IS NOT NULL`,
      // An existing lane's queues, counted once, here.
      `INSERT INTO queues (name, queued, active)
        SELECT queue, COUNT(*) FILTER (WHERE state = 'queued'), COUNT(*) FILTER (WHERE state IN ('running', 'completing'))
        FROM jobs WHERE queue IS NOT NULL AND state <> 'settled' GROUP BY queue`,
      // Kept by triggers in the same statement as the job row they follow, as the lane's counts are.
      `CREATE TRIGGER jobs_queues_insert AFTER INSERT ON jobs WHEN NEW.queue IS NOT NULL AND NEW.state <> 'settled' BEGIN
        INSERT INTO queues (name, queued, active) VALUES (NEW.queue, NEW.state = 'queued', NEW.state IN ('running', 'completing'))
          ON CONFLICT (name) DO UPDATE SET queued = queued + excluded.queued, active = active + excluded.active;
      END`,
      `CREATE TRIGGER jobs_queues_update AFTER UPDATE OF state, queue ON jobs
      WHEN (OLD.queue IS NOT NULL OR NEW.queue IS NOT NULL) AND (OLD.state IS NOT NEW.state OR OLD.queue IS NOT NEW.queue) BEGIN
        UPDATE queues SET queued = queued - (OLD.state = 'queued'), active = active - (OLD.state IN ('running', 'completing'))
          WHERE name = OLD.queue AND OLD.state <> 'settled';
        INSERT INTO queues (name, queued, active) SELECT NEW.queue, NEW.state = 'queued', NEW.state IN ('running', 'completing')
          WHERE NEW.queue IS NOT NULL AND NEW.state <> 'settled'
          ON CONFLICT (name) DO UPDATE SET queued = queued + excluded.queued, active = active + excluded.active;
      END`,
      `CREATE TRIGGER jobs_queues_delete AFTER DELETE ON jobs WHEN OLD.queue IS NOT NULL AND OLD.state <> 'settled' BEGIN
        UPDATE queues SET queued = queued - (OLD.state = 'queued'), active = active - (OLD.state IN ('running', 'completing')) WHERE name = OLD.queue;
      END`,
      // Lifetime stats no row can tell: jobs settled expired, enqueues that replaced a debounced job.
      `ALTER TABLE lane_counts ADD COLUMN total_expired INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE lane_counts ADD COLUMN total_debounced INTEGER NOT NULL DEFAULT 0`,
    ],
  },
  {
    version: 13,
    name: "dependencies, the outbox, snooze",
    statements: [
      // A job's dependencies as the enqueue named them (JSON [{lane, id}], part of the spec; NULL: none),
      // its policy when one does not complete, how many are not yet settled (blocked while above 0),
      // and its runAt while blocked: a blocked job is a queued row whose run_at is BLOCKED_RUN_AT,
      // past any runAt, so that no claim, wake or due count sees it (the state grammar's CHECK of
      // version 1 cannot be changed in place, and a rebuild of a live queue is out of the question).
      `ALTER TABLE jobs ADD COLUMN depends_on TEXT CHECK (depends_on IS NULL OR json_valid(depends_on))`,
      `ALTER TABLE jobs ADD COLUMN dependency_failure TEXT CHECK (dependency_failure IN ('fail', 'ignore'))`,
      `ALTER TABLE jobs ADD COLUMN blocked INTEGER NOT NULL DEFAULT 0 CHECK (blocked >= 0)`,
      `ALTER TABLE jobs ADD COLUMN blocked_run_at INTEGER`,
      // 1: other jobs registered to hear of this one's settlement (rows of dependents); the outbox
      // trigger looks no further for a job without.
      `ALTER TABLE jobs ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0 CHECK (has_dependents IN (0, 1))`,
      // What a dependent knows of each of its dependencies, in the order it named them: nothing yet
      // (outcome NULL), or the outcome, result and error it was told, and of which generation. A
      // notice is applied only to a row with no outcome yet: a repeat changes nothing.
      `CREATE TABLE dependencies (
        job_seq INTEGER NOT NULL,
        position INTEGER NOT NULL,
        lane TEXT NOT NULL,
        id TEXT NOT NULL,
        outcome TEXT CHECK (outcome IN ('completed', 'failed', 'cancelled', 'interrupted')),
        result TEXT,
        error TEXT,
        generation INTEGER,
        told_at INTEGER,
        PRIMARY KEY (job_seq, lane, id)
      ) WITHOUT ROWID`,
      // The jobs of this lane that others wait for, and who waits: a registration, made by the
      // dependent's enqueue before it writes its job, kept until the job is deleted (its dependents
      // are listed by it). Every settlement tells them all; a dependent applies the first it hears.
      `CREATE TABLE dependents (
        dep_seq INTEGER NOT NULL,
        lane TEXT NOT NULL,
        id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (dep_seq, lane, id)
      ) WITHOUT ROWID`,
      // Notices this lane owes: a dependency settled (or was deleted unsettled), to be told to each
      // dependent's lane (this one too) until it acknowledges. Written in the statement that settles
      // the job (the triggers below); delivered by the alarm (a wake term: next_at), with backoff per
      // receiving lane; deleted when acknowledged. The result is read from the job, kept meanwhile.
      `CREATE TABLE outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        dep_seq INTEGER NOT NULL,
        dep_id TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('completed', 'failed', 'cancelled', 'interrupted')),
        error TEXT,
        generation INTEGER NOT NULL,
        lane TEXT NOT NULL,
        id TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      `CREATE INDEX outbox_due ON outbox (next_at)`,
      `CREATE INDEX outbox_by_dependency ON outbox (dep_seq)`,
      `CREATE TRIGGER jobs_outbox_settled AFTER UPDATE OF state ON jobs
      WHEN NEW.has_dependents = 1 AND NEW.state = 'settled' AND OLD.state <> 'settled' BEGIN
        INSERT INTO outbox (dep_seq, dep_id, outcome, error, generation, lane, id, next_at, created_at)
          SELECT NEW.seq, NEW.id, NEW.outcome, NEW.error, NEW.generation, d.lane, d.id, NEW.updated_at, NEW.updated_at
          FROM dependents d WHERE d.dep_seq = NEW.seq;
      END`,
      // A job deleted before it settled (a purge) tells its dependents it was cancelled. (Its
      // registrations go with it, after this: store/deletion.ts.)
      `CREATE TRIGGER jobs_outbox_deleted AFTER DELETE ON jobs WHEN OLD.has_dependents = 1 AND OLD.state <> 'settled' BEGIN
        INSERT INTO outbox (dep_seq, dep_id, outcome, error, generation, lane, id, next_at, created_at)
          SELECT OLD.seq, OLD.id, 'cancelled', 'deleted before it settled', OLD.generation, d.lane, d.id, OLD.updated_at, OLD.updated_at
          FROM dependents d WHERE d.dep_seq = OLD.seq;
      END`,
      // Blocked jobs, kept like the other counts; and jobs snoozed (only a snooze queues a running
      // job with its token cleared).
      `ALTER TABLE lane_counts ADD COLUMN blocked INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE lane_counts ADD COLUMN total_snoozed INTEGER NOT NULL DEFAULT 0`,
      `CREATE TRIGGER jobs_count_blocked_insert AFTER INSERT ON jobs WHEN NEW.state = 'queued' AND NEW.blocked > 0 BEGIN
        UPDATE lane_counts SET blocked = blocked + 1 WHERE id = 1;
      END`,
      `CREATE TRIGGER jobs_count_blocked_update AFTER UPDATE OF state, blocked ON jobs
      WHEN (OLD.state = 'queued' AND OLD.blocked > 0) <> (NEW.state = 'queued' AND NEW.blocked > 0) BEGIN
        UPDATE lane_counts SET blocked = blocked + (NEW.state = 'queued' AND NEW.blocked > 0) - (OLD.state = 'queued' AND OLD.blocked > 0) WHERE id = 1;
      END`,
      `CREATE TRIGGER jobs_count_blocked_delete AFTER DELETE ON jobs WHEN OLD.state = 'queued' AND OLD.blocked > 0 BEGIN
        UPDATE lane_counts SET blocked = blocked - 1 WHERE id = 1;
      END`,
      `CREATE TRIGGER jobs_count_snoozed AFTER UPDATE OF state ON jobs
      WHEN OLD.state = 'running' AND NEW.state = 'queued' AND NEW.lease_token IS NULL BEGIN
        UPDATE lane_counts SET total_snoozed = total_snoozed + 1 WHERE id = 1;
      END`,
    ],
  },
  {
    version: 14,
    name: "the trace context a job was enqueued with",
    statements: [
      // The W3C `traceparent` header of the enqueue (validated, lower-case), handed to the executor and
      // to claimed jobs; NULL: none. Not part of the spec: a duplicate with another trace is a duplicate.
      `ALTER TABLE jobs ADD COLUMN traceparent TEXT`,
    ],
  },
  {
    version: 15,
    name: "per-minute history: a ring of 24 hours",
    statements: [
      // One row per minute of the last 24 hours: slot = minute % 1440, so never more than 1440 rows; a
      // row carries its minute, and one of an older minute is reset when its slot is written again.
      // Its counts are the minute's (the lane's lifetime totals' growth over it), its depth the queued
      // jobs (not blocked) at its end. Kept by triggers the lane makes at start-up while its recording
      // is on (history/history.ts).
      `CREATE TABLE history (
        slot INTEGER PRIMARY KEY CHECK (slot BETWEEN 0 AND 1439),
        minute INTEGER NOT NULL,
        enqueued INTEGER NOT NULL,
        started INTEGER NOT NULL,
        completed INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        depth INTEGER NOT NULL
      )`,
      // The minute being counted (NULL: none) and the lifetime totals when it began: its counts so far
      // are the totals now less these. Moved to the ring by the first transition of a later minute.
      `ALTER TABLE lane_counts ADD COLUMN history_minute INTEGER`,
      `ALTER TABLE lane_counts ADD COLUMN history_base_enqueued INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE lane_counts ADD COLUMN history_base_started INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE lane_counts ADD COLUMN history_base_completed INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE lane_counts ADD COLUMN history_base_failed INTEGER NOT NULL DEFAULT 0`,
    ],
  },
  {
    version: 16,
    name: "histograms of jobs' waits and runs",
    statements: [
      // A row per histogram, outcome (wait: outcome ''; run: the attempt's outcome) and bucket, with
      // the count and sum in ms of the observations in that bucket alone: bucket i holds those over
      // V16_BOUNDS_MS[i - 1] and at or under V16_BOUNDS_MS[i], the last (its length) those over every
      // bound. The cumulative buckets, count and sum the lane reports for `switchyard_job_wait_seconds`
      // and `switchyard_job_run_seconds` (docs/operations.md, "Metrics") are summed when read: an
      // observation then writes one narrow row, not a wide one. A few dozen rows, never one per job.
      `CREATE TABLE job_histograms (
        name TEXT NOT NULL CHECK (name IN ('wait', 'run')),
        outcome TEXT NOT NULL,
        bucket INTEGER NOT NULL CHECK (bucket BETWEEN 0 AND ${V16_BOUNDS_MS.length}),
        count INTEGER NOT NULL,
        sum_ms INTEGER NOT NULL,
        PRIMARY KEY (name, outcome, bucket)
      ) WITHOUT ROWID`,
      // Kept by triggers that the lane makes at start-up while it records (metrics/histograms.ts).
    ],
  },
  {
    version: 17,
    name: "whether the lane's metrics were reported",
    statements: [
      // 1 from before the lane's first metrics report until the registry has withdrawn it: a lane that
      // starts with its reports off withdraws what it left there (metrics/reporter.ts), once.
      `ALTER TABLE lane ADD COLUMN metrics_reported INTEGER NOT NULL DEFAULT 0 CHECK (metrics_reported IN (0, 1))`,
    ],
  },
  {
    version: 18,
    name: "sharded lanes: the shard count and id reservations",
    statements: [
      // How many objects the lane is (docs/concepts.md "Sharded lanes"): each shard stores it; a shard
      // refuses a job whose routing key maps elsewhere under its own count.
      `ALTER TABLE lane ADD COLUMN shards INTEGER NOT NULL DEFAULT 1 CHECK (shards BETWEEN 1 AND 64)`,
      // An id whose job lives on another shard than the id's own hash: reserved here, on the id's
      // shard, so that its idempotency stays exact across shards. Written only on sharded lanes.
      `CREATE TABLE reservations (
        id TEXT PRIMARY KEY,
        shard INTEGER NOT NULL CHECK (shard BETWEEN 0 AND 63),
        queue TEXT
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
