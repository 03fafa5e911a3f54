import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SCHEDULE_HOT_STATEMENTS } from "../../../src/durable/schedules/schedule-statements.js";
import { T0, setup, value } from "../../helpers/lane.js";

/** The plan of `statement` in a lane with schedules of every sort. */
async function plan(statement: string, bindings: unknown[]): Promise<string[]> {
  const { stub } = await setup();
  for (let i = 0; i < 12; i++) {
    const body = i % 3 === 0 ? { cron: "*/5 * * * *" } : { everyMs: 60_000 * (i + 1), paused: i % 4 === 1 };
    value(await stub.putSchedule(`s${i}`, { ...body, job: { kind: "k" } }));
  }
  return runInDurableObject(stub, (_lane, state) =>
    state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...bindings).toArray().map((r) => r.detail),
  );
}

const fullScan = (detail: string) => /\bSCAN schedules\b/.test(detail) && !/USING (COVERING )?INDEX/.test(detail);

describe("schedule query plans", () => {
  it.each(SCHEDULE_HOT_STATEMENTS.map(([what, sql, bindings]) => [what, sql, bindings(T0)] as const))(
    "%s reads an index, never the whole schedules table",
    async (_what, statement, bindings) => {
      const steps = await plan(statement, [...bindings]);
      expect(steps.filter(fullScan), steps.join("\n")).toEqual([]);
      expect(steps.join("\n")).toMatch(/USING (COVERING )?INDEX schedules_next_run|USING PRIMARY KEY/);
    },
  );

  it("would see a full scan (a control for the check above)", async () => {
    expect((await plan(`SELECT name FROM schedules WHERE job = ?`, ["x"])).filter(fullScan)).toEqual(["SCAN schedules"]);
  });

  it("every index of schedules but its key is read by a statement of the code", async () => {
    const { stub } = await setup();
    const indexes = await runInDurableObject(stub, (_lane, state) =>
      state.storage.sql.exec<{ name: string; origin: string }>(`SELECT name, origin FROM pragma_index_list('schedules')`).toArray().filter((i) => i.origin !== "pk").map((i) => i.name),
    );
    expect(indexes).toEqual(["schedules_next_run"]);
    const plans = await Promise.all(SCHEDULE_HOT_STATEMENTS.map(([, sql, bindings]) => plan(sql, [...bindings(T0)])));
    for (const index of indexes) expect(plans.flat().join("\n")).toMatch(new RegExp(`USING (COVERING )?INDEX ${index}\\b`));
  });
});
