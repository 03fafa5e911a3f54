/** The statements of waits on waitpoints of other objects read a key or an index, never a whole table (of registrations, notices or a job's waits). */
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { REMOTE_WAIT_HOT_STATEMENTS } from "../../../src/durable/waits/remote-wait-statements.js";
import { T0, setup } from "../../helpers/lane.js";

const TABLES = ["waitpoint_waiters", "waitpoint_outbox", "waitpoint_withdrawals", "job_waits", "waitpoints", "jobs"];
const fullScans = (steps: string[]) => steps.filter((s) => TABLES.some((t) => new RegExp(`\\bSCAN ${t}\\b`).test(s)) && !/USING (COVERING )?INDEX|USING PRIMARY KEY|USING INTEGER PRIMARY KEY/.test(s));

async function plan(statement: string, bindings: unknown[]): Promise<string[]> {
  const { stub } = await setup();
  return runInDurableObject(stub, (_lane, state) => state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...bindings).toArray().map((r) => r.detail));
}

it.each(REMOTE_WAIT_HOT_STATEMENTS.map(([what, sql, bindings]) => [what, sql, bindings(T0)] as const))("%s reads a key or an index", async (_what, statement, bindings) => {
  const steps = await plan(statement, [...bindings]);
  expect(fullScans(steps), steps.join("\n")).toEqual([]);
});

it("would see a full scan (a control for the check above)", async () => {
  expect(fullScans(await plan(`SELECT id FROM waitpoint_waiters WHERE created_at = ?`, [T0]))).toHaveLength(1);
});
