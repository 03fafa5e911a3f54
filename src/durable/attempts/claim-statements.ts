/**
 * The SQL of the claim: which queued jobs may start now, best first, and the one statement that
 * leases them. "May start now" is flow/may-start.ts's, which the wake reads too: a job the wake
 * names is one these statements take; what a start draws of its queue's bucket is flow/queue-statements.ts's.
 * `now` is always a parameter, and always ?1.
 */
import { IS_CLAIMABLE, isClaimable, notExpired, queueCandidate } from "../flow/may-start.js";
import { JOB_COLUMNS } from "../store/job-row.js";

/**
 * A bound on what a queued job `j` adds to a claim's answer beyond `JOB_JSON_OVERHEAD` (store/page.ts):
 * its payload, error (escaped, at most 6×), errors, progress and dependsOn as stored. A pull claim adds its
 * checkpoints' and dependencies' bytes apart (steps/checkpoint-statements.ts), so that an in-process claim never asks.
 */
const candidateBytes = (j: string) => `octet_length(${j}.payload) + 6 * COALESCE(length(${j}.error), 0) + octet_length(${j}.errors)
    + COALESCE(octet_length(${j}.progress), 0) + COALESCE(octet_length(${j}.depends_on), 0)`;

/**
 * Due queued jobs a claimer may take, best first, with the bytes each adds to a page. ?1 now,
 * ?2 kinds excluded (JSON array), ?3 job ids excluded (JSON array), ?4 limit.
 */
export const CLAIM_CANDIDATES_SQL = `SELECT j.seq, j.priority, ${candidateBytes("j")} AS bytes, j.queue FROM jobs j
  WHERE j.state = 'queued' AND j.run_at <= ?1
    AND j.kind NOT IN (SELECT value FROM json_each(?2))
    AND j.id NOT IN (SELECT value FROM json_each(?3))
    AND ${IS_CLAIMABLE}
  ORDER BY j.priority DESC, j.seq LIMIT +?4`;

/**
 * Due queued jobs of the given kinds a claimer may take, best first, in one statement: for each kind,
 * a range of `jobs_kind` that stops after `limit` heads (a correlated subquery per kind), the few
 * rows found then ordered. (`kind IN (SELECT value FROM json_each(…))` alone reads as one statement
 * too, but the planner answers it by walking the whole claim order and filtering kinds: behind a
 * backlog of other kinds, a claim would read all of it; a `UNION ALL` per kind runs into the
 * runtime's limit on compound selects.) ?1 now, ?2 job ids excluded (JSON array), ?3 limit, ?4 kinds
 * (JSON array).
 */
export const CLAIM_KINDS_CANDIDATES_SQL = `SELECT o.seq, o.priority, ${candidateBytes("o")} AS bytes, o.queue FROM json_each(?4) AS k CROSS JOIN jobs o
  WHERE o.seq IN (SELECT j.seq FROM jobs j
    WHERE j.state = 'queued' AND j.kind = k.value AND j.run_at <= ?1
      AND j.id NOT IN (SELECT value FROM json_each(?2))
      AND ${IS_CLAIMABLE}
    ORDER BY j.priority DESC, j.seq LIMIT +?3)
  ORDER BY o.priority DESC, o.seq LIMIT +?3`;

/** The kinds a round-robin claim may take, of job `j`: ?2 a JSON array of kinds, taken (?5 = 1) or excluded (?5 = 0). */
const rrKinds = (j: string) => `CASE WHEN ?5 = 1 THEN ${j}.kind IN (SELECT value FROM json_each(?2)) ELSE ${j}.kind NOT IN (SELECT value FROM json_each(?2)) END`;

/** What a round-robin claim could take of job `w` at all: due, a kind it takes, not excluded, not expired (whether it may start now is `isClaimable`). */
const rrTakes = (w: string) => `${w}.run_at <= ?1 AND ${rrKinds(w)} AND ${w}.id NOT IN (SELECT value FROM json_each(?3)) AND ${notExpired(w)}`;

/** The best queued job outside any queue (those count as one queue), as the round-robin claims read it. */
const RR_UNQUEUED = `SELECT o.seq, o.priority, ${candidateBytes("o")}, NULL, (SELECT unqueued_started_at FROM lane WHERE id = 1) FROM jobs o
    WHERE o.seq = (SELECT j.seq FROM jobs j INDEXED BY jobs_unqueued WHERE j.state = 'queued' AND j.queue IS NULL AND ${rrTakes("j")}
      ORDER BY j.priority DESC, j.seq LIMIT 1)`;

