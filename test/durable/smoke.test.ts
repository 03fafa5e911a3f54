import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { ManualClock } from "../../src/shared/clock.js";

it("enqueues and reads back a job", async () => {
  const stub = env.PLAIN_LANE.getByName(crypto.randomUUID());
  const clock = new ManualClock(4_000_000_000_000);
  await runInDurableObject(stub, (lane) => lane.useClock(clock));
  const answer = await stub.enqueue({ kind: "k", payload: { a: 1 } });
  expect(answer.ok).toBe(true);
  if (!answer.ok) return;
  expect(answer.value.job.createdAt).toBe(4_000_000_000_000);
  expect(answer.value.job.lane).not.toBe("");
});
