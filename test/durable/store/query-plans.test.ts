import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EARLIEST_QUEUED_RUN_AT_SQL } from "../../../src/durable/store/counts-statements.js";
import { QUEUED_TO_FAIL_SQL, RUNNING_TO_FAIL_SQL } from "../../../src/durable/operator/operator-statements.js";
import { EXPIRED_SQL, OLDEST_SETTLED_SQL, QUEUE_HOLDER_SQL, QUEUE_NEXT_SQL, QUEUE_PURGE_SQL } from "../../../src/durable/operator/operator-statements.js";
import { CHECKPOINT_HOT_STATEMENTS } from "../../../src/durable/steps/checkpoint-statements.js";
import { CLAIM_CANDIDATES_SQL, CLAIM_HOT_STATEMENTS, CLAIM_KINDS_CANDIDATES_SQL, CLAIM_ROUND_ROBIN_SQL } from "../../../src/durable/attempts/claim-statements.js";
import { COMPLETING_SQL, EXPIRED_LEASES_SQL, LEASE_HOT_STATEMENTS } from "../../../src/durable/attempts/lease-statements.js";
import { BATCH_HOT_STATEMENTS } from "../../../src/durable/attempts/batch-statements.js";
import { DUE_EXECUTOR_HEAD_SQL, EARLIEST_FUTURE_HEAD_SQL, WAKE_HOT_STATEMENTS, WAKE_STATE_SQL } from "../../../src/durable/wake/wake-statements.js";
import { QUEUE_NEXT_TOKEN_SQL } from "../../../src/durable/flow/queue-statements.js";
import { DEPENDENCY_HOT_STATEMENTS, DUE_NOTICES_SQL, REGISTRATIONS_OF_SQL } from "../../../src/durable/deps/dependency-statements.js";
import { EXPIRED_DUE_SQL } from "../../../src/durable/flow/expiry-statements.js";
import { DEBOUNCE_TARGET_SQL } from "../../../src/durable/flow/debounce-statements.js";
import { JOB_BY_ID_SQL } from "../../../src/durable/store/job-statements.js";
import { DUE_KEY_MOVES_SQL, JOB_MOVING_SQL, KEY_MOVE_OF_SQL } from "../../../src/durable/shards/key-statements.js";
import { DUE_SCHEDULES_SQL } from "../../../src/durable/schedules/schedule-statements.js";
import { DUE_WAITPOINT_NOTICES_SQL, TELL_WAITS_SQL } from "../../../src/durable/waits/wait-statements.js";
import { DUE_DEAD_LETTERS_SQL } from "../../../src/durable/deadletters/dead-letter-statements.js";
import { HELD_FOR_COPIES_SQL } from "../../../src/durable/payloads/payload-statements.js";
import { ANY_REGISTERED_SQL, DUE_WITHDRAWALS_SQL } from "../../../src/durable/waits/remote-wait-statements.js";
import { PROGRESS_PAST_KEPT_SQL } from "../../../src/durable/results/stream-statements.js";
import { DUE_TIMEOUTS_SQL, OLDEST_SETTLED_SQL as OLDEST_SETTLED_WAITPOINT_SQL } from "../../../src/durable/waitpoints/waitpoint-statements.js";
import { T0, claim, setup, value } from "../../helpers/lane.js";

const HOT_STATEMENTS = [...CLAIM_HOT_STATEMENTS, ...LEASE_HOT_STATEMENTS, ...WAKE_HOT_STATEMENTS, ...BATCH_HOT_STATEMENTS];
const statements = HOT_STATEMENTS.map(([what, sql, bindings]) => [what, sql, bindings(T0)] as [string, string, unknown[]]);

/** The plan of `statement` in a lane in use, and its steps that read the whole jobs table. */
async function fullScans(statement: string, bindings: unknown[]): Promise<{ plan: string[]; scans: string[] }> {
  const { stub } = await setup();
  // some rows of every kind, so that the plan is the plan of a lane in use
  value(
    await stub.enqueueBatch({
      jobs: Array.from({ length: 30 }, (_, i) => ({ kind: "abc"[i % 3]!, queue: i % 2 ? `q${i % 5}` : null, delayMs: i % 4 ? 0 : 1_000 })),
    }),
  );
  await claim(stub, { max: 5 });
  const plan = await runInDurableObject(stub, (_lane, state) =>
    state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...bindings).toArray().map((r) => r.detail),
  );
  // "SCAN jobs" (or an alias of it) without "USING INDEX" reads every row
  const scans = plan.filter((detail) => /\bSCAN (jobs|j|r|h)\b/.test(detail) && !/USING (COVERING )?INDEX/.test(detail));
  return { plan, scans };
}

