/**
 * The transition log tells each transition once its write is durable. A wait for durability that
 * fails cannot tell its transitions as durable; it must not silence the ones written after it.
 */
import { describe, expect, it, vi } from "vitest";
import { TransitionLog } from "../../../src/durable/events/transitions.js";
import type { TransitionEvent } from "../../../src/shared/log.js";

const subject = (id: string, traceparent: string | null = null) => ({ id, kind: "k", state: "queued" as const, outcome: null, attempts: 0, generation: 0, traceparent });

function logWith(durable: () => Promise<void>) {
  const told: TransitionEvent[] = [];
  const log = new TransitionLog({ lane: "l", log: false, onTransition: (e) => told.push(e), durable, now: () => 1 });
  return { log, told };
}

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("the transition log", () => {
  it("tells transitions once their write is durable, in order", async () => {
    const { log, told } = logWith(async () => {});
    log.record({ job: subject("a"), from: null, to: "queued", durationMs: null });
    log.record({ job: subject("b"), from: null, to: "queued", durationMs: null });
    expect(told).toEqual([]);
    await settle();
    expect(told.map((e) => e.jobId)).toEqual(["a", "b"]);
  });

  it("after a failed wait for durability, tells the transitions written later", async () => {
    let calls = 0;
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      const { log, told } = logWith(() => (++calls === 1 ? Promise.reject(new Error("storage gone")) : Promise.resolve()));
      log.record({ job: subject("lost"), from: null, to: "queued", durationMs: null });
      await settle();
      log.record({ job: subject("later"), from: null, to: "queued", durationMs: null });
      await settle();
      expect(told.map((e) => e.jobId)).toEqual(["later"]);
      expect(calls).toBe(2);
      // The dropped one is said, as an error line naming how many.
      const lines = errors.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
      expect(lines).toContainEqual(expect.objectContaining({ event: "lane.transitions_unconfirmed", lane: "l", count: 1, message: "storage gone" }));
    } finally {
      errors.mockRestore();
    }
  });

  it("tells a transition written while a wait is in flight only after a wait asked for after it", async () => {
    const waits: (() => void)[] = [];
    const { log, told } = logWith(() => new Promise<void>((resolve) => waits.push(resolve)));
    log.record({ job: subject("first"), from: null, to: "queued", durationMs: null });
    log.record({ job: subject("same-stretch"), from: null, to: "queued", durationMs: null });
    await settle();
    expect(waits.length).toBe(1);
    // Written after that wait was asked for: it does not cover this write.
    log.record({ job: subject("later"), from: null, to: "queued", durationMs: null });
    await settle();
    expect(waits.length).toBe(1);
    waits[0]!();
    await settle();
    expect(told.map((e) => e.jobId)).toEqual(["first", "same-stretch"]);
    expect(waits.length).toBe(2);
    waits[1]!();
    await settle();
    expect(told.map((e) => e.jobId)).toEqual(["first", "same-stretch", "later"]);
    expect(waits.length).toBe(2);
  });
});
