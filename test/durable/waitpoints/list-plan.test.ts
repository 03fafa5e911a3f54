/** The listing's statements walk the waitpoints' key between their bounds, and read no other index and no whole table. */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LIST_WAITPOINTS_AFTER_SQL, LIST_WAITPOINTS_FROM_SQL } from "../../../src/durable/waitpoints/list-statements.js";
import { setup, value } from "../../helpers/lane.js";

describe("the waitpoint listing's plan", () => {
  it.each([
    ["every state, from the first", LIST_WAITPOINTS_FROM_SQL, ["", "~", null, 101]],
    ["one state, after a cursor", LIST_WAITPOINTS_AFTER_SQL, ["w3", "~", "pending", 101]],
    ["one job's waits (a prefix)", LIST_WAITPOINTS_FROM_SQL, ["job-1.", "job-1.~", null, 51]],
  ] as const)("%s: a search of the primary key between its bounds", async (_what, statement, bindings) => {
    const { stub } = await setup();
    for (let i = 0; i < 12; i++) value(await stub.createWaitpoint({ id: `w${i}`, ...(i % 2 ? { timeoutMs: 1000 } : {}) }));
    const steps = await runInDurableObject(stub, (_lane, state) =>
      state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...bindings).toArray().map((r) => r.detail),
    );
    expect(steps, steps.join("\n")).toHaveLength(1);
    // (SQLite's plan writes a lower bound, >= or >, as ">".)
    expect(steps[0]).toBe("SEARCH waitpoints USING PRIMARY KEY (id>? AND id<?)");
  });
});
