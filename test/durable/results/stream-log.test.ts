/**
 * A job's event log (docs/api.md "Results"): every durable transition from the enqueue on, retries
 * included; each progress report, the last 100 kept and seqs never reused; chunks through the fence
 * within the job's limits, all or none; and the log deleted with its job, whatever deletes it.
 */
import { describe, expect, it } from "vitest";
import { MAX_STREAM_BYTES_PER_JOB, MAX_STREAM_CHUNK_BYTES, RETENTION_SLACK_MS, DEFAULT_COMPLETED_RETENTION_MS } from "../../../src/shared/defaults.js";
import type { StreamPage } from "../../../src/shared/stream.js";
import { STREAM_HOT_STATEMENTS } from "../../../src/durable/results/stream-statements.js";
import { STREAM_PAGE_EVENTS } from "../../../src/durable/results/stream-log.js";
import { T0, claimOne, enqueue, fireAlarm, refusal, setup, sql, value, type LaneStub } from "../../helpers/lane.js";

/** Every event of a job after `after`, its data parsed, page after page. */
async function events(stub: LaneStub, id: string, after = 0) {
  const all: { seq: number; type: string; data: Record<string, unknown> }[] = [];
  for (let from = after; ; ) {
    const page: StreamPage = value(await stub.streamEvents(id, from));
    all.push(...page.events.map((e) => ({ seq: e.seq, type: e.type, data: JSON.parse(e.data) as Record<string, unknown> })));
    if (page.end !== null || page.events.length < STREAM_PAGE_EVENTS) return { events: all, end: page.end };
    from = page.events.at(-1)!.seq;
  }
}

const logRows = async (stub: LaneStub) => (await sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM job_events`))[0]!.n;
const streamRows = async (stub: LaneStub) => (await sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM job_streams`))[0]!.n;

