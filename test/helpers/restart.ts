/** A hard restart of a LANE object in tests: its memory gone, its storage kept, the same clock from the new instance's very start. */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { ManualClock } from "../../src/shared/clock.js";
import { TestEntropy, inject, type LaneStub } from "./lane.js";
import { startClocks } from "./test-worker.js";

/** Aborts lane `name` (whose stub is `stub`) and answers the stub of its next instance, on `clock`. */
export async function restartLane(name: string, stub: LaneStub, clock: ManualClock): Promise<LaneStub> {
  startClocks.set(name, clock);
  await expect(runInDurableObject(stub, (_lane, state) => state.abort("restart"))).rejects.toThrow();
  const next = env.LANE.getByName(name);
  await inject(next, clock, new TestEntropy());
  return next;
}