describe("query plans", () => {
  it.each(statements)("%s reads an index, never the whole jobs table", async (_what, statement, bindings) => {
    const { plan, scans } = await fullScans(statement, bindings);
    expect(scans, plan.join("\n")).toEqual([]);
    // a partial index of ours, the unique index on id, or the primary key: a lookup either way
    expect(plan.join("\n")).toMatch(/USING (COVERING )?INDEX (jobs_|sqlite_autoindex_jobs_)|USING INTEGER PRIMARY KEY/);
  });

  // The operator's statements: each on the index made for it, whatever the lane holds.
  it.each([
    ["oldestDueAt", EARLIEST_QUEUED_RUN_AT_SQL, [], "jobs_run_at"],
    ["retention and sweep: expired jobs by outcome", EXPIRED_SQL, [T0, T0, T0, T0, 1000], "jobs_settled_by_outcome"],
    ["the retention wake: the oldest settled job of each outcome", OLDEST_SETTLED_SQL, [], "jobs_settled_by_outcome"],
    ["failing a lane: running jobs", RUNNING_TO_FAIL_SQL, [500], "jobs_lease"],
    ["failing a lane: queued jobs in enqueue order", QUEUED_TO_FAIL_SQL, [500], "jobs_queued"],
    ["a queue's holder", QUEUE_HOLDER_SQL, ["q1"], "jobs_queue"],
    ["a queue's next job", QUEUE_NEXT_SQL, ["q1"], "jobs_queue"],
    ["a purge's batch", QUEUE_PURGE_SQL, ["q1", 100, 1000], "jobs_queue"],
  ] as [string, string, unknown[], string][])("%s reads its index, never the whole jobs table", async (_what, statement, bindings, index) => {
    const { plan, scans } = await fullScans(statement, bindings);
    expect(scans, plan.join("\n")).toEqual([]);
    expect(plan.join("\n")).toContain(`INDEX ${index}`);
  });

  it("a claim over several kinds reads a range of jobs_kind per kind, never the whole claim order", async () => {
    const { plan } = await fullScans(CLAIM_KINDS_CANDIDATES_SQL, [T0, "[]", 10, '["a","b","c"]']);
    const text = plan.join("\n");
    expect(text).toContain("SEARCH j USING INDEX jobs_kind (kind=?)");
    expect(text).not.toMatch(/SCAN j\b/);
  });

  it("would see a full scan (a control for the check above)", async () => {
    const { scans } = await fullScans(`SELECT seq FROM jobs WHERE kind = ?`, ["a"]);
    expect(scans).toEqual(["SCAN jobs"]);
  });
});

describe("query plans of durable steps", () => {
  const checkpointStatements = CHECKPOINT_HOT_STATEMENTS.map(([what, sql, bindings]) => [what, sql, bindings(T0)] as [string, string, unknown[]]);

  it.each(checkpointStatements)("%s looks rows up by key, never reading a whole table", async (_what, statement, bindings) => {
    const { plan } = await fullScans(statement, bindings);
    // Only a bound JSON list (a virtual table) may be walked; every table is searched by a key.
    const walks = plan.filter((detail) => /\bSCAN\b/.test(detail) && !/VIRTUAL TABLE|USING (COVERING )?INDEX|PRIMARY KEY/.test(detail));
    expect(walks, plan.join("\n")).toEqual([]);
    expect(plan.join("\n")).toMatch(/SEARCH/);
  });
});

