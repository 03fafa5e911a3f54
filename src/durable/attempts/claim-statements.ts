/**
 * The SQL of the claim: which queued jobs may start now, best first, and the one statement that
 * leases them. The wake asks the same question of the rows (`IS_CLAIMABLE`), so it reads it here.
 * `now` is always a parameter, and always ?1.
 */
import { JOB_COLUMNS } from "../store/job-row.js";

/**
 * The whole tokens of queue `q`'s bucket at ?1 (now): its stored units refilled since, at most
 * full; never drawn (NULL units) is full. See shared/bucket.ts for the units. Cast to an integer:
 * now arrives as a double, and with it the division would not round down.
 */
export const queueTokens = (q: string) => `CAST(MIN(${q}.rate_limit * ${q}.rate_period_ms,
    COALESCE(${q}.bucket_units + MIN(MAX(0, ?1 - ${q}.bucket_at), ${q}.rate_period_ms) * ${q}.rate_limit, ${q}.rate_limit * ${q}.rate_period_ms))
    / ${q}.rate_period_ms AS INTEGER)`;

/** The queued jobs of `j`'s queue ahead of it: higher priority, or as high and enqueued earlier. */
const ahead = (j: string) => `h.queue = ${j}.queue AND h.state = 'queued' AND (h.priority > ${j}.priority OR (h.priority = ${j}.priority AND h.seq < ${j}.seq))`;

/**
 * A queued job `j` may start now when it has not expired (a TTL holds until the first start) and,
 * in a queue, when the queue has a free slot (`active`: its running and completing jobs, kept) and a
 * token (when rate limited), and `j` is among the first jobs of the queue that those allow: its head
 * for a serial queue (concurrency 1), else one of the first `concurrency - active` (and no more than
 * the tokens) in queue order. A completing job holds its slot until its outcome is delivered, so a
 * serial queue's outcomes are delivered in order. Every queue with queued jobs has its row (the
 * triggers of its counts make it).
 */
export const isClaimable = (j: string) => `(${j}.expires_at IS NULL OR ${j}.generation > 0 OR ${j}.expires_at > ?1) AND (${j}.queue IS NULL OR EXISTS (
  SELECT 1 FROM queues q WHERE q.name = ${j}.queue AND q.active < q.concurrency
    AND (q.rate_limit IS NULL OR ${queueTokens("q")} >= 1)
    AND CASE WHEN q.concurrency = 1 THEN NOT EXISTS (SELECT 1 FROM jobs h WHERE ${ahead(j)})
      ELSE (SELECT COUNT(*) FROM (SELECT 1 FROM jobs h WHERE ${ahead(j)} LIMIT 1000))
        < MIN(q.concurrency - q.active, CASE WHEN q.rate_limit IS NULL THEN 1000 ELSE ${queueTokens("q")} END) END))`;

/** `isClaimable` of a job aliased `j`, as most statements name it. */
export const IS_CLAIMABLE = isClaimable("j");

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

/**
 * Round-robin (the lane's fairness): one claimable job per queue, the best of each (among its first
 * jobs in queue order), the queues ordered by priority, then the one that started a job least
 * recently first (never: first of all); jobs outside any queue count as one queue. Walks the queues
 * with queued jobs (`queues_round_robin`), a bounded range of `jobs_queue` each. ?1 now, ?2 kinds
 * (JSON array), ?3 job ids excluded (JSON array), ?4 limit, ?5 1: take those kinds, 0: exclude them.
 */
