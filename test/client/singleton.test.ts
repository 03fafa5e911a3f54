/**
 * Both clients pass `singleton` and return what the lane did: the HTTP client and the RPC client
 * (one enqueue, group commit, a batch), `skipped` naming the job that holds the queue and
 * `cancelling` the running jobs asked to cancel.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import { PULL_KIND, setup, TOKEN } from "../helpers/http.js";

const http = () => createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });

describe("singleton through the clients", () => {
  it("the HTTP client sends it and returns skipped, cancelling, and queueDefaults", async () => {
    const { lane: name } = await setup();
    const lane = http().lane(name);
    expect((await lane.enqueue({ id: "a", kind: PULL_KIND, queue: "q", singleton: "skip" })).status).toBe("queued");
    expect(await lane.enqueue({ id: "b", kind: PULL_KIND, queue: "q", singleton: "skip" })).toMatchObject({ status: "skipped", job: { id: "a" } });
    const [claimed] = (await lane.claim({ kinds: [PULL_KIND] })).jobs;
    expect(claimed!.id).toBe("a");
    expect(await lane.enqueue({ id: "c", kind: PULL_KIND, queue: "q", singleton: "cancel-running" })).toMatchObject({ status: "queued", cancelling: ["a"] });
    expect((await lane.configure({ queueDefaults: { concurrency: 2 } })).queueDefaults).toEqual({ concurrency: 2, rateLimit: null });
  });

  it("the RPC client sends it one by one, grouped, or in a batch, and returns what the lane did", async () => {
    const { lane: name } = await setup();
    const lane = createLaneClient(env.LANE).lane(name);
    const [first, second] = await Promise.all([
      lane.enqueue({ id: "a", kind: PULL_KIND, queue: "q", singleton: "skip" }),
      lane.enqueue({ id: "b", kind: PULL_KIND, queue: "q", singleton: "skip" }),
    ]);
    expect([first.status, second.status]).toEqual(["queued", "skipped"]);
    expect(second.job.id).toBe("a");
    const batch = await lane.enqueueBatch({ jobs: [{ id: "c", kind: PULL_KIND, queue: "q", singleton: "skip" }] });
    expect(batch.results).toEqual([{ id: "a", status: "skipped" }]);
    expect((await lane.list({})).jobs.map((j) => j.id)).toEqual(["a"]);
  });
});