describe("a job's event log", () => {
  it("records every transition from the enqueue (seq 1, from null), retries included, and ends once settled", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "j", maxAttempts: 2 });
    expect(await events(stub, "j")).toEqual({ events: [{ seq: 1, type: "transition", data: { from: null, to: "queued", outcome: null, attempt: 0, at: T0 } }], end: null });
    const first = await claimOne(stub);
    value(await stub.fail("j", { token: first.lease.token, error: "once" }));
    clock.advance(600_000); // past any backoff
    const second = await claimOne(stub);
    clock.advance(10);
    value(await stub.complete("j", { token: second.lease.token, result: 1 }));
    const log = await events(stub, "j");
    expect(log.events.map((e) => [e.seq, e.data.from, e.data.to, e.data.outcome, e.data.attempt])).toEqual([
      [1, null, "queued", null, 0],
      [2, "queued", "running", null, 1],
      [3, "running", "queued", null, 1],
      [4, "queued", "running", null, 2],
      [5, "running", "settled", "completed", 2],
    ]);
    expect(log.events.at(-1)!.data.at).toBe(T0 + 600_010);
    expect(log.end).toMatchObject({ id: "j", state: "settled", outcome: "completed", result: 1 });
    // Resumed after the last event: nothing more, and the end.
    expect(await events(stub, "j", 5)).toMatchObject({ events: [], end: { id: "j" } });
    expect((await events(stub, "j", 3)).events.map((e) => e.seq)).toEqual([4, 5]);
  });

  it("records blocked as the API shows it: enqueued blocked, then queued once its dependency completed", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "dep" });
    await enqueue(stub, { id: "child", dependsOn: [{ id: "dep" }] });
    value(await stub.complete("dep", { token: (await claimOne(stub)).lease.token }));
    await fireAlarm(stub); // the dependency's notice
    expect((await events(stub, "child")).events.map((e) => [e.data.from, e.data.to])).toEqual([[null, "blocked"], ["blocked", "queued"]]);
  });

  it("records each progress report, keeps the last 100 of them, and never reuses a seq", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "p" });
    const { lease } = await claimOne(stub);
    for (let i = 1; i <= 104; i++) value(await stub.progress("p", { token: lease.token, progress: { i } }));
    value(await stub.progress("p", { token: lease.token, progress: { i: 104 } })); // the same value again is a report too
    const renewed = value(await stub.renew("p", { token: lease.token, progress: { i: 106 } })).lease;
    const last = value(await stub.renew("p", { token: renewed.token })).lease; // no progress: no event
    value(await stub.complete("p", { token: last.token }));
    const log = (await events(stub, "p")).events;
    const progress = log.filter((e) => e.type === "progress");
    expect(progress).toHaveLength(100);
    // Seqs 3..108 were the 106 reports; the first six dropped out.
    expect(progress[0]).toEqual({ seq: 9, type: "progress", data: { progress: { i: 7 }, at: T0 } });
    expect(progress.at(-1)!.data.progress).toEqual({ i: 106 });
    expect(log.map((e) => e.seq)).toEqual([1, 2, ...Array.from({ length: 100 }, (_, i) => 9 + i), 109]);
    expect(log.at(-1)!.data).toMatchObject({ from: "running", to: "settled" });
  });

  it("writes chunks through the fence, all or none, answering the last seq; the token is kept", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "c" });
    const { lease } = await claimOne(stub);
    clock.advance(7);
    expect(value(await stub.writeStream("c", { token: lease.token, chunks: [{ t: "a" }, "b", null] }))).toEqual({ written: 3, lastEventId: 5 });
    expect((await events(stub, "c", 2)).events).toEqual([
      { seq: 3, type: "chunk", data: { data: { t: "a" }, attempt: 1, at: T0 + 7 } },
      { seq: 4, type: "chunk", data: { data: "b", attempt: 1, at: T0 + 7 } },
      { seq: 5, type: "chunk", data: { data: null, attempt: 1, at: T0 + 7 } },
    ]);
    value(await stub.complete("c", { token: lease.token }));
  });

  it("refuses a write past 1,000 chunks or 1 MiB with stream_limit, writing nothing of it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "n" });
    const { lease } = await claimOne(stub);
    for (let i = 0; i < 10; i++) value(await stub.writeStream("n", { token: lease.token, chunks: Array.from({ length: 100 }, (_, k) => i * 100 + k) }));
    refusal(await stub.writeStream("n", { token: lease.token, chunks: [1] }), "stream_limit");
    expect((await events(stub, "n")).events).toHaveLength(1002);

    await enqueue(stub, { id: "b" });
    const b = await claimOne(stub);
    const big = "x".repeat(MAX_STREAM_CHUNK_BYTES - 2); // its JSON is exactly 64 KiB
    for (let i = 0; i < MAX_STREAM_BYTES_PER_JOB / MAX_STREAM_CHUNK_BYTES; i++) value(await stub.writeStream("b", { token: b.lease.token, chunks: [big] }));
    const before = await logRows(stub);
    refusal(await stub.writeStream("b", { token: b.lease.token, chunks: [] as unknown[] }), "invalid_request");
    refusal(await stub.writeStream("b", { token: b.lease.token, chunks: [1] }), "stream_limit");
    expect(await logRows(stub)).toBe(before);
  });

  it("refuses a chunk over 64 KiB (payload_too_large) and a write of which one chunk breaks the limit, writing none of it", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "t" });
    const { lease } = await claimOne(stub);
    refusal(await stub.writeStream("t", { token: lease.token, chunks: [1, "x".repeat(MAX_STREAM_CHUNK_BYTES)] }), "payload_too_large");
    for (let i = 0; i < 9; i++) value(await stub.writeStream("t", { token: lease.token, chunks: Array.from({ length: 100 }, () => 0) }));
    refusal(await stub.writeStream("t", { token: lease.token, chunks: Array.from({ length: 101 }, () => 0) }), "invalid_request");
    value(await stub.writeStream("t", { token: lease.token, chunks: Array.from({ length: 99 }, () => 0) }));
    refusal(await stub.writeStream("t", { token: lease.token, chunks: [0, 0] }), "stream_limit");
    const chunks = (await events(stub, "t")).events.filter((e) => e.type === "chunk");
    expect(chunks).toHaveLength(999);
  });

  it("refuses writes the fence refuses: another token, a settled job, a cancel requested, an unknown job", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "f" });
    const { lease } = await claimOne(stub);
    refusal(await stub.writeStream("f", { token: "nope", chunks: [1] }), "lease_superseded");
    refusal(await stub.writeStream("nobody", { token: lease.token, chunks: [1] }), "job_not_found");
    refusal(await stub.streamEvents("nobody", 0), "job_not_found");
    value(await stub.cancel("f"));
    refusal(await stub.writeStream("f", { token: lease.token, chunks: [1] }), "job_cancelled");
    const log = (await events(stub, "f")).events;
    expect(log.some((e) => e.type === "chunk")).toBe(false);
    expect(log.at(-1)!.data).toMatchObject({ to: "settled", outcome: "cancelled" });
    await enqueue(stub, { id: "done" });
    const done = await claimOne(stub);
    value(await stub.complete("done", { token: done.lease.token }));
    refusal(await stub.writeStream("done", { token: done.lease.token, chunks: [1] }), "job_settled");
  });

  it("deletes a job's log with the job: by a sweep, by retention, by a queue's purge", async () => {
    const { stub, clock } = await setup();
    await enqueue(stub, { id: "swept" });
    const { lease } = await claimOne(stub);
    value(await stub.writeStream("swept", { token: lease.token, chunks: [1, 2] }));
    value(await stub.progress("swept", { token: lease.token, progress: 1 }));
    value(await stub.complete("swept", { token: lease.token }));
    await enqueue(stub, { id: "purged", queue: "q", maxAttempts: 2 });
    const purged = await claimOne(stub);
    value(await stub.fail("purged", { token: purged.lease.token, error: "again" })); // queued again, to be purged
    expect(await logRows(stub)).toBe(2 + 2 + 1 + 2); // claim, chunks, progress, completion; claim and retry
    expect(await streamRows(stub)).toBe(1);
    clock.advance(1);
    expect(value(await stub.sweep({ settledBefore: clock.now() })).removed).toBe(1);
    expect(await logRows(stub)).toBe(2); // the purged job's
    expect(await streamRows(stub)).toBe(0);
    refusal(await stub.streamEvents("swept", 0), "job_not_found");

    value(await stub.purgeQueue("q"));
    expect(await logRows(stub)).toBe(0);

    await enqueue(stub, { id: "retained" });
    value(await stub.complete("retained", { token: (await claimOne(stub)).lease.token }));
    expect(await logRows(stub)).toBe(2);
    clock.advance(DEFAULT_COMPLETED_RETENTION_MS + RETENTION_SLACK_MS);
    await fireAlarm(stub);
    expect(await logRows(stub)).toBe(0);
  });

  it("reads and writes a stream through its indexes", async () => {
    const { stub } = await setup();
    for (const [what, query, bindings] of STREAM_HOT_STATEMENTS) {
      const plan = (await sql<{ detail: string }>(stub, `EXPLAIN QUERY PLAN ${query}`, ...bindings(T0))).map((r) => r.detail).join("\n");
      expect(plan, what).not.toMatch(/SCAN (jobs|job_events|job_streams)\b(?! USING)/);
    }
  });
});
