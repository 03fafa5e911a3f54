import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  COMPLETING_COUNT_SQL,
  CLAIM_CANDIDATES_SQL,
  CLAIM_KIND_CANDIDATES_SQL,
  CLAIM_SQL,
  COMPLETE_MANY_SQL,
  WAKE_STATE_SQL,
  DUE_EXECUTOR_HEAD_SQL,
  EARLIEST_FUTURE_HEAD_SQL,
  EARLIEST_LEASE_SQL,
  EXPIRED_LEASES_SQL,
  RUNNING_COUNT_SQL,
} from "../../src/durable/lane-store.js";
import { T0, claim, setup, value } from "../helpers/lane.js";

const statements: [string, string, unknown[]][] = [
  ["the claim (any kind)", CLAIM_CANDIDATES_SQL, [T0, null, "[]", 10]],
  ["the claim (some kinds)", CLAIM_CANDIDATES_SQL, [T0, '["a","b"]', '["c"]', 10]],
  ["the claim (one kind, as the dispatcher asks)", CLAIM_KIND_CANDIDATES_SQL, [T0, "a", 10]],
  ["the wake: outcomes, earliest lease, running count at once", WAKE_STATE_SQL, []],
  ["the claim itself (many jobs, one statement)", CLAIM_SQL, ['[[1,"t"],[2,"u"]]', T0 + 1, "lane", T0]],
  ["in-process completions (many, one statement)", COMPLETE_MANY_SQL, ['[["a","t","1"]]', "settled", T0, T0]],
  ["the wake: outcomes to deliver", COMPLETING_COUNT_SQL, []],
  ["the wake: earliest lease", EARLIEST_LEASE_SQL, []],
  ["the wake: running count", RUNNING_COUNT_SQL, []],
  ["the wake: a due in-process head", DUE_EXECUTOR_HEAD_SQL, [T0, "a"]],
  ["the wake: earliest future head", EARLIEST_FUTURE_HEAD_SQL, [T0]],
  ["lease recovery", EXPIRED_LEASES_SQL, [T0, 500]],
];

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

  it("would see a full scan (a control for the check above)", async () => {
    const { scans } = await fullScans(`SELECT seq FROM jobs WHERE kind = ?`, ["a"]);
    expect(scans).toEqual(["SCAN jobs"]);
  });
});
