/**
 * Whole job rows are read as arrays of values and named by position (job-row.ts `jobRows`): the
 * names must be the columns' own, for rows with every column set and for rows with most of them null.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { firstJobRow, JOB_COLUMNS, jobRows, oneJobRow, seqSubjectRows, SUBJECT_COLUMNS } from "../../../src/durable/store/job-row.js";
import { claimOne, enqueue, setup, value } from "../../helpers/lane.js";

describe("job rows read by position", () => {
  it("name every column as the row's own object does", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "plain", kind: "k" });
    await enqueue(stub, { id: "full", kind: "k", payload: { a: [1, "b"] }, queue: "q", priority: 3, maxAttempts: 5, backoff: { baseMs: 7, maxMs: 70 }, timeoutMs: 900, recovery: { maxRecoveries: 2, windowMs: 5000 } });
    const claimed = await claimOne(stub, { kinds: ["k"] });
    const { lease } = value(await stub.renew(claimed.id, { token: claimed.lease.token, progress: { p: 1 } }));
    clock.advance(10);
    value(await stub.fail(claimed.id, { token: lease.token, error: "boom" }));
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const query = `SELECT ${JOB_COLUMNS} FROM jobs ORDER BY seq`;
      const named = sql.exec(query).toArray();
      expect(named).toHaveLength(2);
      expect(jobRows(sql.exec(query))).toEqual(named);
      // Every column has a name in the row, and no name is left over.
      expect(Object.keys(jobRows(sql.exec(query))[0]!)).toEqual(sql.exec(query).columnNames);
      expect(firstJobRow(sql.exec(query))).toEqual(named[0]);
      expect(firstJobRow(sql.exec(`${query} LIMIT 0`))).toBeUndefined();
      expect(oneJobRow(sql.exec(`${query} LIMIT 1`))).toEqual(named[0]);
      expect(() => oneJobRow(sql.exec(query))).toThrow(/expected one job row, got 2/);
      const subjects = `SELECT seq, ${SUBJECT_COLUMNS} FROM jobs ORDER BY seq`;
      expect(seqSubjectRows(sql.exec(subjects))).toEqual(sql.exec(subjects).toArray());
      // The failed job has non-null values in the columns a plain one leaves null.
      expect(claimed.id).toBe("full");
      const failed = named.find((r) => r.id === "full")!;
      expect([failed.error, failed.progress, failed.attempt_end, failed.queue]).not.toContain(null);
    });
  });
});
