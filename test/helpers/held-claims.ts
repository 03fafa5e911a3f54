/** Held claims (`waitMs`) in tests: a claim left in flight, and whether the lane has answered it yet. */
import type { Result } from "../../src/shared/errors.js";
import type { ClaimedJob } from "../../src/shared/job.js";
import { value, type LaneStub } from "./lane.js";

/** A held claim, and whether it has been answered yet (and when, on real time). */
export function hold(stub: LaneStub, request: Record<string, unknown>, name?: string) {
  const state = { answered: false, at: 0 };
  const answer: Promise<ClaimedJob[]> = (name === undefined ? stub.claim(request) : stub.claim(request, name)).then((r: Result<{ jobs: ClaimedJob[] }>) => {
    state.answered = true;
    state.at = Date.now();
    return value(r).jobs;
  });
  return { answer, state };
}

/** True while the claim is still held after a full round trip to the lane. */
export async function stillHeld(stub: LaneStub, held: { state: { answered: boolean } }): Promise<boolean> {
  await stub.info();
  await stub.info();
  return !held.state.answered;
}