describe("query plans of flow control", () => {
  /** The plan of `statement` in a lane of `queues` queues of concurrency 3 with jobs in each, and its full scans of jobs or queues. */
  async function planWithQueues(statement: string, bindings: unknown[], setupLane: (sql: SqlStorage) => void): Promise<{ plan: string[]; scans: string[] }> {
    const { stub } = await setup();
    value(await stub.configure({ rateLimit: { limit: 100, periodMs: 1_000 } }));
    const plan = await runInDurableObject(stub, (_lane, state) => {
      setupLane(state.storage.sql);
      return state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...bindings).toArray().map((r) => r.detail);
    });
    // A table walked row by row: jobs or queues under any of their aliases, without an index.
    const scans = plan.filter((detail) => /\bSCAN (jobs|queues|j|o|f|h|r|q)\b/.test(detail) && !/USING (COVERING )?INDEX/.test(detail));
    return { plan, scans };
  }

  /** 10,000 queues of concurrency 3, each with three queued jobs (a rate-limited one among them). */
  const tenThousandQueues = (sql: SqlStorage) => {
    sql.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
      INSERT INTO jobs (id, kind, payload, queue, priority, run_at, max_attempts, backoff_base_ms, backoff_max_ms, timeout_ms, state, created_at, updated_at)
      SELECT 'j' || i || '-' || k.value, 'a', '{}', 'q' || i, 0, ?1, 3, 1000, 300000, 60000, 'queued', ?1, ?1 FROM n, json_each('[1,2,3]') AS k`, T0);
    sql.exec(`UPDATE queues SET concurrency = 3`);
    sql.exec(`UPDATE queues SET rate_limit = 5, rate_period_ms = 1000 WHERE name = 'q7'`);
  };

  it.each([
    ["the claim (any kind), rate-limited lane, 10,000 queues of concurrency 3", CLAIM_CANDIDATES_SQL, [T0, "[]", "[]", 16]],
    ["the claim (the dispatcher's kinds), rate-limited lane, 10,000 queues of concurrency 3", CLAIM_KINDS_CANDIDATES_SQL, [T0, "[]", 16, '["a","b"]']],
    ["the claim, round-robin, 10,000 queues", CLAIM_ROUND_ROBIN_SQL, [T0, '["a"]', "[]", 16, 1]],
  ] as [string, string, unknown[]][])("%s reads indexes and keys, never a whole table of jobs or queues", async (_what, statement, bindings) => {
    const { plan, scans } = await planWithQueues(statement, bindings, tenThousandQueues);
    expect(scans, plan.join("\n")).toEqual([]);
    expect(plan.join("\n")).toMatch(/SEARCH q USING PRIMARY KEY|queues_round_robin/);
  });

  it("round-robin reads each queue's own jobs on jobs_queue (a range no longer than its room), never the lane's claim order", async () => {
    const { plan } = await planWithQueues(CLAIM_ROUND_ROBIN_SQL, [T0, '["a"]', "[]", 16, 1], tenThousandQueues);
    const text = plan.join("\n");
    expect(text).toContain("SEARCH w USING INDEX jobs_queue (queue=? AND state=?)");
    expect(text).not.toMatch(/jobs_claim|jobs_kind|jobs_run_at/);
  });

  it("finds a queue's next token and the next expiry on their indexes", async () => {
    const expiry = await planWithQueues(`SELECT MIN(expires_at) FROM jobs WHERE state = 'queued' AND generation = 0 AND expires_at IS NOT NULL`, [], tenThousandQueues);
    expect(expiry.plan.join("\n")).toContain("jobs_expiry");
    const token = await planWithQueues(QUEUE_NEXT_TOKEN_SQL, [T0], tenThousandQueues);
    expect(token.plan.join("\n")).toContain("queues_rate_limited");
  });
});


describe("query plans of dependencies", () => {
  const dependencyStatements = DEPENDENCY_HOT_STATEMENTS.map(([what, sql, bindings]) => [what, sql, bindings(T0)] as [string, string, unknown[]]);

  /** A lane with 2,000 dependents waiting on 200 dependencies, and as many untold notices: where a walk would show. */
  async function planWithDependencies(statement: string, bindings: unknown[]): Promise<string[]> {
    const { stub } = await setup();
    return runInDurableObject(stub, (_lane, state) => {
      const sql = state.storage.sql;
      sql.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1999)
        INSERT INTO jobs (id, kind, payload, queue, priority, run_at, max_attempts, backoff_base_ms, backoff_max_ms, timeout_ms, state, created_at, updated_at, blocked)
        SELECT 'j' || i, 'a', '{}', NULL, 0, ?1, 3, 1000, 300000, 60000, 'queued', ?1, ?1, i % 2 FROM n`, T0);
      sql.exec(`INSERT INTO dependents (dep_seq, lane, id, created_at) SELECT seq % 200 + 1, 'other', 'd' || seq, 0 FROM jobs`);
      sql.exec(`INSERT INTO dependencies (job_seq, position, lane, id) SELECT seq, 0, 'other', 'c' || seq FROM jobs`);
      sql.exec(`INSERT INTO outbox (dep_seq, dep_id, outcome, generation, lane, id, next_at, created_at) SELECT seq, id, 'completed', 1, 'other', 'd' || seq, ?1 + seq, 0 FROM jobs`, T0);
      return sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...bindings).toArray().map((r) => r.detail);
    });
  }

  it.each(dependencyStatements)("%s looks rows up by key or index, never reading a whole table", async (_what, statement, bindings) => {
    const plan = await planWithDependencies(statement, bindings);
    // Only a bound JSON list (a virtual table) may be walked; every table is searched by a key or index.
    const walks = plan.filter((detail) => /\bSCAN\b/.test(detail) && !/VIRTUAL TABLE|USING (COVERING )?INDEX|PRIMARY KEY/.test(detail));
    expect(walks, plan.join("\n")).toEqual([]);
  });

  it("releasing a settled job's dependents and picking due notices read their indexes", async () => {
    expect((await planWithDependencies(REGISTRATIONS_OF_SQL, [7])).join("\n")).toMatch(/SEARCH dependents USING PRIMARY KEY \(dep_seq=\?\)/);
    expect((await planWithDependencies(DUE_NOTICES_SQL, [T0 + 10, 500])).join("\n")).toContain("outbox_due");
    expect((await planWithDependencies(`SELECT 1 FROM outbox o WHERE o.dep_seq = ?1`, [7])).join("\n")).toContain("outbox_by_dependency");
  });
});

