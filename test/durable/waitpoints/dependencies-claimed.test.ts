/**
 * What a claim tells of a job's waits (docs/api.md "Waitpoints"): only waits that heard (completed or
 * timedOut), never one a requeue left unheard; and a lane whose jobs never waited reads no waits when
 * it claims a job again (a retry, a release), as a job of a lane without waitpoints pays nothing for them.
 */
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { claimOne as claimHttp, enqueueAndClaim, post, setup as httpLane } from "../../helpers/http.js";
import { claimOne, enqueue, setup, value } from "../../helpers/lane.js";

it("a requeued job's claim lists no wait that has not heard", async () => {
  const lane = await httpLane();
  const claimed = await enqueueAndClaim(lane);
  expect((await post(`${lane.base}/jobs/${claimed.id}/wait`, { token: claimed.lease.token, waitpoint: "unheard" })).body.job.state).toBe("blocked");
  expect((await post(`${lane.base}/jobs/${claimed.id}/cancel`)).status).toBe(200);
  expect((await post(`${lane.base}/jobs/${claimed.id}/requeue`)).status).toBe(200);
  const again = await claimHttp(lane);
  expect(again).toMatchObject({ id: claimed.id });
  expect(again.dependencies).toEqual([]);
});

it("claims a released job again with no read of waits in a lane whose jobs never waited", async () => {
  const { stub } = await setup();
  await enqueue(stub, { id: "plain" });
  const first = await claimOne(stub);
  value(await stub.release("plain", { token: first.lease.token }));
  const seen: string[] = [];
  let restore = () => {};
  await runInDurableObject(stub, (_lane, state) => {
    const sql = state.storage.sql;
    const exec = sql.exec;
    sql.exec = ((query: string, ...bindings: unknown[]) => (seen.push(query), exec.call(sql, query, ...bindings))) as typeof sql.exec;
    restore = () => void (sql.exec = exec);
  });
  let second;
  try {
    second = await claimOne(stub);
  } finally {
    restore();
  }
  expect(second).toMatchObject({ id: "plain", generation: 2, dependencies: [] });
  expect(seen.filter((q) => q.includes("job_waits"))).toEqual([]);
});
