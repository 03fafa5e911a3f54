/**
 * Group commit: concurrent single enqueues to one lane travel as one call and one commit, and each
 * caller gets exactly what its own call would have answered (a refusal, a conflict or a duplicate is
 * its own). A lone enqueue goes alone. The front worker's group commit, across requests, is tested
 * against `wrangler dev` (test/node/group-commit-http.test.ts).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../src/client/group-commit.js";
import { createLaneClient, groupCommitCounters } from "../../src/client/rpc.js";
import type { EnqueueAnswer } from "../../src/shared/answers.js";
import { QueueError } from "../../src/shared/errors.js";
import { PULL_KIND, setup } from "../helpers/http.js";
import { rows, sql, value } from "../helpers/lane.js";

/** The requests of a mixed burst: new jobs, a duplicate, a conflict and a bad one among them. */
function burst(n: number): Record<string, unknown>[] {
  const requests: Record<string, unknown>[] = Array.from({ length: n }, (_, i) => ({ id: `j${i}`, kind: PULL_KIND, payload: { i } }));
  requests.push({ id: "j0", kind: PULL_KIND, payload: { i: 0 } }); // the same spec again: duplicate
  requests.push({ id: "j1", kind: PULL_KIND, payload: { other: true } }); // another spec: conflict
  requests.push({ id: "bad", kind: "not a kind" }); // refused on its own
  requests.push({ kind: PULL_KIND, payload: "no id" }); // a generated id
  return requests;
}

type Outcome = { ok: true; answer: EnqueueAnswer } | { ok: false; code: string };

async function outcomes(calls: Promise<EnqueueAnswer>[]): Promise<Outcome[]> {
  return Promise.all(calls.map((p) => p.then((answer): Outcome => ({ ok: true, answer }), (e: unknown): Outcome => ({ ok: false, code: e instanceof QueueError ? e.code : String(e) }))));
}

/** An outcome without what differs by lane (its name) or by generated id. */
const comparable = (o: Outcome) => (o.ok ? { ok: true, status: o.answer.status, job: { ...o.answer.job, lane: "", id: o.answer.job.id.startsWith("j") ? o.answer.job.id : "generated" } } : o);

describe("group commit from the RPC client", () => {
  it("answers every caller of a concurrent burst as its own call would, in fewer calls than callers", async () => {
    const [grouped, alone] = [await setup(), await setup()];
    const before = groupCommitCounters(env.LANE);
    const together = await outcomes(burst(40).map((r) => createLaneClient(env.LANE).lane(grouped.lane).enqueue(r as never)));
    const after = groupCommitCounters(env.LANE);
    const one = createLaneClient(env.LANE, { groupCommit: false }).lane(alone.lane);
    const separately: Outcome[] = [];
    for (const r of burst(40)) separately.push(...(await outcomes([one.enqueue(r as never)])));
    expect(together.map(comparable)).toEqual(separately.map(comparable));
    expect(together.filter((o) => !o.ok).map((o) => (o.ok ? "" : o.code))).toEqual(["job_conflict", "invalid_request"]);
    expect(together.filter((o) => o.ok && o.answer.status === "duplicate")).toHaveLength(1);
    // 44 callers: the first call alone or with the callers of its turn, the rest together.
    expect(after.items - before.items).toBe(44);
    expect(after.calls - before.calls).toBeLessThanOrEqual(3);
    expect((await rows(grouped.stub)).length).toBe(41);
  });

  it("sends a lone enqueue alone, and a burst after it in one call", async () => {
    const g = new GroupCommit<string, string>({ maxItems: 1000, maxBytes: 1 << 20 });
    const sent: string[][] = [];
    const send = async (items: string[]) => {
      sent.push(items);
      await new Promise((r) => setTimeout(r, 5));
      return items.map((i) => i.toUpperCase());
    };
    expect(await g.call("lane", "a", 1, send)).toBe("A");
    const answers = await Promise.all(["b", "c", "d", "e"].map((x) => g.call("lane", x, 1, send)));
    expect(answers).toEqual(["B", "C", "D", "E"]);
    expect(sent).toEqual([["a"], ["b", "c", "d", "e"]]);
    // While a group is in flight, the callers that come meanwhile go together next.
    const first = g.call("lane", "f", 1, send);
    await new Promise((r) => setTimeout(r, 1));
    const rest = ["g", "h"].map((x) => g.call("lane", x, 1, send));
    expect(await Promise.all([first, ...rest])).toEqual(["F", "G", "H"]);
    expect(sent.slice(2)).toEqual([["f"], ["g", "h"]]);
  });

  it("keeps to its limits, and a failed call fails only its own group's callers", async () => {
    const g = new GroupCommit<number, number>({ maxItems: 3, maxBytes: 10 });
    const sizes: number[] = [];
    let fail = true;
    const send = async (items: number[]) => {
      sizes.push(items.length);
      if (fail) {
        fail = false;
        throw new Error("the lane could not be reached");
      }
      return items.map((i) => i * 2);
    };
    const results = await Promise.allSettled([1, 2, 3, 4, 5, 6, 7].map((n) => g.call("l", n, 4, send)));
    expect(sizes).toEqual([2, 2, 2, 1]); // 4 bytes each: two per call (10 bytes), three at most
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : "failed"))).toEqual(["failed", "failed", 6, 8, 10, 12, 14]);
  });
});

