/**
 * The registry's tables are made by its migrations (registry-migrations.ts), like a lane's: a registry
 * deployed before them (its tables made at every start, no version table) is upgraded in place.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { REGISTRY_MIGRATIONS } from "../../src/durable/registry-migrations.js";
import type { LaneReport } from "../../src/durable/metrics/exposition.js";

const freshRegistry = () => env.REGISTRY.getByName(`registry-${crypto.randomUUID()}`);

/**
 * The statements a registry ran at every start before it had migrations, word for word: version 1 is
 * them (git history of registry.ts), run then without a version table.
 */
const BEFORE_MIGRATIONS = REGISTRY_MIGRATIONS[0]!.statements;

const report = (queued: number): LaneReport => ({
  counts: { blocked: 0, queued, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 },
  stats: { enqueued: queued, claimed: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0 },
  earliestRunAt: null,
  histograms: [],
});

type Stub = ReturnType<typeof freshRegistry>;

function tables(stub: Stub): Promise<string[]> {
  return runInDurableObject(stub, (_registry, state) =>
    state.storage.sql
      .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name`)
      .toArray()
      .map((r) => r.name),
  );
}

describe("the registry's migrations", () => {
  it("make a new registry's tables and record each migration once", async () => {
    const stub = freshRegistry();
    await stub.register("a", 1);
    expect(await tables(stub)).toEqual(["lane_metrics", "lanes", "object_reports", "schema_migrations", "watched"]);
    const applied = await runInDurableObject(stub, (_registry, state) =>
      state.storage.sql.exec<{ version: number; name: string }>(`SELECT version, name FROM schema_migrations ORDER BY version`).toArray(),
    );
    expect(applied).toEqual(REGISTRY_MIGRATIONS.map(({ version, name }) => ({ version, name })));
  });

  it("upgrade a registry made before them in place: its lanes, watch list and reports are kept", async () => {
    const stub = freshRegistry();
    const lane = `old-${crypto.randomUUID().slice(0, 8)}`;
    // As the registry was left by a release before migrations: its tables, rows, and no version table.
    await runInDurableObject(stub, (_registry, state) => {
      const sql = state.storage.sql;
      for (const { name } of sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'`).toArray()) {
        sql.exec(`DROP TABLE "${name}"`);
      }
      for (const statement of BEFORE_MIGRATIONS) sql.exec(statement);
      sql.exec(`INSERT INTO lanes (name, registered_at) VALUES ('alpha', 10), ('beta', 20)`);
      sql.exec(`INSERT INTO watched (name) VALUES ('alpha'), ('beta')`);
      sql.exec(`INSERT INTO lane_metrics (name, reported_at, earliest_run_at, jobs, totals, wait, run) VALUES ('kept', 1, NULL, 'j', 't', 'w', 'r')`);
      sql.exec(`INSERT INTO object_reports (name, lane, shard, shards, report) VALUES (?1, ?1, 0, 1, '')`, lane);
    });
    await evictDurableObject(stub);

    expect(await stub.list(null, 10)).toEqual({ lanes: ["alpha", "beta"], more: false });
    expect(await stub.watched(0, 10)).toEqual({ lanes: [{ lane: "alpha", seq: 1 }, { lane: "beta", seq: 2 }], more: false });
    // A seq is never given twice: the watch list's counter survived the upgrade.
    await stub.watch("gamma");
    expect((await stub.watched(2, 10)).lanes).toEqual([{ lane: "gamma", seq: 3 }]);
    await stub.report(lane, report(5));
    const scrape = await stub.metrics(1000);
    expect(scrape).toContain(`switchyard_jobs{lane="${lane}",state="queued"} 5`);
    const rows = await runInDurableObject(stub, (_registry, state) => ({
      kept: state.storage.sql.exec(`SELECT name, jobs FROM lane_metrics WHERE name = 'kept'`).toArray(),
      versions: state.storage.sql.exec<{ version: number }>(`SELECT version FROM schema_migrations ORDER BY version`).toArray().map((r) => r.version),
    }));
    expect(rows.kept).toEqual([{ name: "kept", jobs: "j" }]);
    expect(rows.versions).toEqual(REGISTRY_MIGRATIONS.map((m) => m.version));
    expect(await tables(stub)).toEqual(["lane_metrics", "lanes", "object_reports", "schema_migrations", "watched"]);
  });

  it("serve a registry written by a newer version as it is (a rolled-back deploy): its migrations only add", async () => {
    const stub = freshRegistry();
    await stub.register("before", 1);
    const newer = REGISTRY_MIGRATIONS.at(-1)!.version + 1;
    await runInDurableObject(stub, (_registry, state) => {
      state.storage.sql.exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, 'from a newer release', 2)`, newer);
    });
    await evictDurableObject(stub);
    await stub.register("after", 3);
    expect(await stub.list(null, 10)).toEqual({ lanes: ["after", "before"], more: false });
    const versions = await runInDurableObject(stub, (_registry, state) =>
      state.storage.sql.exec<{ version: number }>(`SELECT version FROM schema_migrations ORDER BY version`).toArray().map((r) => r.version),
    );
    expect(versions).toEqual([...REGISTRY_MIGRATIONS.map((m) => m.version), newer]);
  });
});
