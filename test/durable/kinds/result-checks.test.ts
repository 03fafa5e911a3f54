/**
 * A declared kind's result schema: an in-process executor's result that breaks it fails the attempt
 * (its error naming the issue); a pull consumer's `complete` (single or an ack) that breaks it is
 * refused `invalid_payload` and keeps its lease.
 */
import { describe, expect, it } from "vitest";
import { setup as dispatchSetup } from "../../helpers/dispatch.js";
import { claimOne, refusal, setup, value } from "../../helpers/lane.js";

describe("result checks", () => {
  it("refuses a pull consumer's complete whose result breaks the schema, keeping its lease", async () => {
    const { stub } = await setup();
    value(await stub.enqueue({ id: "p1", kind: "typed.pull", payload: { to: "a@b.co" } }));
    const job = await claimOne(stub);
    const error = refusal(await stub.complete("p1", { token: job.lease.token, result: { sent: "yes" } }), "invalid_payload");
    expect(error.details).toEqual([{ path: ["result", "sent"], message: expect.any(String) }]);
    refusal(await stub.complete("p1", { token: job.lease.token }), "invalid_payload"); // no result: null
    expect(value(await stub.getJob("p1"))).toMatchObject({ state: "running", lease: { generation: 1 } });
    const done = value(await stub.complete("p1", { token: job.lease.token, result: { sent: true } })).job;
    expect(done).toMatchObject({ state: "settled", outcome: "completed", result: { sent: true } });
  });

  it("lets an undeclared kind complete with any result, and a declared kind without a result schema", async () => {
    const { stub } = await setup();
    value(await stub.enqueue({ id: "u1", kind: "email.send" }));
    value(await stub.enqueue({ id: "u2", kind: "typed.sleep", payload: { ms: 1 }, priority: -1 }));
    for (const id of ["u1", "u2"]) {
      const job = await claimOne(stub);
      expect(job.id).toBe(id);
      expect(value(await stub.complete(id, { token: job.lease.token, result: [1, "x"] })).job.result).toEqual([1, "x"]);
    }
  });

  it("refuses an ack's completion alone, its item's error invalid_payload, the others applied", async () => {
    const { stub } = await setup();
    value(await stub.enqueue({ id: "a1", kind: "typed.pull", payload: { to: "a@b.co" } }));
    value(await stub.enqueue({ id: "a2", kind: "typed.pull", payload: { to: "d@e.fr" } }));
    value(await stub.enqueue({ id: "a3", kind: "email.send" }));
    const jobs = value(await stub.claim({ max: 3 })).jobs;
    const token = (id: string) => jobs.find((j) => j.id === id)!.lease.token;
    const answer = value(await stub.acks({ acks: [
      { op: "complete", id: "a1", token: token("a1"), result: { sent: 1 } },
      { op: "complete", id: "a2", token: token("a2"), result: { sent: false } },
      { op: "complete", id: "a3", token: token("a3"), result: "anything" },
    ] }));
    expect(answer.results).toEqual([
      { id: "a1", ok: false, error: { code: "invalid_payload", message: expect.stringContaining("sent") } },
      { id: "a2", ok: true },
      { id: "a3", ok: true },
    ]);
    expect(value(await stub.getJob("a1")).state).toBe("running");
    expect(value(await stub.getJob("a2")).outcome).toBe("completed");
    value(await stub.complete("a1", { token: token("a1"), result: { sent: true } }));
  });

  it("fails an in-process attempt whose result breaks the schema, naming the issue", async () => {
    const { enqueue, settled } = await dispatchSetup();
    const bad = await enqueue({ kind: "typed.result", payload: { result: { sent: "no" } }, maxAttempts: 1 });
    const good = await enqueue({ kind: "typed.result", payload: { result: { sent: true } } });
    expect(await settled(good.id)).toMatchObject({ outcome: "completed", result: { sent: true } });
    const failed = await settled(bad.id);
    expect(failed).toMatchObject({ outcome: "failed", result: null });
    expect(failed.error).toMatch(/typed\.result/);
    expect(failed.error).toMatch(/sent/);
  });
});
