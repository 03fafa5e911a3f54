/**
 * Many pull consumers claiming from one lane at once, over RPC and over HTTP: a job is handed to one
 * claimer per generation, whatever the interleaving, and the lane's concurrency holds.
 */
import { describe, expect, it } from "vitest";
import type { ClaimedJob } from "../../src/shared/job.js";
import * as http from "../helpers/http.js";
import { claim, fireAlarm, setup, value, type LaneStub } from "../helpers/lane.js";

const CLAIMERS = 50;

/** 50 claims in flight at once, each for 1..5 jobs (the claimer's index decides). */
function claimAtOnce(stub: LaneStub, leaseMs: number): Promise<ClaimedJob[][]> {
  return Promise.all(Array.from({ length: CLAIMERS }, (_, i) => claim(stub, { max: 1 + (i % 5), leaseMs })));
}

/** Fails on any job handed out twice at one generation, or twice in one round at all. */
function expectDisjoint(rounds: ClaimedJob[][][]): void {
  const held = new Set<string>();
  for (const round of rounds) {
    const ids = round.flat().map((j) => j.id);
    expect(new Set(ids).size, "one job claimed twice in one round").toBe(ids.length);
    for (const job of round.flat()) {
      const key = `${job.id}@${job.lease.generation}`;
      expect(held.has(key), `${key} handed out twice`).toBe(false);
      held.add(key);
    }
  }
  const tokens = rounds.flat(2).map((j) => j.lease.token);
  expect(new Set(tokens).size).toBe(tokens.length);
}

describe("concurrent claims", () => {
  it(`${CLAIMERS} claims at once over RPC never hold one job at the same generation, round after round`, async () => {
    const { stub, clock } = await setup();
    value(await stub.configure({ concurrency: 1000 }));
    value(await stub.enqueueBatch({ jobs: Array.from({ length: 120 }, (_, i) => ({ id: `j${i}`, kind: "k", priority: i % 3 })) }));
    const rounds: ClaimedJob[][][] = [];
    for (let round = 1; round <= 3; round++) {
      const claimed = await claimAtOnce(stub, 1_000);
      rounds.push(claimed);
      // 150 asked for, 120 there: every job is claimed once, at the next generation.
      expect(claimed.flat()).toHaveLength(120);
      expect(new Set(claimed.flat().map((j) => j.lease.generation))).toEqual(new Set([round]));
      clock.advance(1_000);
      await fireAlarm(stub); // every lease lapses and is recovered
      expect(value(await stub.info()).counts).toMatchObject({ queued: 120, running: 0 });
    }
    expectDisjoint(rounds);
  });

  it(`${CLAIMERS} claims at once never run more jobs than the lane's concurrency`, async () => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: 7 }));
    value(await stub.enqueueBatch({ jobs: Array.from({ length: 40 }, () => ({ kind: "k" })) }));
    const claimed = await claimAtOnce(stub, 30_000);
    expect(claimed.flat()).toHaveLength(7);
    expectDisjoint([claimed]);
    expect(value(await stub.info()).counts).toMatchObject({ queued: 33, running: 7 });
  });

  it(`${CLAIMERS} claims at once honour queue heads: one running job per queue`, async () => {
    const { stub } = await setup();
    value(await stub.configure({ concurrency: 1000 }));
    value(await stub.enqueueBatch({ jobs: Array.from({ length: 60 }, (_, i) => ({ id: `j${i}`, kind: "k", queue: `q${i % 4}` })) }));
    const claimed = (await claimAtOnce(stub, 30_000)).flat();
    expect(claimed.map((j) => j.id).sort()).toEqual(["j0", "j1", "j2", "j3"]);
  });

  it(`${CLAIMERS} claims at once over HTTP hand each job to one claimer`, async () => {
    const lane = await http.setup();
    const answer = await http.post(`${lane.base}/jobs/batch`, { jobs: Array.from({ length: 80 }, () => ({ kind: http.PULL_KIND })) });
    expect(answer.status).toBe(200);
    await http.call("PATCH", lane.base, { json: { concurrency: 1000 } });
    const answers = await Promise.all(
      Array.from({ length: CLAIMERS }, (_, i) => http.post(`${lane.base}/claims`, { kinds: [http.PULL_KIND], max: 1 + (i % 3) })),
    );
    for (const a of answers) expect(a.status).toBe(200);
    const jobs = answers.flatMap((a) => a.body.jobs as ClaimedJob[]);
    expect(jobs).toHaveLength(80);
    expectDisjoint([[jobs]]);
    expect(jobs.every((j) => j.lease.generation === 1 && j.lease.expiresAt === http.T0 + 30_000)).toBe(true);
  });
});
