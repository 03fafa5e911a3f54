/**
 * The waiters' property test: random interleavings, over two lanes on one manual clock, of creating a
 * few waitpoints (with and without a timeout), completing them (before or after anyone waits, more
 * than once), letting time pass and alarms run (their timeouts), enqueueing jobs that wait on them
 * through `dependsOn` (in their own lane or the other, policy fail or ignore), and waiting on them
 * from a claimed attempt (the fenced wait route), with restarts of a lane in between. Every answer
 * about a waitpoint must agree with its first settlement once there is one (an accepted completion
 * is the first, a refusal shows the first, a waitpoint never settles twice nor becomes pending again);
 * a timeout passed is settled by the alarm that follows; and once all is quiet, every waiter was
 * released exactly once and told exactly the first settlement (or failed unrun under policy fail when
 * it was a timeout). Through the worker's routes, as clients see them. Deterministic: a fixed seed.
 */
import fc from "fast-check";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { OUTBOX_IN_FLIGHT_MS } from "../../../src/shared/defaults.js";
import { get, post } from "../../helpers/http.js";
import { T0, TestEntropy, fireAlarm, inject, type LaneStub } from "../../helpers/lane.js";
import { restartLane } from "../../helpers/restart.js";

const SEED = 20_261_207;
const LANES = 2;
const WAITPOINTS = 4;
/** Timeouts of at most this long; the quiet-down steps past them all. */
const MAX_TIMEOUT_MS = 5_000;

type Step =
  | { t: "create"; w: number; timeoutMs: number | null }
  | { t: "complete"; w: number }
  | { t: "tick"; ms: number }
  /** The clock to the waitpoint's timeout (when it has one still ahead), then its lane's alarm. */
  | { t: "timeout"; w: number }
  | { t: "alarm"; lane: number }
  | { t: "enqueue"; w: number; lane: number; policy: "fail" | "ignore" }
  | { t: "wait"; w: number; timeoutMs: number | null }
  | { t: "work"; pick: number }
  | { t: "restart"; lane: number };

const w = fc.nat(WAITPOINTS - 1);
const lane = fc.nat(LANES - 1);
const timeout = fc.option(fc.integer({ min: 1, max: MAX_TIMEOUT_MS }), { nil: null });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ t: fc.constant("create" as const), w, timeoutMs: timeout }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("complete" as const), w }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: MAX_TIMEOUT_MS }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("alarm" as const), lane }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("timeout" as const), w }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("enqueue" as const), w, lane, policy: fc.constantFrom("fail" as const, "ignore" as const) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("wait" as const), w, timeoutMs: timeout }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("work" as const), pick: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("restart" as const), lane }) },
);

type Settlement = { state: string; result: unknown; settledAt: number | null };
const settlementOf = (wp: any): Settlement => ({ state: wp.state, result: wp.result, settledAt: wp.settledAt });

interface Waiter {
  id: string;
  lane: number;
  w: number;
  via: "deps" | "route";
  policy: "fail" | "ignore";
  /** What each claim after its wait was told of its waitpoint (its entries). */
  told: unknown[][];
}

