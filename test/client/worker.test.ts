import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import { createWorker, type WorkerEvent } from "../../src/client/worker.js";
import { PULL_KIND, TOKEN } from "../helpers/http.js";

it("runs inside a Worker: drains a lane through the app's own fetch, then stops leaving nothing held", async () => {
  const name = crypto.randomUUID();
  const lane = createLaneClient(env.LANE).lane(name);
  await lane.enqueueBatch({ jobs: Array.from({ length: 5 }, (_, i) => ({ id: `j${i}`, kind: PULL_KIND, payload: { i } })) });
  let done!: () => void;
  const allDone = new Promise<void>((resolve) => (done = resolve));
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    url: "http://switchyard.test",
    token: TOKEN,
    lane: name,
    waitMs: 5_000,
    handlers: { [PULL_KIND]: (payload: { i: number }) => ({ twice: payload.i * 2 }) },
    fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    onEvent: (event) => {
      events.push(event);
      if (events.filter((e) => e.type === "completed").length === 5) done();
    },
  });
  await allDone;
  expect(await lane.get("j3")).toMatchObject({ outcome: "completed", result: { twice: 6 } });
  // The worker's next claim is held in the lane; stopping withdraws it, so a job enqueued after the
  // stop is claimed by nobody.
  expect(await worker.stop({ graceMs: 1_000 })).toEqual({ drained: true, inFlight: 0 });
  await lane.enqueue({ id: "after", kind: PULL_KIND });
  expect(await lane.get("after")).toMatchObject({ state: "queued", attempts: 0 });
  expect(worker.stats()).toMatchObject({ claims: 5, completions: 5, lost: 0, inFlight: 0 });
});
