import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/shared/clock.js";
import { unwrap } from "../../../src/shared/errors.js";
import type { Job } from "../../../src/shared/job.js";
import { waitForTransition } from "../../helpers/executors.js";
import { countDependencyReads } from "../../helpers/held-payloads.js";
import { T0, TestEntropy, claimOne, inject, sql, value } from "../../helpers/lane.js";
import { PAYLOADS_LANE_PREFIX } from "../../helpers/test-worker.js";
import type { Lane } from "../../../src/durable/lane.js";
import type { Dependencies } from "../../../src/durable/deps/dependencies.js";

/** A payload whose JSON is about `kib` KiB. */
const big = (kib: number, tag = "a") => ({ tag, blob: "y".repeat(kib * 1024) });

/** A LANE (in-process executors) that sees the PAYLOADS bucket. */
async function setup() {
  const name = `${PAYLOADS_LANE_PREFIX}${crypto.randomUUID()}`;
  const lane = env.LANE.getByName(name);
  await inject(lane, new ManualClock(T0));
  const settled = async (id: string): Promise<Job> => {
    await runInDurableObject(lane, () => waitForTransition(id, (e) => e.to === "settled"));
    return unwrap(await lane.getJob(id));
  };
  return { name, lane, settled };
}

describe("big payloads and in-process executors", () => {
  it("gives an executor its held payload whole and keeps its big result in R2", async () => {
    const { name, lane, settled } = await setup();
    const payload = big(300);
    unwrap(await lane.enqueue({ id: "a", kind: "demo.echo", payload }));
    const job = await settled("a");
    expect(job.outcome).toBe("completed");
    expect(job.result).toEqual(payload); // demo.echo answers its payload: it was given whole
    const [stored] = await sql<{ payload: number; result: number }>(lane, "SELECT length(payload) AS payload, length(result) AS result FROM jobs WHERE id = 'a'");
    expect(stored!.payload).toBeLessThan(200);
    expect(stored!.result).toBeLessThan(200);
    expect((await env.PAYLOADS.list({ prefix: `${name}/a/` })).objects.map((o) => o.key.split("/").at(-1)).sort()).toEqual(["payload", "result-1"]);
  });

  it("gives ctx.dependencies a dependency's big result whole", async () => {
    const { lane, settled } = await setup();
    const payload = big(200);
    unwrap(await lane.enqueue({ id: "a", kind: "demo.echo", payload }));
    await settled("a");
    const reads = await countDependencyReads(lane);
    unwrap(await lane.enqueue({ id: "b", kind: "demo.deps", dependsOn: [{ id: "a" }] }));
    const b = await settled("b");
    expect(b.result).toMatchObject({ dependencies: [{ id: "a", outcome: "completed", result: payload }] });
    expect(reads()).toBe(1); // the read-back of the held result and ctx.dependencies share one read
  });

  it("reads a job's dependencies once when none holds its result in R2, its payload held or not", async () => {
    const { lane, settled } = await setup();
    unwrap(await lane.enqueue({ id: "held", kind: "demo.echo", payload: big(200) })); // the lane has held an object: its dependencies may hold one
    unwrap(await lane.enqueue({ id: "a", kind: "demo.echo", payload: { small: true } }));
    await settled("a");
    const reads = await countDependencyReads(lane);
    unwrap(await lane.enqueue({ id: "b", kind: "demo.deps", dependsOn: [{ id: "a" }] }));
    expect((await settled("b")).result).toMatchObject({ dependencies: [{ id: "a", outcome: "completed", result: { small: true } }] });
    expect(reads()).toBe(1);
    unwrap(await lane.enqueue({ id: "c", kind: "demo.deps", payload: big(200), dependsOn: [{ id: "a" }] }));
    expect((await settled("c")).result).toMatchObject({ dependencies: [{ id: "a", outcome: "completed", result: { small: true } }] });
    expect(reads()).toBe(2);
  });

  it("fails the attempt, queued again to retry, when reading its dependencies throws at its start", async () => {
    const { lane, settled } = await setup();
    unwrap(await lane.enqueue({ id: "held", kind: "demo.echo", payload: big(200) })); // the lane has held an object: its start reads the dependencies
    unwrap(await lane.enqueue({ id: "a", kind: "demo.echo", payload: { small: true } }));
    await settled("a");
    await runInDurableObject(lane, (l: Lane) => {
      const dependencies = (l as unknown as { parts: { dependencies: Dependencies } }).parts.dependencies;
      const of = dependencies.of.bind(dependencies);
      let thrown = false;
      dependencies.of = (seq) => {
        if (!thrown) {
          thrown = true;
          throw new Error("dependencies unreadable");
        }
        return of(seq);
      };
    });
    unwrap(await lane.enqueue({ id: "b", kind: "demo.deps", dependsOn: [{ id: "a" }] }));
    // Its attempt ends failed, to be retried (before: it ran on, renewed, never settled nor recovered).
    await runInDurableObject(lane, () => waitForTransition("b", (e) => e.from === "running" && e.to === "queued"));
    const b = unwrap(await lane.getJob("b"));
    expect(b.attempts).toBe(1);
    expect(b.error).toContain("dependencies unreadable");
    const running = await runInDurableObject(lane, (l: Lane) => l.dispatcher.running);
    expect(running).toBe(false);
  });

  it("reads no dependencies for a first attempt of a job without any", async () => {
    const { lane, settled } = await setup();
    const reads = await countDependencyReads(lane);
    unwrap(await lane.enqueue({ id: "a", kind: "demo.deps", payload: big(200) }));
    unwrap(await lane.enqueue({ id: "b", kind: "demo.deps" }));
    expect((await settled("a")).result).toEqual({ dependencies: [] });
    expect((await settled("b")).result).toEqual({ dependencies: [] });
    expect(reads()).toBe(0);
  });

  it("gives a pull claim a dependency's big result as resultRef", async () => {
    const name = `${PAYLOADS_LANE_PREFIX}${crypto.randomUUID()}`;
    const stub = env.PLAIN_LANE.getByName(name);
    await inject(stub, new ManualClock(T0), new TestEntropy());
    value(await stub.enqueue({ id: "a", kind: "k" }));
    const claimed = await claimOne(stub);
    const result = big(200, "r");
    value(await stub.complete("a", { token: claimed.lease.token, result }));
    value(await stub.enqueue({ id: "b", kind: "k", dependsOn: [{ id: "a" }] }));
    const b = await claimOne(stub);
    expect(b.dependencies).toEqual([{ lane: name, id: "a", outcome: "completed", result: null, resultRef: { bytes: JSON.stringify(result).length }, error: null }]);
  });
});
