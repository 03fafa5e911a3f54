/**
 * The registry: one Durable Object that remembers every lane that has ever had a job, for
 * `GET /v1/lanes`. A lane registers itself once, on its first job, so enqueue never calls it.
 * It also keeps the lanes the belt watches (belt.ts): those that said they have work for their alarm,
 * and each lane's latest metrics report, rendered (metrics/), for `GET /v1/metrics`: one call here
 * answers a scrape of every lane.
 */
import { DurableObject } from "cloudflare:workers";
import type { SwitchyardEnv } from "./env.js";
import { reachesLane } from "../shared/lane-patterns.js";
import { exposition, laneFragments, type LaneReport, type RenderedLane } from "./metrics/exposition.js";

export { REGISTRY_NAME } from "./env.js";

export class LaneRegistry extends DurableObject<SwitchyardEnv> {
  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS lanes (name TEXT PRIMARY KEY, registered_at INTEGER NOT NULL)`);
      // A lane's seq changes whenever it says it has work again, so the belt unwatches a lane only
      // if nothing came since it found the lane idle. AUTOINCREMENT: a seq is never given twice.
      ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS watched (seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE)`);
      // Each lane's latest metrics report, rendered once as it arrives (a fragment per family, the
      // oldest due age apart: it moves with the clock), so that a scrape only joins them.
      ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS lane_metrics (
        name TEXT PRIMARY KEY, reported_at INTEGER NOT NULL, earliest_run_at INTEGER,
        jobs TEXT NOT NULL, totals TEXT NOT NULL, wait TEXT NOT NULL, run TEXT NOT NULL
      ) WITHOUT ROWID`);
    });
  }

  /** Calls this instance has served, by method (the benchmark and tests count a scrape's and a lane's calls). */
  private readonly calls = { report: 0, metrics: 0, byLane: new Map<string, number>() };

  /** Idempotent. */
  async register(lane: string, nowMs: number): Promise<void> {
    this.ctx.storage.sql.exec(`INSERT INTO lanes (name, registered_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, lane, nowMs);
  }

  /** Lanes in name order, after `after` (exclusive). */
  async list(after: string | null, limit: number): Promise<{ lanes: string[]; more: boolean }> {
    const rows = this.ctx.storage.sql
      .exec<{ name: string }>(`SELECT name FROM lanes WHERE name > ? ORDER BY name LIMIT +?`, after ?? "", limit + 1)
      .toArray();
    return { lanes: rows.slice(0, limit).map((r) => r.name), more: rows.length > limit };
  }

  // ---- metrics ----

  /** A lane's latest metrics report (at most one a second from each lane: metrics/reporter.ts). */
  async report(lane: string, report: LaneReport): Promise<void> {
    this.calls.report++;
    this.calls.byLane.set(lane, (this.calls.byLane.get(lane) ?? 0) + 1);
    const f = laneFragments(lane, report);
    this.ctx.storage.sql.exec(
      `INSERT OR REPLACE INTO lane_metrics (name, reported_at, earliest_run_at, jobs, totals, wait, run) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      lane, Date.now(), report.earliestRunAt, f.jobs, f.totals, f.wait, f.run,
    );
  }

  /** Withdraws a lane's report, which a scrape then leaves out: the lane's reports are off now. */
  async forget(lane: string): Promise<void> {
    this.ctx.storage.sql.exec(`DELETE FROM lane_metrics WHERE name = ?`, lane);
  }

  /**
   * Every reported lane's metrics in the text exposition at `nowMs`, in lane order; `lanes`: only
   * those names and prefixes (ending in `*`) a scoped token reaches (null: all).
   */
  async metrics(nowMs: number, lanes: readonly string[] | null = null): Promise<string> {
    this.calls.metrics++;
    const rendered: RenderedLane[] = [];
    const rows = this.ctx.storage.sql.exec<{ name: string; earliest_run_at: number | null; jobs: string; totals: string; wait: string; run: string }>(
      `SELECT name, earliest_run_at, jobs, totals, wait, run FROM lane_metrics ORDER BY name`,
    );
    for (const r of rows) {
      if (!reachesLane(lanes, r.name)) continue;
      rendered.push({ lane: r.name, earliestRunAt: r.earliest_run_at, fragments: { jobs: r.jobs, totals: r.totals, wait: r.wait, run: r.run } });
    }
    return exposition(rendered, nowMs);
  }

  /** The calls this instance has served since it started: reports (all, and of `lane`), and scrapes. */
  async served(lane?: string): Promise<{ reports: number; laneReports: number; scrapes: number }> {
    return { reports: this.calls.report, laneReports: lane === undefined ? 0 : (this.calls.byLane.get(lane) ?? 0), scrapes: this.calls.metrics };
  }

  // ---- the belt ----

  /** A lane has work for its alarm: the belt watches it (again, under a new seq). */
  async watch(lane: string): Promise<void> {
    this.ctx.storage.sql.exec(`INSERT OR REPLACE INTO watched (name) VALUES (?)`, lane);
  }

  /** The watched lanes in seq order, after `afterSeq` (exclusive). */
  async watched(afterSeq: number, limit: number): Promise<{ lanes: { lane: string; seq: number }[]; more: boolean }> {
    const rows = this.ctx.storage.sql
      .exec<{ name: string; seq: number }>(`SELECT seq, name FROM watched WHERE seq > ? ORDER BY seq LIMIT +?`, afterSeq, limit + 1)
      .toArray();
    return { lanes: rows.slice(0, limit).map((r) => ({ lane: r.name, seq: r.seq })), more: rows.length > limit };
  }

  /** The belt found the lane idle: unwatch it, unless it said it has work since (its seq moved). */
  async unwatch(lane: string, seq: number): Promise<boolean> {
    return this.ctx.storage.sql.exec(`DELETE FROM watched WHERE name = ? AND seq = ? RETURNING seq`, lane, seq).toArray().length > 0;
  }
}
