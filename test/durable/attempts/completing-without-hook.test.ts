import { runDurableObjectAlarm } from "cloudflare:test";
import { expect, it } from "vitest";
import { T0, evict, setup, sql, value } from "../../helpers/lane.js";

it("settles a completing job found in a lane without an outcome hook, and its alarm does not spin", async () => {
  const fixture = await setup();
  const { stub } = fixture;
  // The restart settles it on the platform clock, far behind the test's: retention would take it at once.
  value(await stub.configure({ retention: { completedMs: null } }));
  await sql(stub, `INSERT INTO jobs (id, kind, payload, priority, run_at, state, outcome, attempts, generation, max_attempts, backoff_base_ms, backoff_max_ms, timeout_ms, created_at, updated_at)
    VALUES ('c', 'k', '1', 0, ?, 'completing', 'completed', 1, 1, 3, 1000, 300000, 60000, ?, ?)`, T0 - 10, T0 - 10, T0 - 10);
  await evict(fixture);
  let runs = 0;
  while (runs < 5 && (await runDurableObjectAlarm(stub))) runs++;
  expect(value(await stub.getJob("c")).state).toBe("settled");
  expect(runs).toBeLessThan(5);
  expect(value(await stub.info()).nextWakeAt).toBeNull();
});
