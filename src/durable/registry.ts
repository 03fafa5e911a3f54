/**
 * The registry: one Durable Object that remembers every lane that has ever had a job, for
 * `GET /v1/lanes`. A lane registers itself once, on its first job, so enqueue never calls it.
 * It also keeps the lanes the belt watches (belt.ts): those that said they have work for their alarm.
 */
import { DurableObject } from "cloudflare:workers";
import type { SwitchyardEnv } from "./env.js";

export { REGISTRY_NAME } from "./env.js";

export class LaneRegistry extends DurableObject<SwitchyardEnv> {
  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS lanes (name TEXT PRIMARY KEY, registered_at INTEGER NOT NULL)`);
      // A lane's seq changes whenever it says it has work again, so the belt unwatches a lane only
      // if nothing came since it found the lane idle. AUTOINCREMENT: a seq is never given twice.
      ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS watched (seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE)`);
    });
  }

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
