/**
 * The registry: one Durable Object that remembers every lane that has ever had a job, for
 * `GET /v1/lanes`. A lane registers itself once, on its first job, so enqueue never calls it.
 * It also keeps the lanes the cron's check of lost alarms watches (wake/alarm-watch.ts): those that said they have work for their alarm,
 * and each lane's latest metrics report, rendered (metrics/), for `GET /v1/metrics`: one call here
 * answers a scrape of every lane. Every shard of a sharded lane reports (shard i of lane L is the
 * object `L#i`): the registry keeps each object's latest report and renders the lane once, its shards'
 * reports merged (docs/concepts.md "Sharded lanes").
 */
import { DurableObject } from "cloudflare:workers";
import type { SwitchyardEnv } from "./env.js";
import { reachesLane } from "../shared/lane-patterns.js";
import { MAX_SHARDS, parseShardObjectName } from "../shared/shards.js";
import { exposition, laneFragments, type LaneReport, type RenderedLane } from "./metrics/exposition.js";
import { mergeReports } from "../shared/metrics-report.js";
import { REGISTRY_MIGRATIONS } from "./registry-migrations.js";
import * as R from "./registry-statements.js";
import { runMigrations } from "./store/migrations.js";

export { REGISTRY_NAME } from "./env.js";

export class LaneRegistry extends DurableObject<SwitchyardEnv> {
  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    // A registry written by a newer release (a rolled-back deploy) is served as it is: its migrations
    // only ever add, and refusing would stop the lanes' alarm check and every scrape.
    void ctx.blockConcurrencyWhile(async () => void runMigrations(ctx.storage, REGISTRY_MIGRATIONS, Date.now()));
  }

  /** Calls this instance has served, by method (the benchmark and tests count a scrape's and a lane's calls). */
  private readonly calls = { report: 0, metrics: 0, byLane: new Map<string, number>() };

  /** Idempotent. */
  async register(lane: string, nowMs: number): Promise<void> {
    this.ctx.storage.sql.exec(R.REGISTER_LANE_SQL, lane, nowMs);
  }

  /**
   * Lanes in name order, after `after` (exclusive); `lanes`: only those names and prefixes (ending in
   * `*`) a scoped token reaches (null: all). A scoped page is read in scope, one range of the name
   * index per pattern (at most `limit` + 1 rows each), so that it is full while in-scope lanes remain
   * and its last lane, the caller's cursor, is one of them: nothing outside the scope is ever named,
   * and no page is spent walking lanes the token cannot see.
   */
  async list(after: string | null, limit: number, lanes: readonly string[] | null = null): Promise<{ lanes: string[]; more: boolean }> {
    const sql = this.ctx.storage.sql;
    const from = after ?? "";
    if (lanes === null) {
      const rows = sql.exec<{ name: string }>(R.LANES_AFTER_SQL, from, limit + 1).toArray();
      return { lanes: rows.slice(0, limit).map((r) => r.name), more: rows.length > limit };
    }
    const found = new Set<string>();
    for (const pattern of new Set(lanes)) {
      if (!pattern.endsWith("*")) {
        if (pattern > from) for (const r of sql.exec<{ name: string }>(R.LANE_NAMED_SQL, pattern)) found.add(r.name);
        continue;
      }
      // Names are ASCII below DEL: every name with this prefix sorts before the prefix + DEL.
      const prefix = pattern.slice(0, -1);
      const rows = sql.exec<{ name: string }>(R.LANES_IN_RANGE_SQL, from, prefix, `${prefix}\u007f`, limit + 1);
      for (const r of rows) found.add(r.name);
    }
    const sorted = [...found].sort();
    return { lanes: sorted.slice(0, limit), more: sorted.length > limit };
  }

  // ---- metrics ----

  /**
   * An object's latest metrics report (at most one a second from each: metrics/reporter.ts): `object`
   * is a lane's name (shard 0) or a shard's (`L#i`). Its lane's lines are rendered again now, from
   * the lane's counted shards' reports merged, so that a scrape only joins stored text.
   */
  async report(object: string, report: LaneReport): Promise<void> {
    this.calls.report++;
    this.calls.byLane.set(object, (this.calls.byLane.get(object) ?? 0) + 1);
    const { lane, index } = parseShardObjectName(object);
    const shards = Number.isInteger(report.shards) && report.shards! >= 1 && report.shards! <= MAX_SHARDS ? report.shards! : 1;
    // A lane of one shard (shard 0 says so): its lines are this report's alone (`countedShards`). Its
    // row keeps only its count (an empty report), written once per instance: a report of a lane
    // of one shard writes its lines and nothing more.
    if (index === 0 && shards === 1) {
      if (!this.oneShard.has(lane)) {
        this.ctx.storage.sql.exec(R.ONE_SHARD_REPORT_SQL, object, lane);
        this.oneShard.add(lane);
      }
      this.parsed.delete(object);
      this.render(lane, [report]);
      return;
    }
    this.oneShard.delete(lane);
    this.ctx.storage.sql.exec(R.OBJECT_REPORT_SQL, object, lane, index, shards, JSON.stringify(report));
    this.keepParsed(object, report);
    this.render(lane);
  }

  /** Withdraws an object's report, which a scrape then leaves out of its lane: its reports are off now. */
  async forget(object: string): Promise<void> {
    this.ctx.storage.sql.exec(R.FORGET_REPORT_SQL, object);
    this.parsed.delete(object);
    this.oneShard.delete(parseShardObjectName(object).lane);
    this.render(parseShardObjectName(object).lane);
  }

  /**
   * Sharded lanes' reports as last stored, parsed, by object name: a shard's report is merged with
   * its lane's others, which then need not be parsed again from their rows. Bounded: the least
   * recently stored go first; a fresh instance starts empty and parses as it needs.
   */
  private readonly parsed = new Map<string, LaneReport>();

  /** Lanes whose shard 0 last said one shard and whose row says so already (in this instance). */
  private readonly oneShard = new Set<string>();

  private keepParsed(object: string, report: LaneReport): void {
    this.parsed.delete(object);
    this.parsed.set(object, report);
    if (this.parsed.size > PARSED_REPORTS_KEPT) this.parsed.delete(this.parsed.keys().next().value!);
  }

  /**
   * Renders a lane's lines from its counted shards' reports (`countedShards`; `counted`: known
   * already), or drops them when none counts.
   */
  private render(lane: string, counted: LaneReport[] | null = null): void {
    const sql = this.ctx.storage.sql;
    if (counted === null) {
      const rows = countedShards(sql.exec<ObjectReportRow>(R.LANE_OBJECTS_SQL, lane).toArray());
      // A lane of one shard: its lines were rendered from shard 0's own report, which alone counts.
      if (rows.length === 1 && rows[0]!.shard === 0 && rows[0]!.shards === 1) return;
      counted = rows.map((row) => {
        const known = this.parsed.get(row.name);
        if (known) return known;
        const report = JSON.parse(sql.exec<{ report: string }>(R.REPORT_OF_SQL, row.name).one().report) as LaneReport;
        this.keepParsed(row.name, report);
        return report;
      });
    }
    if (counted.length === 0) {
      sql.exec(R.DROP_LANE_METRICS_SQL, lane);
      return;
    }
    const report = mergeReports(counted);
    const f = laneFragments(lane, report);
    sql.exec(R.RENDERED_LANE_SQL, lane, Date.now(), report.earliestRunAt, f.jobs, f.totals, f.wait, f.run);
  }

  /**
   * Every reported lane's metrics in the text exposition at `nowMs`, in lane order; `lanes`: only
   * those names and prefixes (ending in `*`) a scoped token reaches (null: all).
   */
  async metrics(nowMs: number, lanes: readonly string[] | null = null): Promise<string> {
    this.calls.metrics++;
    const rendered: RenderedLane[] = [];
    const rows = this.ctx.storage.sql.exec<LaneMetricsRow>(R.RENDERED_LANES_SQL);
    for (const r of rows) {
      if (!reachesLane(lanes, r.name)) continue;
      rendered.push({ lane: r.name, earliestRunAt: r.earliest_run_at, fragments: { jobs: r.jobs, totals: r.totals, wait: r.wait, run: r.run } });
    }
    return exposition(rendered, nowMs);
  }

  /** The calls this instance has served since it started: reports (all, and of the object `lane`: a lane's shard 0, or `L#i`), and scrapes. */
  async served(lane?: string): Promise<{ reports: number; laneReports: number; scrapes: number }> {
    return { reports: this.calls.report, laneReports: lane === undefined ? 0 : (this.calls.byLane.get(lane) ?? 0), scrapes: this.calls.metrics };
  }

  // ---- the belt ----

  /** A lane has work for its alarm: the belt watches it (again, under a new seq). */
  async watch(lane: string): Promise<void> {
    this.ctx.storage.sql.exec(R.WATCH_SQL, lane);
  }

  /** The watched lanes in seq order, after `afterSeq` (exclusive). */
  async watched(afterSeq: number, limit: number): Promise<{ lanes: { lane: string; seq: number }[]; more: boolean }> {
    const rows = this.ctx.storage.sql
      .exec<{ name: string; seq: number }>(R.WATCHED_AFTER_SQL, afterSeq, limit + 1)
      .toArray();
    return { lanes: rows.slice(0, limit).map((r) => ({ lane: r.name, seq: r.seq })), more: rows.length > limit };
  }

  /** The belt found the lane idle: unwatch it, unless it said it has work since (its seq moved). */
  async unwatch(lane: string, seq: number): Promise<boolean> {
    return this.ctx.storage.sql.exec(R.UNWATCH_SQL, lane, seq).toArray().length > 0;
  }
}

type ObjectReportRow = { name: string; shard: number; shards: number };
type LaneMetricsRow = { name: string; earliest_run_at: number | null; jobs: string; totals: string; wait: string; run: string };

/** The most parsed reports the registry keeps in memory (a few KB each). */
const PARSED_REPORTS_KEPT = 4096;

/**
 * The reports that count for their lane (docs/operations.md "Metrics"): an object's, while its index
 * is below the shard count it last reported itself and below the count shard 0 last reported (when
 * shard 0 has reported). A lane resharded to fewer shards (only while empty) tells every shard its new
 * count, shard 0 last, and each reports it: the old shards' lifetime stats stop counting as soon as
 * shard 0's report or their own says so.
 */
export function countedShards<Row extends { shard: number; shards: number }>(rows: readonly Row[]): Row[] {
  const lane = rows.find((row) => row.shard === 0)?.shards ?? Number.POSITIVE_INFINITY;
  return rows.filter((row) => row.shard < row.shards && row.shard < lane);
}
