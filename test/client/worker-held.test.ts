/**
 * A pull worker's single-job handler and big payloads (docs/api.md "Big payloads"): its claims take
 * several jobs, which leave out what is held in R2 (`payloadRef`, `resultRef`); the handler gets its
 * payload and `ctx.job.dependencies` whole all the same, read back before it runs.
 */
import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import { createWorker, type WorkerContext } from "../../src/client/worker.js";
import { TOKEN } from "../helpers/http.js";
import { PAYLOADS_LANE_PREFIX } from "../helpers/test-worker.js";

const KIND = "k.held";
const big = (tag: string) => ({ tag, blob: "y".repeat(200 * 1024) });

it("gives a single-job handler its held payload and its dependency's held result whole", async () => {
  const name = `${PAYLOADS_LANE_PREFIX}${crypto.randomUUID()}`;
  const lane = createLaneClient(env.LANE).lane(name);
  await lane.enqueue({ id: "dep", kind: "demo.echo", payload: big("dependency") });
  expect(await lane.wait("dep", { timeoutMs: 5_000 })).toMatchObject({ outcome: "completed" });
  await lane.enqueue({ id: "h1", kind: KIND, payload: big("h1"), dependsOn: [{ id: "dep" }] });
  await lane.enqueue({ id: "h2", kind: KIND, payload: { small: true } });
  const seen = new Map<string, { payload: unknown; job: WorkerContext["job"] }>();
  const paths: string[] = [];
  const worker = createWorker({
    url: "http://switchyard.test", token: TOKEN, lane: name, kinds: [KIND], concurrency: 10, waitMs: 5_000,
    handlers: { [KIND]: (payload, ctx) => void seen.set(ctx.job.id, { payload, job: ctx.job }) },
    fetch: (input, init) => {
      const request = new Request(input, init);
      paths.push(new URL(request.url).pathname);
      return exports.default.fetch(request);
    },
  });
  expect(await lane.wait("h1", { timeoutMs: 5_000 })).toMatchObject({ outcome: "completed" });
  expect(await lane.wait("h2", { timeoutMs: 5_000 })).toMatchObject({ outcome: "completed" });
  await worker.stop({ graceMs: 1_000 });
  expect(seen.get("h1")!.payload).toEqual(big("h1"));
  expect(seen.get("h1")!.job.payload).toEqual(big("h1"));
  expect(seen.get("h1")!.job.dependencies).toEqual([expect.objectContaining({ id: "dep", outcome: "completed", result: big("dependency") })]);
  expect(seen.get("h2")!.payload).toEqual({ small: true });
  // The claim took both (max 10), which left the big ones out: they were read back.
  expect(paths.filter((p) => /\/jobs\/(h1\/payload|dep\/result)$/.test(p)).length).toBe(2);
});
