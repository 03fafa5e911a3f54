/**
 * The property of a sharded lane: for random sequences of enqueues (ids from a small pool, queues,
 * none), claims and settlements, a 4-shard lane answers every call as a 1-shard lane does: the same
 * statuses, the same jobs claimed, the same order of starts per queue, the same final outcome of
 * every job. A claim takes every claimable job (the lane's concurrency is set out of the way): which
 * job outside a queue a claim of fewer than the claimable takes first may differ between the two (a
 * sharded claim goes to the shards by their oldest due job), which is no promise of a lane. A pair is
 * two enqueues of one id with two queues (of their own) sent at once: one job, the other a conflict,
 * whichever wins (its queue is then not compared: which of two concurrent calls wins is no promise).
 * An enqueue may carry a debounce key (from a pool of two, due at once) and then a queue of its own
 * pool (or none): one key with different queues lands on different shards, and is one queued job all
 * the same. The order of starts in those queues is not compared: a job its key moves to another
 * shard takes its place behind the jobs queued there, where one object keeps its first enqueue's.
 * Deterministic: a fixed seed.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { call, get, post, PULL_KIND } from "../helpers/http.js";
import { setupSharded, type ShardedFixture } from "../helpers/shards.js";

const SEED = 20261204;
const NUM_RUNS = 25;
const MAX_STEPS = 40;
/** A claim's max: more than a run can enqueue, so that every claim takes every claimable job. */
const CLAIM_ALL = 100;

type Step =
  | { op: "enqueue"; id: string | null; queue: string | null; n: number; fails: boolean; key: string | null }
  | { op: "pair"; n: number }
  | { op: "claim" }
  | { op: "settle"; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("enqueue" as const),
      id: fc.option(fc.constantFrom("a", "b", "c", "d", "e", "f"), { nil: null }),
      queue: fc.option(fc.constantFrom("q1", "q2", "q3", "q4"), { nil: null }),
      n: fc.integer({ min: 1, max: 2 }),
      fails: fc.boolean(),
      key: fc.option(fc.constantFrom("k1", "k2"), { nil: null, freq: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("pair" as const), n: fc.integer({ min: 1, max: 2 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("claim" as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("settle" as const), pick: fc.nat(10) }) },
);

interface Run {
  fixture: ShardedFixture;
  held: { id: string; name: string; token: string; fails: boolean }[];
  /** Per queue, the ids in the order their attempts started. */
  starts: Record<string, string[]>;
  /** What each call answered, in order: statuses, and how many jobs each claim took. */
  answers: (number | string)[];
  /** The job each enqueue answered (its id, or for a made one `#<step>`), to compare outcomes by. */
  names: Map<string, string>;
}

async function apply(run: Run, s: Step, at: number): Promise<void> {
  const { fixture } = run;
  if (s.op === "enqueue") {
    const body: Record<string, unknown> = { kind: PULL_KIND, payload: { n: s.n, fails: s.fails }, maxAttempts: 1 };
    if (s.id !== null) body.id = s.id;
    if (s.queue !== null) body.queue = s.key === null ? s.queue : `d${s.queue.slice(1) === "1" || s.queue.slice(1) === "3" ? 1 : 2}`;
    if (s.key !== null) body.debounce = { key: s.key, delayMs: 0 };
    const answer = await post(`${fixture.base}/jobs`, body);
    run.answers.push(answer.status, answer.status >= 400 ? answer.body.error.code : answer.body.status);
    // A debounced answer names the job it replaced, which keeps its name.
    if (answer.status < 300 && !run.names.has(answer.body.job.id)) run.names.set(answer.body.job.id, s.id ?? `#${at}`);
    fixture.clock.advance(1);
    return;
  }
  if (s.op === "pair") {
    const id = `p${at}`;
    const answers = await Promise.all(["a", "b"].map((q) => post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: { n: s.n, fails: false }, maxAttempts: 1, queue: `pq${at}${q}` })));
    run.answers.push(answers.map((a) => `${a.status} ${a.status >= 400 ? a.body.error.code : a.body.status}`).sort().join("+"));
    for (const answer of answers) if (answer.status < 300) run.names.set(answer.body.job.id, id);
    fixture.clock.advance(1);
    return;
  }
  if (s.op === "claim") {
    const answer = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: CLAIM_ALL });
    const claimed = answer.body.jobs.map((job: any) => run.names.get(job.id)!).sort();
    run.answers.push(answer.status, claimed.join("+"));
    for (const job of answer.body.jobs) {
      run.held.push({ id: job.id, name: run.names.get(job.id)!, token: job.lease.token, fails: job.payload.fails });
      // A pair's two queues are one (whichever won); two pairs' queues are two, and one claim's order across queues is no promise.
      if (job.queue !== null && !job.queue.startsWith("d")) (run.starts[job.queue.startsWith("pq") ? job.queue.slice(0, -1) : job.queue] ??= []).push(run.names.get(job.id)!);
    }
    return;
  }
  if (run.held.length === 0) return;
  const [job] = run.held.sort((a, b) => (a.name < b.name ? -1 : 1)).splice(s.pick % run.held.length, 1);
  const answer = job!.fails
    ? await post(`${fixture.base}/jobs/${job!.id}/fail`, { token: job!.token, error: "no" })
    : await post(`${fixture.base}/jobs/${job!.id}/complete`, { token: job!.token });
  run.answers.push(answer.status);
}

/** Claims and settles everything left, then each job's outcome by its name. */
async function drain(run: Run): Promise<Record<string, string>> {
  for (;;) {
    while (run.held.length > 0) await apply(run, { op: "settle", pick: 0 }, -1);
    const before = run.held.length;
    await apply(run, { op: "claim" }, -1);
    if (run.held.length === before) break;
  }
  const outcomes: Record<string, string> = {};
  const page = await get(`${run.fixture.base}/jobs?limit=500`);
  for (const job of page.body.jobs) outcomes[run.names.get(job.id)!] = `${job.state}/${job.outcome}`;
  return outcomes;
}

it(`a 4-shard lane answers every call as a 1-shard lane (fast-check seed ${SEED})`, async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: MAX_STEPS }), async (steps) => {
      const runs: Run[] = [];
      for (const shards of [1, 4]) {
        const run: Run = { fixture: await setupSharded(shards), held: [], starts: {}, answers: [], names: new Map() };
        // Out of the way: no lane-wide limit binds either lane (a sharded lane's is divided).
        expect((await call("PATCH", run.fixture.base, { json: { concurrency: 1000 } })).status).toBe(200);
        for (const [at, s] of steps.entries()) await apply(run, s, at);
        runs.push(run);
      }
      const [one, four] = runs as [Run, Run];
      expect(four.answers).toEqual(one.answers);
      expect(four.starts).toEqual(one.starts);
      expect(await drain(four)).toEqual(await drain(one));
      expect(four.starts).toEqual(one.starts);
      expect(four.answers).toEqual(one.answers);
    }),
    { seed: SEED, numRuns: NUM_RUNS },
  );
}, 300_000);
