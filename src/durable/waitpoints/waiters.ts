/**
 * The jobs that wait on a lane's waitpoints, as the waitpoints see them: told of a settlement in the
 * transaction that settles it (waitpoints.ts `settleWaitpoint`), and counted for a waitpoint's
 * `waiters`. A lane whose jobs wait on waitpoints fills this in (lane-parts.ts); until then nothing
 * waits. A waiter in another lane told through the outbox keeps the waitpoint from retention and
 * sweep meanwhile: see `Waitpoints.holdForUntold` and `Waitpoints.releaseUntold`.
 */
import type { Waitpoint } from "../../shared/waitpoint.js";

export interface WaitpointWaiters {
  /**
   * Waitpoint `waitpoint` has just settled (completed or timed out), inside the transaction that
   * settled it: tell every job waiting on it (this lane's, released in place; other lanes', by
   * notices of the outbox). Runs exactly once per waitpoint: the first settlement alone reaches it.
   * A throw rolls the settlement back.
   */
  settled(waitpoint: Waitpoint): void;
  /** How many jobs wait on waitpoint `id` now, in every lane (its `waiters`). */
  count(id: string): number;
}

/** No job waits on any waitpoint. */
export const NO_WAITERS: WaitpointWaiters = {
  settled() {},
  count: () => 0,
};
