/**
 * The dependencies property test: random dependency graphs (DAGs by construction: a job depends only
 * on jobs enqueued before it) over three lanes, each job's planned outcome and policy random, with
 * alarms, restarts of random lanes and time steps interleaved. Once everything is quiet: a job ran
 * only after all its dependencies had completed (policy fail) or settled (ignore); it was settled
 * failed without running exactly when policy fail met a dependency that did not complete; every job
 * settled, and none ran twice. Deterministic: a fixed seed.
 */
import fc from "fast-check";
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { OUTBOX_IN_FLIGHT_MS } from "../../../src/shared/defaults.js";
import type { Job } from "../../../src/shared/job.js";
import { startClocks } from "../../helpers/test-worker.js";
import { T0, TestEntropy, fireAlarm, inject, sql, value, type LaneStub } from "../../helpers/lane.js";

const SEED = 20_261_204;
const LANES = 3;

type Node = { lane: number; deps: number[]; policy: "fail" | "ignore"; succeeds: boolean };
type Step = { t: "enqueue" } | { t: "work"; pick: number } | { t: "alarm"; lane: number } | { t: "restart"; lane: number } | { t: "tick"; ms: number };

const graph: fc.Arbitrary<Node[]> = fc.integer({ min: 3, max: 10 }).chain((n) =>
  fc.tuple(
    ...Array.from({ length: n }, (_, i) =>
      fc.record({
        lane: fc.nat(LANES - 1),
        deps: i === 0 ? fc.constant<number[]>([]) : fc.uniqueArray(fc.nat(i - 1), { maxLength: Math.min(i, 4) }),
        policy: fc.constantFrom("fail" as const, "ignore" as const),
        succeeds: fc.boolean(),
      }),
    ),
  ),
);

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ t: "enqueue" as const }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("work" as const), pick: fc.nat(20) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("alarm" as const), lane: fc.nat(LANES - 1) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("restart" as const), lane: fc.nat(LANES - 1) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 5_000 }) }) },
);

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it(`a job runs only after its dependencies settle as its policy asks, and fails without running exactly when it must (fast-check seed ${SEED})`, async () => {
  await fc.assert(
    fc.asyncProperty(graph, fc.array(step, { minLength: 10, maxLength: 40 }), async (nodes, steps) => {
      const clock = new ManualClock(T0);
      const names = Array.from({ length: LANES }, (_, i) => `dag-${i}-${crypto.randomUUID()}`);
      const stubs: LaneStub[] = names.map((name) => env.LANE.getByName(name));
      for (const stub of stubs) await inject(stub, clock, new TestEntropy());
      const id = (i: number) => `n${i}`;
      const kind = (i: number) => `k-n${i}`;
      const lane = (i: number) => stubs[nodes[i]!.lane]!;
      let enqueued = 0;
      /** For each job that ran: the states of its dependencies when it was claimed. */
      const sawAtClaim = new Map<number, Job[]>();

      const enqueueNext = async () => {
        if (enqueued >= nodes.length) return;
        const i = enqueued++;
        const node = nodes[i]!;
        const dependsOn = node.deps.map((d) => ({ lane: names[nodes[d]!.lane]!, id: id(d) }));
        value(await lane(i).enqueue({ id: id(i), kind: kind(i), maxAttempts: 1, ...(dependsOn.length > 0 ? { dependsOn, dependencyFailure: node.policy } : {}) }));
      };
      const work = async (pick: number) => {
        const claimable: number[] = [];
        for (let i = 0; i < enqueued; i++) if (value(await lane(i).getJob(id(i))).state === "queued") claimable.push(i);
        if (claimable.length === 0) return;
        const i = claimable[pick % claimable.length]!;
        const jobs = value(await lane(i).claim({ kinds: [kind(i)] })).jobs;
        expect(jobs.length, `${id(i)} queued but not claimable`).toBe(1);
        const deps = [];
        for (const d of nodes[i]!.deps) deps.push(value(await lane(d).getJob(id(d))));
        expect(sawAtClaim.has(i), `${id(i)} ran twice`).toBe(false);
        sawAtClaim.set(i, deps);
        const token = jobs[0]!.lease.token;
        if (nodes[i]!.succeeds) value(await lane(i).complete(id(i), { token, result: i }));
        else value(await lane(i).fail(id(i), { token, error: "planned", retry: false }));
      };
      const restart = async (l: number) => {
        startClocks.set(names[l]!, clock);
        await expect(runInDurableObject(stubs[l]!, (_lane, state) => state.abort("restart"))).rejects.toThrow();
        stubs[l] = env.LANE.getByName(names[l]!);
        await inject(stubs[l]!, clock, new TestEntropy());
      };

      for (const s of steps) {
        if (s.t === "enqueue") await enqueueNext();
        else if (s.t === "work") await work(s.pick);
        else if (s.t === "alarm") await fireAlarm(stubs[s.lane]!);
        else if (s.t === "restart") await restart(s.lane);
        else clock.advance(s.ms);
      }
      // Quiet down: enqueue the rest, then work, deliver and wait until every job has settled.
      while (enqueued < nodes.length) await enqueueNext();
      for (let round = 0; round < 200; round++) {
        let open = 0;
        for (let i = 0; i < nodes.length; i++) if (value(await lane(i).getJob(id(i))).state !== "settled") open++;
        if (open === 0) break;
        await work(round);
        // Notices taken in hand by an instance that then restarted come due again after a while.
        clock.advance(OUTBOX_IN_FLIGHT_MS);
        for (const stub of stubs) await fireAlarm(stub);
        await settle(2);
      }

      for (let i = 0; i < nodes.length; i++) {
        const node = nodes[i]!;
        const job = value(await lane(i).getJob(id(i)));
        expect(job.state, `${id(i)} never settled`).toBe("settled");
        const finals: Job[] = [];
        for (const d of node.deps) finals.push(value(await lane(d).getJob(id(d))));
        const failedBy = node.policy === "fail" && finals.some((f) => f.outcome !== "completed");
        if (failedBy) {
          expect(job, `${id(i)} must fail by its dependency`).toMatchObject({ outcome: "failed", attempts: 0 });
          expect(job.error).toMatch(/^dependency /);
          expect(sawAtClaim.has(i), `${id(i)} ran although a dependency failed`).toBe(false);
        } else {
          expect(sawAtClaim.has(i), `${id(i)} never ran`).toBe(true);
          for (const seen of sawAtClaim.get(i)!) {
            expect(seen.state, `${id(i)} ran before ${seen.id} settled`).toBe("settled");
            if (node.policy === "fail") expect(seen.outcome).toBe("completed");
          }
          expect(job.outcome).toBe(node.succeeds ? "completed" : "failed");
        }
        expect(job.generation).toBeLessThanOrEqual(1);
      }
      // Notices to jobs that settled meanwhile (a dependent failed by another dependency) are still
      // owed: the wake holds their alarm, and the next alarms tell (and drop) them.
      const owed = async () => {
        let n = 0;
        for (const stub of stubs) n += (await sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM outbox`))[0]!.n;
        return n;
      };
      for (let round = 0; round < 10 && (await owed()) > 0; round++) {
        for (const stub of stubs) {
          const at = await stub.storedAlarm();
          const next = (await sql<{ at: number | null }>(stub, `SELECT MIN(next_at) AS at FROM outbox`))[0]!.at;
          if (next !== null) expect(at, "notices owed with no alarm to deliver them").not.toBeNull();
          if (next !== null) expect(at!).toBeLessThanOrEqual(Math.max(next, clock.now()));
          await fireAlarm(stub);
        }
        await settle(2);
      }
      expect(await owed()).toBe(0);
    }),
    { seed: SEED, numRuns: 15 },
  );
}, 120_000);