describe("every index of the lane earns its place", () => {
  /**
   * Each index a write keeps up (on `jobs` and every other table, all but a table's own key), and the
   * statements of the code whose plans read it: an index no statement reads costs every insert and
   * change of its table for nothing. Found in the live schema, so that a new index without a
   * statement here fails.
   */
  const USES: Record<string, [what: string, sql: string, bindings: unknown[]][]> = {
    sqlite_autoindex_jobs_1: [["a job by id", JOB_BY_ID_SQL, ["a"]]],
    jobs_claim: [["the claim (any kind)", CLAIM_CANDIDATES_SQL, [T0, "[]", "[]", 10]]],
    jobs_kind: [
      ["the claim (the dispatcher's kinds)", CLAIM_KINDS_CANDIDATES_SQL, [T0, "[]", 10, '["a"]']],
      ["the wake: a due in-process head", DUE_EXECUTOR_HEAD_SQL, [T0, "a", "[]"]],
    ],
    jobs_unqueued: [["the claim, round-robin: jobs outside any queue", CLAIM_ROUND_ROBIN_SQL, [T0, '["a"]', "[]", 10, 1]]],
    jobs_queue: [
      ["a queue's holder", QUEUE_HOLDER_SQL, ["q1"]],
      ["the claim: a queue's heads", CLAIM_CANDIDATES_SQL, [T0, "[]", "[]", 10]],
    ],
    jobs_run_at: [
      ["the wake: earliest future head", EARLIEST_FUTURE_HEAD_SQL, [T0]],
      ["oldestDueAt", EARLIEST_QUEUED_RUN_AT_SQL, []],
    ],
    jobs_lease: [
      ["lease recovery", EXPIRED_LEASES_SQL, [T0, 500]],
      ["the wake: earliest lease", WAKE_STATE_SQL, []],
    ],
    jobs_completing: [["outcome delivery: completing jobs in order", COMPLETING_SQL, [0, 100]]],
    jobs_settled_by_outcome: [["retention: expired jobs by outcome", EXPIRED_SQL, [T0, T0, T0, T0, 1000]]],
    jobs_queued: [["failing a lane: queued jobs in enqueue order", QUEUED_TO_FAIL_SQL, [500]]],
    jobs_expiry: [
      ["expiry: the due jobs", EXPIRED_DUE_SQL, [T0, 100]],
      ["the wake: next expiry", WAKE_STATE_SQL, []],
    ],
    jobs_debounce: [["a debounce key's queued job", DEBOUNCE_TARGET_SQL, ["k"]]],
    outbox_due: [["due outbox notices", DUE_NOTICES_SQL, [T0, 500]]],
    outbox_by_dependency: [["the retention wake: a settled job's untold notices", OLDEST_SETTLED_SQL, []]],
    queues_rate_limited: [["a rate-limited queue's next token", QUEUE_NEXT_TOKEN_SQL, [T0]]],
    queues_round_robin: [["the claim, round-robin: the queue that started least recently", CLAIM_ROUND_ROBIN_SQL, [T0, '["a"]', "[]", 10, 1]]],
    schedules_next_run: [["the due schedules", DUE_SCHEDULES_SQL, [T0, 500, "[]"]]],
    key_moves_due: [["a sharded lane's due key moves", DUE_KEY_MOVES_SQL, [T0, 100]]],
    key_moves_key: [["a key's move under way", KEY_MOVE_OF_SQL, ["k"]]],
    key_moves_job: [["a job's move under way", JOB_MOVING_SQL, ["j"]]],
    job_waits_waiting: [["a settling waitpoint's waiting jobs", TELL_WAITS_SQL, ["l", "w", "completed", null, T0]]],
    waitpoint_outbox_due: [["due waitpoint notices", DUE_WAITPOINT_NOTICES_SQL, [T0, 500]]],
    dead_letter_outbox_due: [["due dead-letter copies", DUE_DEAD_LETTERS_SQL, [T0, 500]]],
    dead_letter_outbox_held: [["the objects copies still owed hold (the payload sweep keeps them)", HELD_FOR_COPIES_SQL, ['["k"]']]],
    job_waits_registered: [["whether a job here holds a registration elsewhere (once an instance)", ANY_REGISTERED_SQL, []]],
    waitpoint_withdrawals_due: [["due withdrawals of registrations elsewhere", DUE_WITHDRAWALS_SQL, [T0, 500]]],
    job_events_progress: [["a job's progress events past the last 100 (the event log's trigger drops them)", PROGRESS_PAST_KEPT_SQL, [1]]],
    waitpoints_timeout: [["the waitpoints' due timeouts", DUE_TIMEOUTS_SQL, [T0, 500]]],
    waitpoints_settled: [["the waitpoints' wake: the oldest settlement", OLDEST_SETTLED_WAITPOINT_SQL, []]],
  };

  /**
   * Indexes of a UNIQUE constraint that no statement reads: each keeps a rule of its table's writes,
   * which a statement of the code relies on (its test names it).
   */
  const KEEPS: Record<string, string> = {
    // migration 28's trigger inserts OR IGNORE: one copy owed per job and dead-letter lane
    // (test/durable/deadletters/held-copies.test.ts "a job requeued and failed again …").
    sqlite_autoindex_dead_letter_outbox_1: "UNIQUE (lane, id) of dead_letter_outbox",
  };

  it("names every index of the lane but its tables' keys, and no other", async () => {
    const { stub } = await setup();
    const indexes = await runInDurableObject(stub, (_lane, state) =>
      // origin "c": CREATE INDEX; "u": a UNIQUE constraint; "pk" (a table's key) is no choice of ours
      state.storage.sql
        .exec<{ name: string }>(`SELECT i.name FROM sqlite_master AS t, pragma_index_list(t.name) AS i
          WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND t.name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND i.origin <> 'pk'`)
        .toArray()
        .map((i) => i.name),
    );
    expect(indexes.sort()).toEqual([...Object.keys(USES), ...Object.keys(KEEPS)].sort());
  });

  it("keeps an index no statement reads only for a UNIQUE constraint", async () => {
    const { stub } = await setup();
    const origins = await runInDurableObject(stub, (_lane, state) =>
      state.storage.sql
        .exec<{ name: string; origin: string }>(`SELECT i.name, i.origin FROM sqlite_master AS t, pragma_index_list(t.name) AS i WHERE t.type = 'table'`)
        .toArray(),
    );
    expect(Object.keys(KEEPS).map((name) => origins.find((i) => i.name === name)?.origin)).toEqual(Object.keys(KEEPS).map(() => "u"));
  });

  it.each(Object.entries(USES).flatMap(([index, uses]) => uses.map(([what, sql, bindings]) => [index, what, sql, bindings] as const)))(
    "%s is read by %s",
    async (index, _what, statement, bindings) => {
      const { plan } = await fullScans(statement, [...bindings]);
      expect(plan.join("\n")).toMatch(new RegExp(`USING (COVERING )?INDEX ${index}\\b`));
    },
  );
});
