/**
 * The clients' `traceparent` option: the HTTP client sends it as the header, the RPC client beside
 * the request (alone, or in a group commit with other callers' enqueues), both for a batch and flow().
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient, groupCommitCounters } from "../../src/client/rpc.js";
import { flow } from "../../src/client/flow.js";
import { QueueError } from "../../src/shared/errors.js";
import { PULL_KIND, setup, TOKEN } from "../helpers/http.js";

const http = () => createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });

/** A distinct valid traceparent per `n`. */
const traceparent = (n: number) => `00-${n.toString(16).padStart(32, "a")}-${n.toString(16).padStart(16, "b")}-01`;

describe("the traceparent option", () => {
  for (const [name, client] of [
    ["the RPC client", () => createLaneClient(env.LANE)],
    ["the RPC client without group commit", () => createLaneClient(env.LANE, { groupCommit: false })],
    ["the HTTP client", http],
  ] as const) {
    it(`${name}: stores it on a job and on every job of a batch; a job without it has none`, async () => {
      const { lane: laneName } = await setup();
      const lane = client().lane(laneName);
      const one = await lane.enqueue({ id: "one", kind: PULL_KIND }, { traceparent: traceparent(1) });
      expect(one.job.traceparent).toBe(traceparent(1));
      expect((await lane.enqueue({ id: "none", kind: PULL_KIND })).job.traceparent).toBeNull();
      await lane.enqueueBatch({ jobs: [{ id: "b-1", kind: PULL_KIND }, { id: "b-2", kind: PULL_KIND }] }, { traceparent: traceparent(2) });
      const stored = Object.fromEntries((await lane.list()).jobs.map((j) => [j.id, j.traceparent]));
      expect(stored).toEqual({ one: traceparent(1), none: null, "b-1": traceparent(2), "b-2": traceparent(2) });
      expect(await lane.get("one")).toEqual(one.job);
      const { jobs } = await lane.claim({ kinds: [PULL_KIND], max: 10 });
      expect(Object.fromEntries(jobs.map((j) => [j.id, j.traceparent]))).toEqual(stored);
    });

    it(`${name}: refuses a malformed one as invalid_request naming traceparent, and enqueues nothing`, async () => {
      const { lane: laneName } = await setup();
      const lane = client().lane(laneName);
      for (const send of [
        () => lane.enqueue({ kind: PULL_KIND }, { traceparent: "00-nope" }),
        () => lane.enqueueBatch({ jobs: [{ kind: PULL_KIND }] }, { traceparent: traceparent(1).toUpperCase() }),
      ]) {
        const error = await send().then(
          () => expect.fail("expected a refusal"),
          (e: unknown) => e as QueueError,
        );
        expect(error).toBeInstanceOf(QueueError);
        expect(error.code).toBe("invalid_request");
        expect(error.details).toEqual([expect.objectContaining({ path: ["traceparent"] })]);
      }
      expect((await lane.list()).jobs).toEqual([]);
    });
  }

  it("the RPC client's concurrent enqueues travel as one group, each with its own trace context, built as the lane stored it", async () => {
    const { lane: laneName } = await setup();
    const lane = createLaneClient(env.LANE).lane(laneName);
    const before = groupCommitCounters(env.LANE);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => lane.enqueue({ id: `g-${i}`, kind: PULL_KIND }, i % 3 === 0 ? {} : { traceparent: traceparent(i) })),
    );
    const after = groupCommitCounters(env.LANE);
    expect(after.items - before.items).toBe(12);
    expect(after.calls - before.calls).toBeLessThan(12); // grouped
    expect(answers.map((a) => a.job.traceparent)).toEqual(Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? null : traceparent(i))));
    for (const answer of answers) expect(await lane.get(answer.job.id)).toEqual(answer.job);
  });

  it("flow() stores it on the parent and on every child, in every lane", async () => {
    const [parents, others] = [await setup(), await setup()];
    const source = createLaneClient(env.LANE);
    const answer = await flow(source, {
      lane: parents.lane,
      parent: { id: "parent", kind: PULL_KIND },
      children: [{ id: "here", kind: PULL_KIND }, { id: "there", kind: PULL_KIND, lane: others.lane }],
      traceparent: traceparent(7),
    });
    expect(answer.parent.status).toBe("queued");
    expect((await source.lane(parents.lane).list()).jobs.map((j) => [j.id, j.traceparent])).toEqual([
      ["here", traceparent(7)],
      ["parent", traceparent(7)],
    ]);
    expect((await source.lane(others.lane).get("there")).traceparent).toBe(traceparent(7));
  });
});