describe("the lane's group call", () => {
  it("refuses every caller of a group alike when the lane refuses the whole call", async () => {
    const lane = await setup();
    const stub = env.LANE.getByName(lane.lane);
    const whole = await stub.enqueueGroup("not a list");
    expect(whole.ok).toBe(false);
    const answered = await stub.enqueueGroup([JSON.stringify({ id: "a", kind: PULL_KIND }), "not json", JSON.stringify({ id: "a", kind: PULL_KIND })]);
    expect(answered.ok).toBe(true);
    const parsed = (answered.ok ? answered.value : []).map((t) => JSON.parse(t));
    expect(parsed.map((p) => (p.ok ? p.value.status : p.error.code))).toEqual(["queued", "invalid_request", "duplicate"]);
  });
});

describe("a group with jobs that wait for jobs", () => {
  it("answers each caller on its own when one job's registration with another lane throws or is refused", async () => {
    const [dependent, dependency] = [await setup(), await setup()];
    value(await dependency.stub.enqueue({ id: "x", kind: PULL_KIND }));
    // The dependency's lane fails to store registrations (a storage failure, in real SQLite): the call
    // that registers with it throws.
    await sql(dependency.stub, `CREATE TRIGGER registrations_fail BEFORE INSERT ON dependents BEGIN SELECT RAISE(ABORT, 'registrations are failing'); END`);
    const requests = [
      { id: "a", kind: PULL_KIND },
      { kind: PULL_KIND, payload: "no id" },
      { id: "throws", kind: PULL_KIND, dependsOn: [{ lane: dependency.lane, id: "x" }] },
      { id: "refused", kind: PULL_KIND, dependsOn: [{ lane: dependency.lane, id: "missing" }] },
      { id: "b", kind: PULL_KIND },
    ];
    const client = createLaneClient(env.LANE).lane(dependent.lane);
    value(await dependent.stub.enqueue({ id: "first", kind: PULL_KIND }));
    const before = groupCommitCounters(env.LANE);
    const answers = await outcomes(requests.map((r) => client.enqueue(r as never)));
    const after = groupCommitCounters(env.LANE);
    expect(after.calls - before.calls).toBeLessThan(requests.length); // they went in groups
    // The jobs written are answered as written; the two that were not, each with its own refusal.
    expect(answers.map((o) => (o.ok ? o.answer.status : o.code))).toEqual(["queued", "queued", "lane_unavailable", "dependency_not_found", "queued"]);
    const written = (await rows(dependent.stub)).map((r) => r.id);
    expect(written).toHaveLength(4);
    expect(written).toEqual(expect.arrayContaining(["a", "b"]));
    expect(written).not.toContain("throws");
    expect(written).not.toContain("refused");
    // Nothing was left registered for the job that was not written.
    expect(await sql(dependency.stub, `SELECT id FROM dependents`)).toEqual([]);
  });

  it("answers each caller on its own when one job's write throws after the group's commit", async () => {
    const lane = await setup();
    value(await lane.stub.enqueue({ id: "x", kind: PULL_KIND }));
    // The job that waits for x is written on its own, after the group: its registration, written
    // with it, fails (a storage failure, in real SQLite), and its write throws.
    await sql(lane.stub, `CREATE TRIGGER registrations_fail BEFORE INSERT ON dependents BEGIN SELECT RAISE(ABORT, 'registrations are failing'); END`);
    const requests = [{ id: "a", kind: PULL_KIND }, { kind: PULL_KIND, payload: "no id" }, { id: "throws", kind: PULL_KIND, dependsOn: [{ id: "x" }] }, { id: "b", kind: PULL_KIND }];
    const client = createLaneClient(env.LANE).lane(lane.lane);
    value(await lane.stub.enqueue({ id: "first", kind: PULL_KIND }));
    const answers = await outcomes(requests.map((r) => client.enqueue(r as never)));
    expect(answers.map((o) => (o.ok ? o.answer.status : o.code))).toEqual(["queued", "queued", "internal", "queued"]);
    const written = (await rows(lane.stub)).map((r) => r.id);
    expect(written).toHaveLength(5); // x, first, a, b and the generated one
    expect(written).not.toContain("throws");
  });
});
