/**
 * On a sharded lane a job and the waitpoint it waits on may live on different shards (a job routes by
 * its id, a waitpoint by its own): waiting still works, through the fenced wait route and through a
 * dependsOn item, and the job resumes with the waitpoint's settlement. The waitpoints' chaos run found
 * both refused (a 400 for the route, a 409 dependency_not_found for the item).
 */
import { expect, it } from "vitest";
import { PULL_KIND, post } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

const SHARDS = 4;

it("a job waits through the wait route on a waitpoint of another shard, and resumes with its completion", async () => {
  const lane = await setupSharded(SHARDS);
  const job = keyOn(0, SHARDS, "job");
  const waitpoint = keyOn(1, SHARDS, "gate");
  expect((await post(`${lane.base}/jobs`, { id: job, kind: PULL_KIND })).status).toBe(201);
  const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
  const token = claimed.body.jobs[0].lease.token;
  const waited = await post(`${lane.base}/jobs/${job}/wait`, { token, waitpoint });
  expect(waited.status, JSON.stringify(waited.body)).toBe(200);
  expect(waited.body.job.state).toBe("blocked");
  expect((await post(`${lane.base}/waitpoints/${waitpoint}/complete`, { result: { ok: 1 } })).status).toBe(200);
  const resumed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
  expect(resumed.body.jobs.map((j: any) => [j.id, j.dependencies])).toEqual([[job, [{ lane: lane.lane, waitpoint, outcome: "completed", result: { ok: 1 } }]]]);
});

it("a job enqueued with a dependsOn item on a waitpoint of another shard waits for it", async () => {
  const lane = await setupSharded(SHARDS);
  const job = keyOn(2, SHARDS, "job");
  const waitpoint = keyOn(3, SHARDS, "gate");
  expect((await post(`${lane.base}/waitpoints`, { id: waitpoint })).status).toBe(201);
  const enqueued = await post(`${lane.base}/jobs`, { id: job, kind: PULL_KIND, dependsOn: [{ waitpoint }] });
  expect(enqueued.status, JSON.stringify(enqueued.body)).toBe(201);
  expect(enqueued.body.job.state).toBe("blocked");
  expect((await post(`${lane.base}/waitpoints/${waitpoint}/complete`, { result: 7 })).status).toBe(200);
  const claimed = await post(`${lane.base}/claims`, { kinds: [PULL_KIND] });
  expect(claimed.body.jobs.map((j: any) => [j.id, j.dependencies])).toEqual([[job, [{ lane: lane.lane, waitpoint, outcome: "completed", result: 7 }]]]);
});
