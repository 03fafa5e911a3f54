/**
 * The histograms of jobs' waits and runs (docs/operations.md "Metrics"): a row of `job_histograms`
 * (migration 16) per histogram and outcome, with cumulative bucket counts, their sum in ms and their
 * count, kept by triggers on the jobs table in the very statement that starts or ends an attempt.
 * Like the history's (history/history.ts), the triggers belong to the lane's start-up, not to a
 * migration: with recording on they are made as defined here; with it off there are none, so a lane
 * that records nothing pays nothing per transition, and its histograms keep what they had.
 */
import { HISTOGRAM_BOUNDS_MS } from "./exposition.js";

const BUCKETS = HISTOGRAM_BOUNDS_MS.map((_, i) => `b${i}`);

/** The statement that adds one observation (the expression `valueMs`) to a histogram's row, made at its first. */
function observe(histogram: string, outcome: string, valueMs: string): string {
  return `INSERT INTO job_histograms (name, outcome, count, sum_ms, ${BUCKETS.join(", ")})
          SELECT ${histogram}, ${outcome}, 1, v, ${HISTOGRAM_BOUNDS_MS.map((le) => `v <= ${le}`).join(", ")} FROM (SELECT ${valueMs} AS v) WHERE true
          ON CONFLICT (name, outcome) DO UPDATE SET count = count + 1, sum_ms = sum_ms + excluded.sum_ms,
            ${BUCKETS.map((b) => `${b} = ${b} + excluded.${b}`).join(", ")};`;
}

/** The triggers recording keeps, by name; their text is compared with the stored one at start-up. */
export const HISTOGRAM_TRIGGERS: readonly { name: string; sql: string }[] = [
  // A wait runs from the later of the job's runAt and when it was last queued (enqueued, queued
  // again, its dependencies done: the row's updated_at, which nothing else moves while it is queued)
  // to its start. (A row without claimed_at, which no statement writes, is not observed.)
  {
    name: "jobs_histogram_wait_claim",
    sql: `CREATE TRIGGER jobs_histogram_wait_claim AFTER UPDATE OF state ON jobs
      WHEN OLD.state = 'queued' AND NEW.state = 'running' AND NEW.claimed_at IS NOT NULL BEGIN
        ${observe("'wait'", "''", "MAX(0, NEW.claimed_at - MAX(OLD.run_at, OLD.updated_at))")}
      END`,
  },
  // A job started at once (born running) waits from its runAt or its creation.
  {
    name: "jobs_histogram_wait_insert",
    sql: `CREATE TRIGGER jobs_histogram_wait_insert AFTER INSERT ON jobs WHEN NEW.state = 'running' AND NEW.claimed_at IS NOT NULL BEGIN
        ${observe("'wait'", "''", "MAX(0, NEW.claimed_at - MAX(NEW.run_at, NEW.created_at))")}
      END`,
  },
  // A run lasts from the attempt's start to its end, labelled by how it ended: the job's outcome, or
  // how it went back to queued (a failure retried, an expired lease recovered, a snooze, a release).
  {
    name: "jobs_histogram_run",
    sql: `CREATE TRIGGER jobs_histogram_run AFTER UPDATE OF state ON jobs
      WHEN OLD.state = 'running' AND NEW.state <> 'running' AND OLD.claimed_at IS NOT NULL BEGIN
        ${observe(
          "'run'",
          `CASE WHEN NEW.state <> 'queued' THEN NEW.outcome WHEN NEW.attempt_end IS 'retry' THEN 'retried'
            WHEN NEW.attempt_end IS 'recovery' THEN 'recovered' WHEN NEW.lease_token IS NULL THEN 'snoozed' ELSE 'released' END`,
          "MAX(0, NEW.updated_at - OLD.claimed_at)",
        )}
      END`,
  },
];

const STORED_TRIGGERS_SQL = `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'jobs_histogram_%'`;

/**
 * At start-up: with recording on, the triggers as defined here; with it off, none. Writes nothing
 * when all is already so. The rows stay either way (counters a scrape reads as they were).
 */
export function startHistograms(storage: DurableObjectStorage, on: boolean): void {
  const sql = storage.sql;
  const stored = sql.exec<{ name: string; sql: string }>(STORED_TRIGGERS_SQL).toArray();
  const wanted = on ? HISTOGRAM_TRIGGERS : [];
  if (stored.length === wanted.length && wanted.every((t) => stored.some((s) => s.name === t.name && s.sql === t.sql))) return;
  storage.transactionSync(() => {
    for (const { name } of stored) sql.exec(`DROP TRIGGER "${name}"`);
    for (const t of wanted) sql.exec(t.sql);
  });
}
