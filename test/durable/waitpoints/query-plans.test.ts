/** The waitpoints' statements that the alarm and the wake run read an index, and every index of the table is read by one. */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { WAITPOINT_HOT_STATEMENTS } from "../../../src/durable/waitpoints/waitpoint-statements.js";
import { T0, setup, value } from "../../helpers/lane.js";

/** The plan of `statement` in a lane with waitpoints of every state. */
async function plan(statement: string, bindings: unknown[]): Promise<string[]> {
  const { stub } = await setup();
  for (let i = 0; i < 12; i++) {
    value(await stub.createWaitpoint(i % 3 === 0 ? { id: `w${i}` } : { id: `w${i}`, timeoutMs: 1000 * (i + 1) }));
    if (i % 4 === 1) value(await stub.completeWaitpoint(`w${i}`, { result: i }));
  }
  return runInDurableObject(stub, (_lane, state) =>
    state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...bindings).toArray().map((r) => r.detail),
  );
}

const fullScan = (detail: string) => /\bSCAN waitpoints\b/.test(detail) && !/USING (COVERING )?INDEX|USING PRIMARY KEY/.test(detail);

describe("waitpoint query plans", () => {
  it.each(WAITPOINT_HOT_STATEMENTS.map(([what, sql, bindings]) => [what, sql, bindings(T0)] as const))(
    "%s reads an index, never the whole waitpoints table",
    async (_what, statement, bindings) => {
      const steps = await plan(statement, [...bindings]);
      expect(steps.filter(fullScan), steps.join("\n")).toEqual([]);
      expect(steps.join("\n")).toMatch(/USING (COVERING )?INDEX waitpoints_|USING PRIMARY KEY/);
    },
  );

  it("would see a full scan (a control for the check above)", async () => {
    expect((await plan(`SELECT id FROM waitpoints WHERE result = ?`, ["1"])).filter(fullScan)).toEqual(["SCAN waitpoints"]);
  });

  it("every index of waitpoints but its key is read by a statement of the code", async () => {
    const { stub } = await setup();
    const indexes = await runInDurableObject(stub, (_lane, state) =>
      state.storage.sql.exec<{ name: string; origin: string }>(`SELECT name, origin FROM pragma_index_list('waitpoints')`).toArray().filter((i) => i.origin !== "pk").map((i) => i.name).sort(),
    );
    expect(indexes).toEqual(["waitpoints_settled", "waitpoints_timeout"]);
    const plans = await Promise.all(WAITPOINT_HOT_STATEMENTS.map(([, sql, bindings]) => plan(sql, [...bindings(T0)])));
    for (const index of indexes) expect(plans.flat().join("\n")).toMatch(new RegExp(`USING (COVERING )?INDEX ${index}\\b`));
  });
});
