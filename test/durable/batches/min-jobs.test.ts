import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Claims } from "../../../src/durable/attempts/claim.js";
import type { Lane } from "../../../src/durable/lane.js";
import type { ClaimedJob } from "../../../src/shared/job.js";
import { claimOne, enqueue, refusal, row, setup, value } from "../../helpers/lane.js";
import { hold, stillHeld } from "../../helpers/held-claims.js";

const ids = (jobs: ClaimedJob[]) => jobs.map((j) => j.id).sort();

describe("held claims with minJobs", () => {
  it("takes nothing until minJobs are claimable, then claims up to max", async () => {
    const { stub } = await setup();
    const held = hold(stub, { waitMs: 20_000, max: 5, minJobs: 3 });
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    expect(await stillHeld(stub, held)).toBe(true);
    expect((await row(stub, "a"))?.state).toBe("queued");
    value(await stub.enqueueBatch({ jobs: [{ kind: "k", id: "c" }, { kind: "k", id: "d" }] }));
    expect(ids(await held.answer)).toEqual(["a", "b", "c", "d"]);
  });

  it("leaves the jobs it waits on to other claims meanwhile", async () => {
    const { stub } = await setup();
    const held = hold(stub, { waitMs: 20_000, max: 5, minJobs: 3 });
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b" });
    expect((await claimOne(stub)).id).toBe("a");
    await enqueue(stub, { id: "c" });
    expect(await stillHeld(stub, held)).toBe(true);
    await enqueue(stub, { id: "d" });
    expect(ids(await held.answer)).toEqual(["b", "c", "d"]);
  });

  it("answers at once when minJobs are claimable already", async () => {
    const { stub } = await setup();
    for (const id of ["a", "b", "c"]) await enqueue(stub, { id });
    expect(ids(value(await stub.claim({ waitMs: 20_000, max: 2, minJobs: 2 })).jobs)).toEqual(["a", "b"]);
  });

  it("answers with what is claimable, fewer than minJobs, once waitMs has passed", async () => {
    const { stub } = await setup();
    const sent = Date.now();
    const held = hold(stub, { waitMs: 300, max: 5, minJobs: 3 });
    await enqueue(stub, { id: "a" });
    expect(await stillHeld(stub, held)).toBe(true);
    expect(ids(await held.answer)).toEqual(["a"]);
    expect(held.state.at - sent).toBeGreaterThanOrEqual(290);
    expect((await row(stub, "a"))?.state).toBe("running");
  });

  it("answers none once waitMs has passed with nothing claimable", async () => {
    const { stub } = await setup();
    expect(value(await stub.claim({ waitMs: 100, max: 5, minJobs: 3 })).jobs).toEqual([]);
  });

  it("count once a flush for the held claims that ask the same, until one of them takes jobs", async () => {
    const { stub } = await setup();
    const held = [hold(stub, { waitMs: 20_000, max: 3, minJobs: 3 }), hold(stub, { waitMs: 20_000, max: 3, minJobs: 2 }), hold(stub, { waitMs: 20_000, max: 3, minJobs: 3 })];
    for (const h of held) expect(await stillHeld(stub, h)).toBe(true);
    // From now on, every count the lane takes.
    const counted: number[] = [];
    await runInDurableObject(stub, (lane: Lane) => {
      const claims = (lane as unknown as { parts: { claims: Claims } }).parts.claims;
      const count = claims.claimableCount.bind(claims);
      claims.claimableCount = (ask, inProcess, upTo) => {
        counted.push(upTo);
        return count(ask, inProcess, upTo);
      };
    });
    await enqueue(stub, { id: "a" });
    // One count for the two claims of minJobs 3, one for the claim of minJobs 2: none is answered.
    expect(counted.sort()).toEqual([2, 3]);
    for (const h of held) expect(await stillHeld(stub, h)).toBe(true);
    counted.length = 0;
    await enqueue(stub, { id: "b" });
    // The claim of minJobs 2 takes both: the claim after it counts again (none left), the one before does not.
    expect(ids(await held[1]!.answer)).toEqual(["a", "b"]);
    expect(counted).toEqual([3, 2, 3]);
    expect(await stillHeld(stub, held[0]!)).toBe(true);
    expect(await stillHeld(stub, held[2]!)).toBe(true);
  });

  it("changes nothing without waitMs", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    expect(ids(value(await stub.claim({ max: 5, minJobs: 3 })).jobs)).toEqual(["a"]);
  });

  it("refuses minJobs above max, naming it, and changes nothing", async () => {
    const { stub } = await setup();
    await enqueue(stub, { id: "a" });
    const refused = refusal(await stub.claim({ max: 2, minJobs: 3, waitMs: 1000 }), "invalid_request");
    expect(refused.details).toEqual([expect.objectContaining({ path: ["minJobs"] })]);
    refusal(await stub.claim({ minJobs: 2 }), "invalid_request");
    refusal(await stub.claim({ max: 5, minJobs: 0 }), "invalid_request");
    expect((await row(stub, "a"))?.state).toBe("queued");
  });
});
