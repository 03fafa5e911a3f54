/**
 * What a declared kind's payload check answers when more than the payload is wrong, or when the
 * schema's check itself breaks (docs/api.md "Typed kinds"): the request's own refusals come first
 * (400 `invalid_request`, then 413), then the payload's (`invalid_payload`); a check that throws or
 * rejects is the payload's refusal too, a 400, never a 500. Nothing is stored on any of them.
 */
import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../../src/shared/defaults.js";
import { refusal, rows, setup, value } from "../../helpers/lane.js";

/** A payload of typed.sleep that breaks its schema and is over 128 KiB. */
const badAndBig = { ms: "x", blob: "y".repeat(MAX_PAYLOAD_BYTES) };
const badDependsOn = (id: string) => ({ dependsOn: [{ id }] }); // names the job itself

describe("the order of an enqueue's refusals", () => {
  it("answers invalid_request before 413, and 413 before invalid_payload", async () => {
    const { stub } = await setup();
    refusal(await stub.enqueue({ id: "o1", kind: "typed.sleep", payload: badAndBig, ...badDependsOn("o1") }), "invalid_request");
    refusal(await stub.enqueue({ id: "o1", kind: "typed.sleep", payload: badAndBig }), "payload_too_large");
    refusal(await stub.enqueue({ id: "o1", kind: "typed.sleep", payload: { ms: "x" } }), "invalid_payload");
    // An asynchronous schema's check waits its turn the same way.
    refusal(await stub.enqueue({ id: "o1", kind: "typed.async", payload: { ms: "x" }, ...badDependsOn("o1") }), "invalid_request");
    expect(await rows(stub)).toEqual([]);
  });

  it("answers a schedule PUT's the same way", async () => {
    const { stub } = await setup();
    refusal(await stub.putSchedule("s1", { everyMs: 60_000, job: { kind: "typed.sleep", payload: badAndBig } }), "payload_too_large");
    refusal(await stub.putSchedule("s1", { everyMs: 60_000, job: { kind: "typed.async", payload: badAndBig } }), "payload_too_large");
    refusal(await stub.putSchedule("s1", { everyMs: 60_000, job: { kind: "typed.sleep", payload: { ms: "x" } } }), "invalid_payload");
    expect(value(await stub.listSchedules()).schedules).toEqual([]);
  });

  it("answers a batch's the same way, naming the item", async () => {
    const { stub } = await setup();
    const good = { kind: "typed.sleep", payload: { ms: 1 } };
    const self = refusal(await stub.enqueueBatch({ jobs: [{ ...good, payload: { ms: "x" } }, { id: "b1", ...good, ...badDependsOn("b1") }] }), "invalid_request");
    expect(self.message).toMatch(/jobs[.[]1/);
    const big = refusal(await stub.enqueueBatch({ jobs: [{ ...good, payload: { ms: "x" } }, { ...good, payload: badAndBig }] }), "payload_too_large");
    expect(big.message).toMatch(/^jobs\[1\]/);
    refusal(await stub.enqueueBatch({ jobs: [good, { ...good, payload: { ms: "x" } }] }), "invalid_payload");
    expect(await rows(stub)).toEqual([]);
  });
});

describe("a schema whose check breaks", () => {
  it("refuses the payload with invalid_payload, naming the payload and what broke, storing nothing", async () => {
    const { stub } = await setup();
    for (const [how, message] of [["throw", "the check broke"], ["reject", "the async check broke"]] as const) {
      const error = refusal(await stub.enqueue({ kind: "typed.breaks", payload: { how } }), "invalid_payload");
      expect(error.details).toEqual([{ path: ["payload"], message: expect.stringContaining(message) }]);
      const batch = refusal(await stub.enqueueBatch({ jobs: [{ kind: "typed.breaks", payload: {} }, { kind: "typed.breaks", payload: { how } }] }), "invalid_payload");
      expect(batch.details).toEqual([{ path: ["jobs", 1, "payload"], message: expect.stringContaining(message) }]);
    }
    expect(await rows(stub)).toEqual([]);
    expect(value(await stub.enqueue({ kind: "typed.breaks", payload: { how: "not" } })).status).toBe("queued");
  });
});
