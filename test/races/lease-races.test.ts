/**
 * A lease holder racing the expiry of its lease: renewals at and around the instant the lease runs out,
 * in flight together with the alarm that recovers it (and with a new claimer). A manual clock stands
 * still while the calls race, so the outcome of each follows from its lease alone.
 */
import { describe, expect, it } from "vitest";
import type { Result } from "../../src/shared/errors.js";
import { T0, claim, claimOne, enqueue, fireAlarm, setup, value, type LaneStub } from "../helpers/lane.js";

const code = (r: Result<unknown>) => (r.ok ? "ok" : r.error.code);

async function heldJobs(stub: LaneStub, n: number, leaseMs: (i: number) => number, prefix = "j") {
  value(await stub.configure({ concurrency: 1000 }));
  const held: { id: string; token: string; expiresAt: number }[] = [];
  for (let i = 0; i < n; i++) {
    const id = await enqueue(stub, { id: `${prefix}${i}` });
    const { lease } = await claimOne(stub, { leaseMs: leaseMs(i) });
    held.push({ id, token: lease.token, expiresAt: lease.expiresAt });
  }
  return held;
}

describe("renew racing expiry", () => {
  it("a renewal before the lease runs out wins; at or after it, lease_expired, and the alarm recovers the job", async () => {
    const { stub, clock } = await setup();
    // Leases of 1000, 1010, … 1190 ms; the clock stops at T0 + 1090: ten ran out (one exactly now), ten hold.
    const held = await heldJobs(stub, 20, (i) => 1_000 + 10 * i);
    clock.set(T0 + 1_090);
    const renewals = held.map(({ id, token }) => stub.renew(id, { token, leaseMs: 5_000 }));
    const [answers] = await Promise.all([Promise.all(renewals), fireAlarm(stub)]);
    for (const [i, { id, token, expiresAt }] of held.entries()) {
      const answer = answers[i]!;
      const job = value(await stub.getJob(id));
      if (expiresAt <= clock.now()) {
        expect(code(answer), `j${i}`).toBe("lease_expired");
        expect(job, `j${i}`).toMatchObject({ state: "queued", attempts: 0, generation: 1, lease: null });
        expect(code(await stub.complete(id, { token })), `j${i}`).toBe("lease_expired");
      } else {
        const { lease } = value(answer as Result<{ lease: { token: string; expiresAt: number; generation: number } }>);
        expect(lease).toMatchObject({ generation: 1, expiresAt: T0 + 1_090 + 5_000 });
        expect(job, `j${i}`).toMatchObject({ state: "running", lease: { generation: 1, expiresAt: lease.expiresAt } });
        expect(code(await stub.complete(id, { token })), `j${i}`).toBe("lease_superseded");
        expect(code(await stub.complete(id, { token: lease.token })), `j${i}`).toBe("ok");
      }
    }
    expect(value(await stub.info()).counts).toMatchObject({ queued: 10, running: 0, completed: 10 });
  });

  it("a renewal racing the recovery and a new claim of its job never wins once its lease ran out", async () => {
    const { stub, clock } = await setup();
    // Every order of issue; the alarm is not an RPC, so arrival may differ, and the ending says which it was.
    const orders = [
      ["renew", "alarm", "claim"],
      ["renew", "claim", "alarm"],
      ["alarm", "renew", "claim"],
      ["alarm", "claim", "renew"],
      ["claim", "renew", "alarm"],
      ["claim", "alarm", "renew"],
    ] as const;
    for (const [n, order] of orders.entries()) {
      const { id, token } = (await heldJobs(stub, 1, () => 1_000, `o${n}-`))[0]!;
      clock.advance(1_000);
      const calls = {
        renew: () => stub.renew(id, { token, leaseMs: 5_000 }),
        alarm: () => fireAlarm(stub),
        claim: () => claim(stub, { max: 1, leaseMs: 60_000 }),
      };
      const answers = await Promise.all(order.map((call) => calls[call]()));
      const renewed = code(answers[order.indexOf("renew")] as Result<unknown>);
      const claimed = answers[order.indexOf("claim")] as Awaited<ReturnType<typeof claim>>;
      const job = value(await stub.getJob(id));
      const what = order.join(" < ");
      if (claimed.length === 1) {
        // Recovered, then claimed: the job is the new claimer's, at the next generation; the old
        // holder heard lease_expired (before the claim) or lease_superseded (after it).
        expect(job, what).toMatchObject({ state: "running", generation: 2 });
        expect(["lease_expired", "lease_superseded"], what).toContain(renewed);
        expect(code(await stub.complete(id, { token })), what).toBe("lease_superseded");
        expect(code(await stub.complete(id, { token: claimed[0]!.lease.token })), what).toBe("ok");
      } else {
        // The claim came before the recovery: nothing was claimable; the job is queued again.
        expect(job, what).toMatchObject({ state: "queued", generation: 1 });
        expect(renewed, what).toBe("lease_expired");
        expect(code(await stub.complete(id, { token })), what).toBe("lease_expired");
        value(await stub.cancel(id));
      }
    }
  });
});

describe("cancel racing expiry", () => {
  it("a cancel and the recovery of an expired lease, in either order, settle the job cancelled", async () => {
    const { stub, clock } = await setup();
    const held = await heldJobs(stub, 2, () => 1_000);
    clock.advance(1_000);
    const [first, , second] = await Promise.all([stub.cancel(held[0]!.id), fireAlarm(stub), stub.cancel(held[1]!.id)]);
    // Before the recovery the job still runs (202, and the recovery settles it); after it, it is
    // queued again (200, settled at once).
    for (const answer of [first, second]) expect(["cancelling", "cancelled"]).toContain(value(answer).status);
    for (const { id, token } of held) {
      expect(value(await stub.getJob(id))).toMatchObject({ state: "settled", outcome: "cancelled" });
      expect(code(await stub.complete(id, { token }))).toBe("job_cancelled");
    }
  });
});