export const CLAIM_ROUND_ROBIN_SQL = `SELECT seq, priority, bytes, queue FROM (
  SELECT o.seq, o.priority, ${candidateBytes("o")} AS bytes, o.queue, q.last_started_at AS started
    FROM queues q INDEXED BY queues_round_robin CROSS JOIN jobs o
    WHERE q.queued > 0 AND o.seq = (SELECT top.seq FROM (SELECT * FROM jobs f WHERE f.queue = q.name AND f.state = 'queued'
        ORDER BY f.priority DESC, f.seq LIMIT 16) AS top
      WHERE top.run_at <= ?1 AND ${rrKinds("top")} AND top.id NOT IN (SELECT value FROM json_each(?3)) AND ${isClaimable("top")} LIMIT 1)
  UNION ALL
  SELECT o.seq, o.priority, ${candidateBytes("o")}, NULL, (SELECT unqueued_started_at FROM lane WHERE id = 1) FROM jobs o
    WHERE o.seq = (SELECT j.seq FROM jobs j INDEXED BY jobs_unqueued WHERE j.state = 'queued' AND j.queue IS NULL AND j.run_at <= ?1
      AND ${rrKinds("j")} AND j.id NOT IN (SELECT value FROM json_each(?3)) AND (j.expires_at IS NULL OR j.generation > 0 OR j.expires_at > ?1)
      ORDER BY j.priority DESC, j.seq LIMIT 1))
  ORDER BY priority DESC, started IS NOT NULL, started, seq LIMIT +?4`;

/**
 * Claims the given queued jobs, each with its own token; the lease records the code's version.
 * ?1 JSON [[seq, token], …], ?2 lease until, ?3 holder, ?4 now, ?5 version.
 */
export const CLAIM_SQL = `UPDATE jobs SET state = 'running', attempts = attempts + 1, generation = generation + 1,
    lease_token = c.c_token, lease_until = ?2, lease_holder = ?3, claimed_at = ?4, updated_at = ?4, attempt_end = NULL, lease_version = ?5
  FROM (SELECT value->>0 AS c_seq, value->>1 AS c_token FROM json_each(?1)) AS c
  WHERE jobs.seq = c.c_seq AND jobs.state = 'queued'
  RETURNING ${JOB_COLUMNS}`;

/**
 * The queues of just-claimed jobs: each bucket drawn by the jobs it started (refilled to now first),
 * and its last start set (round-robin). ?1 now, ?2 JSON [[queue, jobs started], …].
 */
export const QUEUES_STARTED_SQL = `UPDATE queues SET
    bucket_units = CASE WHEN rate_limit IS NULL THEN NULL ELSE MAX(0, ${queueTokensUnits()} - s.s_jobs * rate_period_ms) END,
    bucket_at = CASE WHEN rate_limit IS NULL THEN NULL ELSE MAX(COALESCE(bucket_at, ?1), ?1) END,
    last_started_at = ?1
  FROM (SELECT value->>0 AS s_queue, value->>1 AS s_jobs FROM json_each(?2)) AS s
  WHERE queues.name = s.s_queue`;

/** The units (not tokens) of the `queues` row being updated, refilled to ?1. */
function queueTokensUnits(): string {
  return `MIN(rate_limit * rate_period_ms, COALESCE(bucket_units + MIN(MAX(0, ?1 - bucket_at), rate_period_ms) * rate_limit, rate_limit * rate_period_ms))`;
}

/** The claim's statements, with bindings for a plan, for the query-plan test. */
export const CLAIM_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the claim (any kind)", CLAIM_CANDIDATES_SQL, (now) => [now, '["c"]', "[]", 10]],
  ["the claim (one kind, as the dispatcher asks)", CLAIM_KINDS_CANDIDATES_SQL, (now) => [now, '["x"]', 10, '["a"]']],
  ["the claim (several kinds, one statement)", CLAIM_KINDS_CANDIDATES_SQL, (now) => [now, "[]", 10, '["a","b","c"]']],
  ["the claim, round-robin", CLAIM_ROUND_ROBIN_SQL, (now) => [now, '["a","b"]', "[]", 10, 1]],
  ["the claim itself (many jobs, one statement)", CLAIM_SQL, (now) => ['[[1,"t"],[2,"u"]]', now + 1, "lane", now, "v1"]],
];
