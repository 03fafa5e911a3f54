/**
 * The histograms of jobs' waits and runs (docs/operations.md "Metrics"): a row of `job_histograms`
 * (migration 16) per histogram, outcome and bucket, with that bucket's own count and sum in ms (the
 * cumulative buckets are summed when read: lane-report.ts), kept by triggers on the jobs table in the
 * very statement that starts or ends an attempt. An observation is one upsert of one narrow row, and
 * an update that starts or ends an attempt fires one trigger (both observations in one).
 * Like the history's (history/history.ts), the triggers belong to the lane's start-up, not to a
 * migration: with recording on they are made as defined here; with it off there are none, so a lane
 * that records nothing pays nothing per transition, and its histograms keep what they had.
 */
import { HISTOGRAM_BOUNDS_MS } from "./exposition.js";

/** The bucket of the value `v` (ms): the first bound it is at or under, or past the last bound. */
const BUCKET_OF_V = `CASE ${HISTOGRAM_BOUNDS_MS.map((le, i) => `WHEN v <= ${le} THEN ${i}`).join(" ")} ELSE ${HISTOGRAM_BOUNDS_MS.length} END`;

/** The statement that adds one observation to its bucket's row, made at its first: `source` selects `h` (histogram), `o` (outcome), `v` (ms). */
function observe(source: string): string {
  return `INSERT INTO job_histograms (name, outcome, bucket, count, sum_ms)
          SELECT h, o, ${BUCKET_OF_V}, 1, v FROM (${source}) WHERE true
          ON CONFLICT (name, outcome, bucket) DO UPDATE SET count = count + 1, sum_ms = sum_ms + excluded.sum_ms;`;
}

/** The triggers recording keeps, by name; their text is compared with the stored one at start-up. */
export const HISTOGRAM_TRIGGERS: readonly { name: string; sql: string }[] = [
  // One trigger for both observations of an update (a start's wait, an end's run): cheaper than a
  // trigger each, whose conditions and programs every update of a job's state would run.
  // A wait runs from the later of the job's runAt and when it was last queued (enqueued, queued
  // again, its dependencies done: the row's updated_at, which nothing else moves while it is queued)
  // to its start. (A row without claimed_at, which no statement writes, is not observed.)
  // A run lasts from the attempt's start to its end, labelled by how it ended: the job's outcome, or
  // how it went back to queued (a failure retried, an expired lease recovered, a snooze, a release).
  {
    name: "jobs_histogram_update",
    sql: `CREATE TRIGGER jobs_histogram_update AFTER UPDATE OF state ON jobs
      WHEN (OLD.state = 'queued' AND NEW.state = 'running' AND NEW.claimed_at IS NOT NULL)
        OR (OLD.state = 'running' AND NEW.state <> 'running' AND OLD.claimed_at IS NOT NULL) BEGIN
        ${observe(`SELECT CASE WHEN NEW.state = 'running' THEN 'wait' ELSE 'run' END AS h,
          CASE WHEN NEW.state = 'running' THEN '' WHEN NEW.state <> 'queued' THEN NEW.outcome WHEN NEW.attempt_end IS 'retry' THEN 'retried'
            WHEN NEW.attempt_end IS 'recovery' THEN 'recovered' WHEN NEW.lease_token IS NULL THEN 'snoozed' ELSE 'released' END AS o,
          CASE WHEN NEW.state = 'running' THEN MAX(0, NEW.claimed_at - MAX(OLD.run_at, OLD.updated_at))
            ELSE MAX(0, NEW.updated_at - OLD.claimed_at) END AS v`)}
      END`,
  },
  // A job started at once (born running) waits from its runAt or its creation.
  {
    name: "jobs_histogram_wait_insert",
    sql: `CREATE TRIGGER jobs_histogram_wait_insert AFTER INSERT ON jobs WHEN NEW.state = 'running' AND NEW.claimed_at IS NOT NULL BEGIN
        ${observe(`SELECT 'wait' AS h, '' AS o, MAX(0, NEW.claimed_at - MAX(NEW.run_at, NEW.created_at)) AS v`)}
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
