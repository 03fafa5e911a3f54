/**
 * a lane whose database was written by a newer Switchyard (a rolled-back deploy)
 * refuses every operation with `lane_schema_too_new` and changes nothing, the alarm included.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../../src/durable/lane.js";
import { SCHEMA_VERSION } from "../../../src/durable/store/migrations.js";
import { ManualClock } from "../../../src/shared/clock.js";
import type { Result } from "../../../src/shared/errors.js";
import { call, expectError, PULL_KIND } from "../../helpers/http.js";
import { T0, TestEntropy, claimOne, enqueue, inject, refusal } from "../../helpers/lane.js";

/** Every table's rows and the stored alarm: what "changes nothing" is checked against. */
async function everything(stub: DurableObjectStub<Lane>): Promise<unknown> {
  return runInDurableObject(stub, async (_lane, state) => {
    const sql = state.storage.sql;
    const tables = sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name`).toArray();
    return { alarm: await state.storage.getAlarm(), tables: Object.fromEntries(tables.map(({ name }) => [name, sql.exec(`SELECT * FROM "${name}"`).toArray()])) };
  });
}

describe("a lane written by a newer version", () => {
  it("refuses every RPC and every route with lane_schema_too_new, and its alarm changes nothing", async () => {
    // LANE, so that the HTTP routes reach the same object; a pull-only kind, so nothing runs by itself.
    const name = `too-new-${crypto.randomUUID()}`;
    const stub = env.LANE.getByName(name);
    await inject(stub, new ManualClock(T0), new TestEntropy());
    await enqueue(stub, { id: "running", kind: PULL_KIND });
    const { lease } = await claimOne(stub);
    await enqueue(stub, { id: "queued", kind: PULL_KIND });
    // A newer deploy ran and migrated further; then the deploy was rolled back.
    await runInDurableObject(stub, (_lane, state) =>
      state.storage.sql.exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)`, SCHEMA_VERSION + 1),
    );
    await evictDurableObject(stub);
    const before = await everything(stub);

    const calls: [string, () => Promise<Result<unknown>>][] = [
      ["enqueue", () => stub.enqueue({ kind: "k" })],
      ["enqueueBatch", () => stub.enqueueBatch({ jobs: [{ kind: "k" }] })],
      ["getJob", () => stub.getJob("queued")],
      ["listJobs", () => stub.listJobs({})],
      ["info", () => stub.info()],
      ["configure", () => stub.configure({ paused: true })],
      ["cancel", () => stub.cancel("queued")],
      ["requeue", () => stub.requeue("queued")],
      ["sweep", () => stub.sweep({ settledBefore: 0 })],
      ["claim", () => stub.claim({})],
      ["renew", () => stub.renew("running", { token: lease.token })],
      ["complete", () => stub.complete("running", { token: lease.token })],
      ["fail", () => stub.fail("running", { token: lease.token, error: "x" })],
      ["release", () => stub.release("running", { token: lease.token })],
    ];
    for (const [what, call] of calls) expect(refusal(await call(), "lane_schema_too_new").message, what).toContain("newer");
    // The alarm the older lane armed (its lease's expiry) fires: it recovers nothing, arms nothing.
    await runDurableObjectAlarm(stub);

    const base = `/v1/lanes/${name}`;
    const requests: [string, string, unknown][] = [
      ["POST", `${base}/jobs`, { kind: "k" }],
      ["GET", `${base}/jobs/queued`, undefined],
      ["GET", `${base}/jobs`, undefined],
      ["GET", base, undefined],
      ["PATCH", base, { paused: true }],
      ["POST", `${base}/jobs/queued/cancel`, {}],
      ["POST", `${base}/claims`, {}],
      ["POST", `${base}/jobs/running/complete`, { token: lease.token }],
    ];
    for (const [method, path, json] of requests) expectError(await call(method, path, json === undefined ? {} : { json }), 503, "lane_schema_too_new");
    const after = (await everything(stub)) as { alarm: number | null; tables: unknown };
    expect(after.tables).toEqual((before as { tables: unknown }).tables);
    expect(after.alarm).toBeNull(); // consumed by the platform, and not armed again
  });
});