/** Waiters in their waitpoint's lane only, then in either lane (through the waitpoint's lane's outbox). */
for (const across of [false, true]) {
  it(`every waiter sees exactly its waitpoint's first settlement, ${across ? "in any lane" : "in the waitpoint's lane"} (fast-check seed ${SEED})`, async () => {
    /** What the runs went through, over all of them: each must have happened, or the property says little. */
    const covered = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.array(lane, { minLength: WAITPOINTS, maxLength: WAITPOINTS }), fc.array(step, { minLength: 10, maxLength: 40 }), async (homes, steps) => {
        const clock = new ManualClock(T0);
        const names = Array.from({ length: LANES }, (_, i) => `wpp-${i}-${crypto.randomUUID()}`);
        const stubs: LaneStub[] = names.map((name) => env.LANE.getByName(name));
        for (const stub of stubs) await inject(stub, clock, new TestEntropy());
        const ids = Array.from({ length: WAITPOINTS }, (_, i) => `w${i}.gate`);
        const base = (l: number) => `/v1/lanes/${names[l]}`;
        const wpPath = (i: number) => `${base(homes[i]!)}/waitpoints/${ids[i]}`;
        /** What the clients know of each waitpoint: whether it exists, its timeout, its first settlement. */
        const known = Array.from({ length: WAITPOINTS }, () => ({ exists: false, timeoutAt: null as number | null, first: null as Settlement | null }));
        const waiters: Waiter[] = [];
        let completions = 0;
        let jobs = 0;

        const observe = (i: number, wp: any, how: string) => {
          expect(wp?.id, `${how}: ${JSON.stringify(wp)}`).toBe(ids[i]);
          const k = known[i]!;
          k.exists = true;
          if (wp.state === "pending") {
            expect(k.first, `${ids[i]} pending again after ${JSON.stringify(k.first)} (${how})`).toBeNull();
            k.timeoutAt = wp.timeoutAt;
            return;
          }
          const s = settlementOf(wp);
          if (k.first === null) k.first = s;
          else expect(s, `${ids[i]} settled anew (${how})`).toEqual(k.first);
        };
        const read = async (i: number, how: string) => {
          const answer = await get(wpPath(i));
          if (!known[i]!.exists) {
            expect(answer.status, `${ids[i]} unknown, yet ${JSON.stringify(answer.body)}`).toBe(404);
            expect(answer.body.error.code).toBe("waitpoint_not_found");
            return null;
          }
          expect(answer.status, JSON.stringify(answer.body)).toBe(200);
          observe(i, answer.body.waitpoint, how);
          return answer.body.waitpoint;
        };
        /** Before its timeout, a pending waitpoint cannot have settled but by a completion. */
        const beforeTimeout = (i: number) => known[i]!.timeoutAt === null || clock.now() < known[i]!.timeoutAt!;

        const create = async (i: number, timeoutMs: number | null) => {
          const answer = await post(`${base(homes[i]!)}/waitpoints`, { id: ids[i], ...(timeoutMs === null ? {} : { timeoutMs }) });
          const existed = known[i]!.exists;
          expect(answer.status, JSON.stringify(answer.body)).toBe(existed ? 200 : 201);
          if (!existed) expect(answer.body.waitpoint).toMatchObject({ state: "pending", timeoutAt: timeoutMs === null ? null : clock.now() + timeoutMs });
          observe(i, answer.body.waitpoint, "create");
        };
        const complete = async (i: number) => {
          const result = { n: ++completions };
          const existed = known[i]!.exists;
          const settledBefore = known[i]!.first !== null;
          const mustAccept = !settledBefore && beforeTimeout(i);
          const answer = await post(`${wpPath(i)}/complete`, { result });
          if (answer.status === 200 || answer.status === 201) {
            expect(settledBefore, `${ids[i]} completed again after ${JSON.stringify(known[i]!.first)}`).toBe(false);
            expect(answer.status, "201 exactly when the completion created it").toBe(existed ? 200 : 201);
            expect(answer.body.waitpoint).toMatchObject({ state: "completed", result, settledAt: clock.now() });
            observe(i, answer.body.waitpoint, "completion");
            covered.add(existed ? "completed" : "completed before it was created");
            return;
          }
          expect(mustAccept, `${ids[i]} pending before its timeout, yet the completion answered ${answer.status} ${JSON.stringify(answer.body)}`).toBe(false);
          expect(answer.status, JSON.stringify(answer.body)).toBe(409);
          expect(answer.body.error.code).toBe("waitpoint_settled");
          observe(i, answer.body.error.details.waitpoint, "refused completion");
          covered.add(`completion refused: ${known[i]!.first!.state}`);
        };
        const alarm = async (l: number) => {
          await fireAlarm(stubs[l]!);
          for (let i = 0; i < WAITPOINTS; i++) {
            if (homes[i] !== l || !known[i]!.exists) continue;
            const wp = await read(i, "after an alarm");
            const due = known[i]!.timeoutAt !== null && known[i]!.timeoutAt! <= clock.now();
            if (due) expect(wp.state, `${ids[i]}'s timeout passed and the alarm ran, yet it is pending`).not.toBe("pending");
          }
        };
        const enqueue = async (i: number, l: number, policy: "fail" | "ignore") => {
          const id = `j${++jobs}`;
          const answer = await post(`${base(l)}/jobs`, { id, kind: `k-${id}`, dependsOn: [{ waitpoint: ids[i], ...(l === homes[i] ? {} : { lane: names[homes[i]!] }) }], dependencyFailure: policy, maxAttempts: 1 });
          if (!known[i]!.exists) {
            expect(answer.status, JSON.stringify(answer.body)).toBe(409);
            expect(answer.body.error.code).toBe("dependency_not_found");
            expect((await get(`${base(l)}/jobs/${id}`)).status, "a refused enqueue stored its job").toBe(404);
            return;
          }
          expect(answer.status, JSON.stringify(answer.body)).toBe(201);
          const job = answer.body.job;
          expect(job.dependsOn).toEqual([{ lane: names[homes[i]!], waitpoint: ids[i] }]);
          waiters.push({ id, lane: l, w: i, via: "deps", policy, told: [] });
          const first = known[i]!.first;
          if (first === null && beforeTimeout(i)) expect(job.state, `${id} on pending ${ids[i]}`).toBe("blocked");
          if (first?.state === "completed" || (first?.state === "timedOut" && policy === "ignore")) expect(job.state, `${id} on settled ${ids[i]}: counts at once`).toBe("queued");
          if (first?.state === "timedOut" && policy === "fail") expect(job, `${id} on timed-out ${ids[i]}`).toMatchObject({ state: "settled", outcome: "failed", attempts: 0 });
        };
        const wait = async (i: number, timeoutMs: number | null) => {
          // The wait route's waitpoint is in the job's own lane.
          const l = homes[i]!;
          const id = `j${++jobs}`;
          expect((await post(`${base(l)}/jobs`, { id, kind: `k-${id}`, maxAttempts: 1 })).status).toBe(201);
          const claimed = await post(`${base(l)}/claims`, { kinds: [`k-${id}`] });
          expect(claimed.body.jobs, JSON.stringify(claimed.body)).toHaveLength(1);
          const token = claimed.body.jobs[0].lease.token;
          const answer = await post(`${base(l)}/jobs/${id}/wait`, { token, waitpoint: ids[i], ...(timeoutMs === null ? {} : { timeoutMs }) });
          expect(answer.status, JSON.stringify(answer.body)).toBe(200);
          const existed = known[i]!.exists;
          if (!existed) expect(answer.body.waitpoint).toMatchObject({ state: "pending", timeoutAt: timeoutMs === null ? null : clock.now() + timeoutMs });
          observe(i, answer.body.waitpoint, "wait");
          const first = known[i]!.first;
          expect(answer.body.job).toMatchObject({ id, attempts: 0, lease: null });
          if (first !== null) expect(answer.body.job.state, `${id} waits on settled ${ids[i]}: queued at once`).toBe("queued");
          else if (beforeTimeout(i)) expect(answer.body.job.state, `${id} waits on pending ${ids[i]}`).toBe("blocked");
          waiters.push({ id, lane: l, w: i, via: "route", policy: "ignore", told: [] });
          // The wait gave the lease back: the old token is fenced off.
          const stale = await post(`${base(l)}/jobs/${id}/complete`, { token });
          expect(stale.status).toBe(409);
          expect(stale.body.error.code).toBe("lease_superseded");
        };
        /** Claims one released waiter, checks what it was told against the first settlement, completes it. */
        const work = async (pick: number) => {
          const ready: Waiter[] = [];
          for (const waiter of waiters) if ((await get(`${base(waiter.lane)}/jobs/${waiter.id}`)).body.state === "queued") ready.push(waiter);
          if (ready.length === 0) return false;
          const waiter = ready[pick % ready.length]!;
          const claimed = await post(`${base(waiter.lane)}/claims`, { kinds: [`k-${waiter.id}`] });
          expect(claimed.body.jobs, `${waiter.id} queued but not claimable`).toHaveLength(1);
          const job = claimed.body.jobs[0];
          const wp = await read(waiter.w, `${waiter.id} claimed`);
          expect(wp.state, `${waiter.id} released while ${ids[waiter.w]} is pending`).not.toBe("pending");
          waiter.told.push((job.dependencies as any[]).filter((d) => d.waitpoint !== undefined));
          expect((await post(`${base(waiter.lane)}/jobs/${waiter.id}/complete`, { token: job.lease.token, result: null })).status).toBe(200);
          return true;
        };
        const restart = async (l: number) => {
          stubs[l] = await restartLane(names[l]!, stubs[l]!, clock);
        };

        for (const s of steps) {
          if (s.t === "create") await create(s.w, s.timeoutMs);
          else if (s.t === "complete") await complete(s.w);
          else if (s.t === "tick") clock.advance(s.ms);
          else if (s.t === "alarm") await alarm(s.lane);
          else if (s.t === "timeout") {
            const at = known[s.w]!.timeoutAt;
            if (at !== null && at > clock.now()) clock.advance(at - clock.now());
            await alarm(homes[s.w]!);
          }
          else if (s.t === "enqueue") await enqueue(s.w, across ? s.lane : homes[s.w]!, s.policy);
          else if (s.t === "wait") await wait(s.w, s.timeoutMs);
          else if (s.t === "work") await work(s.pick);
          else await restart(s.lane);
        }
        // Quiet down: every timeout passes, what is pending still is completed, notices are delivered.
        clock.advance(MAX_TIMEOUT_MS + 1);
        for (let l = 0; l < LANES; l++) await alarm(l);
        for (let i = 0; i < WAITPOINTS; i++) if (known[i]!.exists && known[i]!.first === null) await complete(i);
        for (let round = 0; round < 100; round++) {
          let open = 0;
          for (const waiter of waiters) if ((await get(`${base(waiter.lane)}/jobs/${waiter.id}`)).body.state !== "settled") open++;
          if (open === 0) break;
          if (await work(round)) continue;
          // Notices taken in hand by an instance that then restarted come due again after a while.
          clock.advance(OUTBOX_IN_FLIGHT_MS);
          for (const stub of stubs) await fireAlarm(stub);
        }

        for (let i = 0; i < WAITPOINTS; i++) {
          if (!known[i]!.exists) continue;
          const wp = await read(i, "at rest");
          expect(wp.state).not.toBe("pending");
          expect(wp.waiters, `${ids[i]} counts waiters at rest`).toBe(0);
        }
        for (const waiter of waiters) {
          const job = (await get(`${base(waiter.lane)}/jobs/${waiter.id}`)).body;
          const first = known[waiter.w]!.first!;
          expect(job.state, `${waiter.id} never settled`).toBe("settled");
          const entry = { lane: names[homes[waiter.w]!], waitpoint: ids[waiter.w], outcome: first.state, result: first.state === "completed" ? first.result : null };
          if (waiter.policy === "fail" && first.state === "timedOut") {
            expect(job, `${waiter.id} must fail unrun by its timed-out waitpoint`).toMatchObject({ outcome: "failed", attempts: 0 });
            expect(job.error).toContain(ids[waiter.w]);
            expect(job.error).toContain("timedOut");
            expect(waiter.told, `${waiter.id} ran`).toEqual([]);
            covered.add("failed by its timed-out waitpoint");
            continue;
          }
          expect(job.outcome, `${waiter.id}: ${job.error}`).toBe("completed");
          // Released once, told once: exactly the first settlement.
          expect(waiter.told, `${waiter.id} (${waiter.via}) was told`).toEqual([[entry]]);
          expect(job.generation).toBe(waiter.via === "deps" ? 1 : 2);
          covered.add(`${waiter.via}${waiter.lane === homes[waiter.w] ? "" : " (other lane)"} told ${first.state}`);
        }
      }),
      { seed: SEED, numRuns: 20 },
    );
    expect([...covered].sort()).toEqual([
      "completed",
      "completed before it was created",
      "completion refused: completed",
      "completion refused: timedOut",
      ...(across ? ["deps (other lane) told completed", "deps (other lane) told timedOut"] : []),
      "deps told completed",
      "deps told timedOut",
      "failed by its timed-out waitpoint",
      "route told completed",
      "route told timedOut",
    ]);
  }, 180_000);
}
