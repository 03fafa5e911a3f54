/**
 * The per-row triggers that kept the lane's upkeep before migration 22 (the store keeps it since:
 * src/durable/store/upkeep.ts), for the bench's A/B only: the counts, kinds and queues triggers as
 * the migrations that shipped them wrote them, and the histograms' and history's as the lane made
 * them at start-up while it recorded. Nothing in the lane makes them any more.
 */
import { HISTOGRAM_BOUNDS_MS } from "../src/durable/metrics/exposition.js";
import { MIGRATIONS } from "../src/durable/store/migrations.js";
import { HISTORY_MINUTES, MINUTE_MS } from "../src/shared/history.js";

const BUCKET_OF_V = `CASE ${HISTOGRAM_BOUNDS_MS.map((le, i) => `WHEN v <= ${le} THEN ${i}`).join(" ")} ELSE ${HISTOGRAM_BOUNDS_MS.length} END`;

/** The statement that adds one observation to its bucket's row, made at its first: `source` selects `h` (histogram), `o` (outcome), `v` (ms). */
function observe(source: string): string {
  return `INSERT INTO job_histograms (name, outcome, bucket, count, sum_ms)
          SELECT h, o, ${BUCKET_OF_V}, 1, v FROM (${source}) WHERE true
          ON CONFLICT (name, outcome, bucket) DO UPDATE SET count = count + 1, sum_ms = sum_ms + excluded.sum_ms;`;
}

/** The triggers recording keeps, by name; their text is compared with the stored one at start-up. */
const HISTOGRAM_TRIGGERS: readonly { name: string; sql: string }[] = [
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

const roll = (m: string) => `
      INSERT INTO history (slot, minute, enqueued, started, completed, failed, depth)
        SELECT history_minute % ${HISTORY_MINUTES}, history_minute, total_enqueued - history_base_enqueued, total_claimed - history_base_started,
          total_completed - history_base_completed, total_failed - history_base_failed, queued - blocked
        FROM lane_counts WHERE id = 1 AND history_minute IS NOT NULL
        ON CONFLICT (slot) DO UPDATE SET
          enqueued = excluded.enqueued + IIF(minute = excluded.minute, enqueued, 0),
          started = excluded.started + IIF(minute = excluded.minute, started, 0),
          completed = excluded.completed + IIF(minute = excluded.minute, completed, 0),
          failed = excluded.failed + IIF(minute = excluded.minute, failed, 0),
          depth = excluded.depth, minute = excluded.minute;
      UPDATE lane_counts SET history_minute = ${m}, history_base_enqueued = total_enqueued, history_base_started = total_claimed,
        history_base_completed = total_completed, history_base_failed = total_failed
      WHERE id = 1;`;

const MINUTE_NEW = `(NEW.updated_at / ${MINUTE_MS})`;
/** Whether this transition is the first of another minute: one row read. */
const NEW_MINUTE = `(SELECT history_minute FROM lane_counts WHERE id = 1) IS NOT ${MINUTE_NEW}`;

/** The triggers recording keeps, by name; their text is compared with the stored one at start-up. */
const HISTORY_TRIGGERS: readonly { name: string; sql: string }[] = [
  {
    name: "jobs_history_insert",
    sql: `CREATE TRIGGER jobs_history_insert BEFORE INSERT ON jobs WHEN ${NEW_MINUTE} BEGIN${roll(MINUTE_NEW)}
    END`,
  },
  {
    // Every update that may move the totals or the depth (a BEFORE trigger changes no job row).
    name: "jobs_history_update",
    sql: `CREATE TRIGGER jobs_history_update BEFORE UPDATE OF state, outcome, blocked ON jobs WHEN ${NEW_MINUTE} BEGIN${roll(MINUTE_NEW)}
    END`,
  },
];

/** Every upkeep trigger of a lane at version 21 that recorded: the last definition of each name in the migrations, then the start-up ones. */
export function legacyUpkeepTriggers(): string[] {
  const byName = new Map<string, string>();
  for (const migration of MIGRATIONS) {
    for (const statement of migration.statements) {
      const name = /^CREATE TRIGGER (\w+)/.exec(statement.trim())?.[1];
      if (name && !name.startsWith("jobs_outbox_")) byName.set(name, statement);
    }
  }
  return [...byName.values(), ...HISTOGRAM_TRIGGERS.map((t) => t.sql), ...HISTORY_TRIGGERS.map((t) => t.sql)];
}