/**
 * Round-robin (the lane's fairness): one claimable job per queue, the best of each
 * (`queueCandidate`: the first it could take, past any number that may not start now), the queues
 * ordered by priority, then the one that started a job least recently first (never: first of all);
 * jobs outside any queue count as one queue. Walks the queues with queued jobs
 * (`queues_round_robin`), a range of `jobs_queue` each, no longer than the queue's room allows
 * (its head alone for a serial queue). ?1 now, ?2 kinds (JSON array), ?3 job ids excluded (JSON
 * array), ?4 limit, ?5 1: take those kinds, 0: exclude them.
 */
export const CLAIM_ROUND_ROBIN_SQL = `SELECT seq, priority, bytes, queue FROM (
  SELECT o.seq, o.priority, ${candidateBytes("o")} AS bytes, o.queue, q.last_started_at AS started
    FROM queues q INDEXED BY queues_round_robin CROSS JOIN jobs o
    WHERE q.queued > 0 AND o.seq = ${queueCandidate("q", rrTakes)} AND ${isClaimable("o")}
  UNION ALL
  ${RR_UNQUEUED})
  ORDER BY priority DESC, started IS NOT NULL, started, seq LIMIT +?4`;

/**
 * Whether every queued job has one priority (two seeks of `jobs_claim`): then round-robin orders the
 * queues by their last start alone, and `CLAIM_ROUND_ROBIN_ONE_PRIORITY_SQL` may stop early.
 */
export const ONE_PRIORITY_SQL = `SELECT (SELECT priority FROM jobs INDEXED BY jobs_claim WHERE state = 'queued' ORDER BY priority DESC, seq LIMIT 1)
  IS (SELECT priority FROM jobs INDEXED BY jobs_claim WHERE state = 'queued' ORDER BY priority, seq DESC LIMIT 1) AS one`;

/**
 * `CLAIM_ROUND_ROBIN_SQL` when every queued job has one priority: the queues walked in the order of
 * `queues_round_robin` (least recently started first, never first of all), stopping once `limit`
 * of them have yielded a job, so that a claim among 10,000 tenants' queues reads about as many as it
 * takes, not all of them. Among queues that started equally long ago, the index's order (by name)
 * chooses which go in this claim; those chosen then go by enqueue order, as in the full statement.
 * Same bindings.
 */
export const CLAIM_ROUND_ROBIN_ONE_PRIORITY_SQL = `SELECT seq, priority, bytes, queue FROM (
  SELECT * FROM (SELECT o.seq, o.priority, ${candidateBytes("o")} AS bytes, o.queue, q.last_started_at AS started
    FROM queues q INDEXED BY queues_round_robin CROSS JOIN jobs o
    WHERE q.queued > 0 AND o.seq = ${queueCandidate("q", rrTakes)} AND ${isClaimable("o")}
    ORDER BY q.last_started_at LIMIT +?4)
  UNION ALL
  ${RR_UNQUEUED})
  ORDER BY started IS NOT NULL, started, seq LIMIT +?4`;

/**
 * Claims the given queued jobs, each with its own token; the lease records the code's version.
 * Answers each row and, after its columns, when its wait began (`wait_from`: a SET's right-hand side
 * reads the row it overwrites, so the claim answers the wait the upkeep observes with no read first).
 * ?1 JSON [[seq, token], …], ?2 lease until, ?3 holder, ?4 now, ?5 version.
 */
export const CLAIM_SQL = `UPDATE jobs SET state = 'running', attempts = attempts + 1, generation = generation + 1,
    lease_token = c.c_token, lease_until = ?2, lease_holder = ?3, claimed_at = ?4, updated_at = ?4, attempt_end = NULL, lease_version = ?5,
    wait_from = MAX(run_at, updated_at)
  FROM (SELECT value->>0 AS c_seq, value->>1 AS c_token FROM json_each(?1)) AS c
  WHERE jobs.seq = c.c_seq AND jobs.state = 'queued'
  RETURNING ${JOB_COLUMNS}, wait_from`;

/** The claim's statements, with bindings for a plan, for the query-plan test. */
export const CLAIM_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the claim (any kind)", CLAIM_CANDIDATES_SQL, (now) => [now, '["c"]', "[]", 10]],
  ["the claim (one kind, as the dispatcher asks)", CLAIM_KINDS_CANDIDATES_SQL, (now) => [now, '["x"]', 10, '["a"]']],
  ["the claim (several kinds, one statement)", CLAIM_KINDS_CANDIDATES_SQL, (now) => [now, "[]", 10, '["a","b","c"]']],
  ["the claim, round-robin", CLAIM_ROUND_ROBIN_SQL, (now) => [now, '["a","b"]', "[]", 10, 1]],
  ["the claim, round-robin, one priority", CLAIM_ROUND_ROBIN_ONE_PRIORITY_SQL, (now) => [now, '["a","b"]', "[]", 10, 1]],
  ["the claim itself (many jobs, one statement)", CLAIM_SQL, (now) => ['[[1,"t"],[2,"u"]]', now + 1, "lane", now, "v1"]],
];
