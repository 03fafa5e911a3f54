/** Lanes for tests of dependencies: several LANE objects on one manual clock, and the settling of a pull job. */
import { env } from "cloudflare:workers";
import { ManualClock } from "../../src/shared/clock.js";
import { T0, TestEntropy, claimOne, inject, value, type LaneStub } from "./lane.js";

/**
 * Lanes of the LANE class sharing one manual clock (pull-only kinds: no executor runs). Every lane is
 * of that class, as in production: a lane finds another by name there.
 */
export async function lanes(n: number, prefix = "deps") {
  const clock = new ManualClock(T0);
  const stubs: { name: string; stub: LaneStub }[] = [];
  for (let i = 0; i < n; i++) {
    const name = `${prefix}-${i}-${crypto.randomUUID()}`;
    const stub = env.LANE.getByName(name);
    await inject(stub, clock, new TestEntropy());
    stubs.push({ name, stub });
  }
  return { clock, lanes: stubs };
}

/** Claims and completes job `id` (the only claimable one of its kind `k-<id>`) with `result`. */
export async function complete(stub: LaneStub, id: string, result: unknown = null): Promise<void> {
  const claimed = await claimOne(stub, { kinds: [`k-${id}`] });
  value(await stub.complete(claimed.id, { token: claimed.lease.token, result }));
}
