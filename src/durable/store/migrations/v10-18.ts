/** The lane's schema migrations 10 to 18 (migrations.ts applies them; never edit one that has shipped). */
import type { Migration } from "./migration.js";

/**
 * The upper bounds (ms) of version 16's histogram buckets (its `bucket` numbers them). Frozen like
 * the migrations: other bounds would be a new migration (metrics/exposition.ts renders these).
 */
const V16_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 900000, 3600000] as const;

export const MIGRATIONS_V10_18: readonly Migration[] = [
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
