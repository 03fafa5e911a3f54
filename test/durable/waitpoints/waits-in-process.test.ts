/**
 * Durable waits in process (`ctx.waitFor`, `ctx.waitpointId`), on a manual clock: the first time, the
 * attempt ends in a wait on `<job id>.<name>` (created pending, the attempt given back); the attempt
 * that resumes passes through with the waitpoint's outcome; a timeout is an answer, never a failure.
 */
import { describe, expect, it } from "vitest";
import { setup as inProcess, START } from "../../helpers/dispatch.js";
import { gate } from "../../helpers/executors.js";
import { fireAlarm, value } from "../../helpers/lane.js";

describe("ctx.waitFor", () => {
  it("demo.approval waits on <job id>.approval without spending an attempt, then completes with its result", async () => {
    const { lane, name, enqueue, get, waitFor, settled } = await inProcess();
    const job = await enqueue({ id: "order-7", kind: "demo.approval", payload: { timeoutMs: 60_000 }, maxAttempts: 1 });
    await waitFor(job.id, (e) => e.from === "running" && e.to === "blocked");
    expect(await get(job.id)).toMatchObject({ state: "blocked", attempts: 0, dependsOn: [] });
    expect(value(await lane.getWaitpoint("order-7.approval"))).toMatchObject({ lane: name, state: "pending", timeoutAt: START + 60_000, waiters: 1 });
    expect(value(await lane.info()).counts).toMatchObject({ running: 0, blocked: 1 });
    value(await lane.completeWaitpoint("order-7.approval", { result: { by: "ana" } }));
    const done = await settled(job.id);
    expect(done).toMatchObject({ outcome: "completed", result: { approved: { by: "ana" } }, attempts: 1, generation: 2 });
  });

  it("answers a timeout as {timedOut: true}, not a failure", async () => {
    const { lane, clock, enqueue, waitFor, settled } = await inProcess();
    const job = await enqueue({ id: "late", kind: "demo.approval", payload: { timeoutMs: 1_000 }, maxAttempts: 1 });
    await waitFor(job.id, (e) => e.from === "running" && e.to === "blocked");
    clock.advance(1_000);
    await fireAlarm(lane);
    expect(await settled(job.id)).toMatchObject({ outcome: "completed", result: { timedOut: true }, error: null });
  });

  it("passes at once through a waitpoint completed before anyone waited (one more attempt, given back)", async () => {
    const { lane, enqueue, settled } = await inProcess();
    value(await lane.completeWaitpoint("early.approval", { result: "yes" }));
    const job = await enqueue({ id: "early", kind: "demo.approval", maxAttempts: 1 });
    expect(await settled(job.id)).toMatchObject({ outcome: "completed", result: { approved: "yes" }, attempts: 1 });
  });

  it("gives the waitpoint id before waiting, and refuses a name that makes no waitpoint id", async () => {
    const { enqueue, inside } = await inProcess();
    const g = gate();
    await enqueue({ id: "ids", kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    expect(await inside(() => attempt.ctx.waitpointId("paid"))).toBe("ids.paid");
    expect(await inside(() => { try { attempt.ctx.waitpointId("no spaces"); return "none"; } catch (e) { return (e as { code?: string }).code; } })).toBe("invalid_request");
    const refused = await inside(() => attempt.ctx.waitFor("x".repeat(200)).then(() => "passed", (e: { code?: string }) => e.code));
    expect(refused).toBe("invalid_request");
    const badTimeout = await inside(() => attempt.ctx.waitFor("ok", { timeoutMs: 0 }).then(() => "passed", (e: { code?: string }) => e.code));
    expect(badTimeout).toBe("invalid_request");
    await inside(() => attempt.open("done"));
  });

  it("refuses a wait name holding a '.': job a's wait b.c and job a.b's wait c would share a.b.c", async () => {
    const { enqueue, inside } = await inProcess();
    const g = gate();
    await enqueue({ id: "a", kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const code = (f: () => unknown) => inside(() => { try { f(); return "none"; } catch (e) { return (e as { code?: string }).code; } });
    for (const name of ["b.c", ".c", "c.", "."]) {
      expect(await code(() => attempt.ctx.waitpointId(name))).toBe("invalid_request");
      expect(await inside(() => attempt.ctx.waitFor(name).then(() => "passed", (e: { code?: string }) => e.code))).toBe("invalid_request");
    }
    expect(await inside(() => attempt.ctx.waitpointId("b-c:1"))).toBe("a.b-c:1");
    await inside(() => attempt.open("done"));
  });

  it("a test executor's wait that is caught still ends the attempt in the wait", async () => {
    const { lane, enqueue, get, waitFor, inside } = await inProcess();
    const g = gate();
    const job = await enqueue({ id: "caught", kind: "test.gate", payload: { gate: g.key } });
    const attempt = await inside(() => g.started());
    const waited = await inside(() => attempt.ctx.waitFor("signal").then(() => "passed", (e: Error) => e.name));
    expect(waited).toBe("JobWaiting");
    await inside(() => attempt.open("answered anyway"));
    await waitFor(job.id, (e) => e.from === "running" && e.to === "blocked");
    expect(await get(job.id)).toMatchObject({ state: "blocked", result: null, attempts: 0 });
    expect(value(await lane.getWaitpoint("caught.signal")).state).toBe("pending");
  });
});
