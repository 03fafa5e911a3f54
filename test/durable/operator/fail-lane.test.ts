/**
 * Failing a lane (docs/api.md `POST /v1/lanes/{lane}/fail`): up to 500 queued and running jobs a
 * call, running first, then queued in enqueue order; in-process attempts aborted, pulled ones'
 * holders refused with `job_settled`; a completing job finishes its delivery.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AbortError } from "../../../src/durable/attempts/executors.js";
import type { Lane } from "../../../src/durable/lane.js";
import { FAIL_LANE_BATCH } from "../../../src/shared/defaults.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { gate, lost, waitForTransition } from "../../helpers/executors.js";
import { deliveriesOf } from "../../helpers/outcomes.js";
import { T0, inject, refusal, rows, setup, value } from "../../helpers/lane.js";

const PULL = "email.send";

async function lane(binding: "LANE" | "HOOK_LANE") {
  const name = `fail-${crypto.randomUUID()}`;
  const stub = env[binding].getByName(name) as DurableObjectStub<Lane>;
  await inject(stub, new ManualClock(T0));
  return { name, stub };
}

describe("failing a lane", () => {
  it("settles more than 500 jobs over two calls: running first (in-process and pulled), then queued in enqueue order", async () => {
    const { name, stub } = await lane("LANE");
    const g = gate();
    for (const id of ["g1", "g2", "g3"]) value(await stub.enqueue({ id, kind: "test.gate", payload: { gate: g.key } }));
    const started = await runInDurableObject(stub, () => g.started(3).then(() => g.attempts));
    const pulled = Array.from({ length: 600 }, (_, i) => ({ id: `p${i}`, kind: PULL }));
    value(await stub.enqueueBatch({ jobs: pulled }));
    const held = value(await stub.claim({ kinds: [PULL], max: 2 })).jobs;
    expect(held.map((j) => j.id)).toEqual(["p0", "p1"]);

    const first = value(await stub.failLane({ reason: "downstream gone" }));
    expect(first.more).toBe(true);
    expect(first.failed).toHaveLength(FAIL_LANE_BATCH);
    expect(first.failed.slice(0, 6)).toEqual(["g1", "g2", "g3", "p0", "p1", "p2"]);
    expect(first.failed.at(-1)).toBe(`p${FAIL_LANE_BATCH - 4}`);

    // The in-process attempts were aborted: they lost their lease to the settlement.
    for (const attempt of started) {
      expect(attempt.signal.aborted).toBe(true);
      expect((attempt.signal.reason as AbortError).abortCause).toBe("lost");
    }
    const lostCauses = ["g1", "g2", "g3"].map((id) => lost(id).filter((l) => l.job.lane === name).map((l) => l.event.cause));
    expect(lostCauses).toEqual([["settled"], ["settled"], ["settled"]]);
    // The pulled jobs' holders hear job_settled, whatever they say, their own repeated fail included.
    for (const job of held) {
      refusal(await stub.complete(job.id, { token: job.lease.token }), "job_settled");
      refusal(await stub.fail(job.id, { token: job.lease.token, error: "x" }), "job_settled");
      refusal(await stub.renew(job.id, { token: job.lease.token }), "job_settled");
    }
    expect(value(await stub.getJob("p0"))).toMatchObject({ state: "settled", outcome: "failed", error: "downstream gone", lease: null });

    const second = value(await stub.failLane({ reason: "downstream gone" }));
    expect(second).toEqual({ failed: Array.from({ length: 103 }, (_, i) => `p${i + FAIL_LANE_BATCH - 3}`), more: false });
    const info = value(await stub.info());
    expect(info.counts).toMatchObject({ queued: 0, running: 0, failed: 603 });
    expect(info.stats).toMatchObject({ failed: 603, lost: 3, completed: 0 });
    // A late result of an aborted executor writes nothing.
    await runInDurableObject(stub, () => started.forEach((a) => a.open({ late: true })));
    expect(value(await stub.getJob("g1"))).toMatchObject({ outcome: "failed", result: null });
    // Nothing left: a third call fails nothing.
    expect(value(await stub.failLane({ reason: "again" }))).toEqual({ failed: [], more: false });
  });

  it("lets a completing job finish its delivery, and delivers the failures it records", async () => {
    const { name, stub } = await lane("HOOK_LANE");
    const completing = value(await stub.enqueue({ id: "c", kind: "demo.echo", payload: { hook: "hang-once" } })).job;
    await runInDurableObject(stub, () => waitForTransition(completing.id, (e) => e.lane === name && e.to === "completing"));
    value(await stub.enqueue({ id: "q", kind: PULL }));
    expect(value(await stub.failLane({ reason: "gone" }))).toEqual({ failed: ["q"], more: false });
    expect(value(await stub.getJob("c"))).toMatchObject({ state: "completing", outcome: "completed" });
    await runInDurableObject(stub, () => waitForTransition("q", (e) => e.lane === name && e.to === "settled" && e.outcome === "failed"));
    expect(deliveriesOf("q").filter((j) => j.lane === name)).toEqual([expect.objectContaining({ state: "completing", outcome: "failed", error: "gone" })]);
  });

  it("settles a running job whose cancellation was requested cancelled, as the request promised", async () => {
    const { stub } = await setup();
    for (const id of ["a", "b"]) value(await stub.enqueue({ id, kind: "k" }));
    const [a] = value(await stub.claim({ max: 1 })).jobs;
    expect(value(await stub.cancel("a")).status).toBe("cancelling");
    expect(value(await stub.failLane({ reason: "gone" }))).toEqual({ failed: ["b"], more: false });
    expect(value(await stub.getJob("a"))).toMatchObject({ state: "settled", outcome: "cancelled" });
    refusal(await stub.complete("a", { token: a!.lease.token }), "job_cancelled");
  });

  it("refuses a missing, empty, oversized or unknown-field request, changing nothing", async () => {
    const { stub } = await setup();
    value(await stub.enqueue({ id: "a", kind: "k" }));
    const before = await rows(stub);
    for (const bad of [undefined, {}, { reason: "" }, { reason: "x".repeat(5000) }, { reason: 7 }, { reason: "x", extra: 1 }]) {
      refusal(await stub.failLane(bad), "invalid_request");
    }
    expect(await rows(stub)).toEqual(before);
  });
});
