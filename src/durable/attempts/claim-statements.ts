/**
 * The SQL of the claim: which queued jobs may start now, best first, and the one statement that
 * leases them. The wake asks the same question of the rows (`IS_QUEUE_HEAD`), so it reads it here.
 * `now` is always a parameter.
 */
import { JOB_COLUMNS } from "../store/job-row.js";

/**
 * A queued job `j` may start only if it heads its queue and nothing of its queue runs or completes:
 * a completing job holds its queue until its outcome is delivered, so a queue's outcomes are
 * delivered in order.
 */
export const IS_QUEUE_HEAD = `(j.queue IS NULL OR (
  NOT EXISTS (SELECT 1 FROM jobs r WHERE r.queue = j.queue AND r.state IN ('running', 'completing'))
  AND NOT EXISTS (SELECT 1 FROM jobs h WHERE h.queue = j.queue AND h.state = 'queued'
    AND (h.priority > j.priority OR (h.priority = j.priority AND h.seq < j.seq)))))`;

/**
 * A bound on what a queued job `j` adds to a claim's answer beyond `JOB_JSON_OVERHEAD` (store/page.ts):
 * its payload, error (escaped, at most 6×), errors and progress as stored. A pull claim adds its
 * checkpoints' bytes apart (steps/checkpoint-statements.ts), so that an in-process claim never asks.
 */
const candidateBytes = (j: string) => `octet_length(${j}.payload) + 6 * COALESCE(length(${j}.error), 0) + octet_length(${j}.errors)
    + COALESCE(octet_length(${j}.progress), 0)`;

/**
 * Due queued jobs a claimer may take, best first, with the bytes each adds to a page. ?1 now,
 * ?2 kinds excluded (JSON array), ?3 job ids excluded (JSON array), ?4 limit.
 */
export const CLAIM_CANDIDATES_SQL = `SELECT j.seq, j.priority, ${candidateBytes("j")} AS bytes FROM jobs j
  WHERE j.state = 'queued' AND j.run_at <= ?1
    AND j.kind NOT IN (SELECT value FROM json_each(?2))
    AND j.id NOT IN (SELECT value FROM json_each(?3))
    AND ${IS_QUEUE_HEAD}
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
export const CLAIM_KINDS_CANDIDATES_SQL = `SELECT o.seq, o.priority, ${candidateBytes("o")} AS bytes FROM json_each(?4) AS k CROSS JOIN jobs o
  WHERE o.seq IN (SELECT j.seq FROM jobs j
    WHERE j.state = 'queued' AND j.kind = k.value AND j.run_at <= ?1
      AND j.id NOT IN (SELECT value FROM json_each(?2))
      AND ${IS_QUEUE_HEAD}
    ORDER BY j.priority DESC, j.seq LIMIT +?3)
  ORDER BY o.priority DESC, o.seq LIMIT +?3`;

/**
 * Claims the given queued jobs, each with its own token; the lease records the code's version.
 * ?1 JSON [[seq, token], …], ?2 lease until, ?3 holder, ?4 now, ?5 version.
 */
export const CLAIM_SQL = `UPDATE jobs SET state = 'running', attempts = attempts + 1, generation = generation + 1,
    lease_token = c.c_token, lease_until = ?2, lease_holder = ?3, claimed_at = ?4, updated_at = ?4, attempt_end = NULL, lease_version = ?5
  FROM (SELECT value->>0 AS c_seq, value->>1 AS c_token FROM json_each(?1)) AS c
  WHERE jobs.seq = c.c_seq AND jobs.state = 'queued'
  RETURNING ${JOB_COLUMNS}`;

/** The claim's statements, with bindings for a plan, for the query-plan test. */
export const CLAIM_HOT_STATEMENTS: readonly [what: string, sql: string, bindings: (now: number) => unknown[]][] = [
  ["the claim (any kind)", CLAIM_CANDIDATES_SQL, (now) => [now, '["c"]', "[]", 10]],
  ["the claim (one kind, as the dispatcher asks)", CLAIM_KINDS_CANDIDATES_SQL, (now) => [now, '["x"]', 10, '["a"]']],
  ["the claim (several kinds, one statement)", CLAIM_KINDS_CANDIDATES_SQL, (now) => [now, "[]", 10, '["a","b","c"]']],
  ["the claim itself (many jobs, one statement)", CLAIM_SQL, (now) => ['[[1,"t"],[2,"u"]]', now + 1, "lane", now, "v1"]],
];
